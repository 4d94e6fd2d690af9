// Elementwise ops: unary activations, math and trigonometry, numpy-broadcasting binary and
// variadic ops, comparisons and logic, Where, Cast/CastLike.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "graph/passes.h"
#include "graph/workload.h"
#include "lower/lower.h"
#include "lower/math.h"

namespace ts {

using Halide::Expr;
using Idx = std::vector<Expr>;

namespace {

using UnaryBody = std::function<Expr(Expr, const LowerContext&)>;

LowerFn unary(UnaryBody f) {
  return [f](const LowerContext& c) {
    const LTensor& x = c.in(0);
    return std::vector<LTensor>{c.output([&](const Idx& i) { return f(x.at(i), c); })};
  };
}

// Float-only activation: rejects integer inputs by name.
LowerFn unary_float(UnaryBody f) {
  return [f](const LowerContext& c) {
    if (!dtype_is_float(c.in(0).dtype)) c.unsupported(fmt::format("input type {} (float only)", dtype_name(c.in(0).dtype)));
    return unary(f)(c);
  };
}

Expr fconst(const Expr& like, double v) { return typed_const(like.type(), v); }

// Opset < 7 binary ops with broadcast=1 and `axis`: b's dims line up with a's starting at axis.
Expr legacy_broadcast(const LTensor& b, const Idx& out, int64_t axis) {
  Idx i;
  for (int d = 0; d < b.rank(); d++) i.push_back(b.shape[d] == 1 ? Expr(0) : out[axis + d]);
  return b.at(i);
}

// The IEEE result of op with float x on both sides (graph/workload.h folds_on_itself): Halide's
// simplifier folds x - x to 0, x / x to 1 and x == x, x <= x, x >= x to true, which Inf and NaN
// do not give (Inf - Inf is NaN).
Expr same_operand_result(const std::string& op, Expr x) {
  const Expr nan = fconst(x, std::numeric_limits<double>::quiet_NaN()), zero = fconst(x, 0), one = fconst(x, 1);
  if (op == "Sub") return Halide::select(Halide::is_finite(x), zero, nan);
  if (op == "Div") return Halide::select(Halide::is_finite(x) && x != zero, one, nan);
  return !ts_is_nan(x);  // Equal, LessOrEqual, GreaterOrEqual
}

LowerFn binary(std::function<Expr(Expr, Expr, const LowerContext&)> f) {
  return [f](const LowerContext& c) {
    const LTensor &a = c.in(0), &b = c.in(1);
    const bool legacy = c.opset() < 7 && c.node.attr_int("broadcast", 0) != 0 && c.node.has("axis");
    const int64_t axis = legacy ? c.node.attr_int("axis", 0) + (c.node.attr_int("axis", 0) < 0 ? a.rank() : 0) : 0;
    const bool same = folds_on_itself(c.node) && a.type().is_float();
    return std::vector<LTensor>{c.output([&](const Idx& i) {
      const Expr x = a.at_broadcast(i);
      if (same) return same_operand_result(c.node.op, x);
      return f(x, legacy ? legacy_broadcast(b, i, axis) : b.at_broadcast(i), c);
    })};
  };
}

// Variadic Min/Max/Sum/Mean with broadcasting across all inputs.
LowerFn variadic(std::function<Expr(Expr, Expr)> combine, bool mean) {
  return [combine, mean](const LowerContext& c) {
    return std::vector<LTensor>{c.output([&](const Idx& i) {
      Expr acc = c.in(0).at_broadcast(i);
      for (size_t k = 1; k < c.inputs.size(); k++) acc = combine(acc, c.in(k).at_broadcast(i));
      return mean ? acc / fconst(acc, static_cast<double>(c.inputs.size())) : acc;
    })};
  };
}

// Division with ONNX semantics: integers truncate toward zero (Halide's `/` is Euclidean).
Expr onnx_div(Expr a, Expr b) {
  if (a.type().is_float() || a.type().is_uint()) return a / b;
  Expr q = a / b, r = a % b;
  Expr adjust = Halide::select(a < 0 && r != 0, Halide::select(b > 0, 1, -1), 0);
  return q + Halide::cast(q.type(), adjust);
}

Expr onnx_pow(Expr a, Expr b, const LowerContext& c) {
  // A constant scalar exponent becomes multiplies/sqrt (the common x^2, x^0.5 of LayerNorm-like
  // decompositions), so they vectorize and count as what they are.
  if (const Tensor* e = c.constant(1); e && e->size() == 1 && a.type().is_float()) {
    double v = e->get_f64(0);
    if (v == 1.0) return a;
    if (v == 2.0) return a * a;
    if (v == 3.0) return a * a * a;
    if (v == 0.5) return Halide::sqrt(a);
    if (v == -1.0) return fconst(a, 1) / a;
  }
  Halide::Type ft = a.type().is_float() ? a.type() : Halide::Float(64);
  return Halide::cast(a.type(), Halide::pow(Halide::cast(ft, a), Halide::cast(ft, b)));
}

// Mod: fmod=0 takes the divisor's sign (Python), fmod=1 the dividend's (C fmod). Halide's integer
// % is Euclidean (never negative), so a nonzero remainder of the wrong sign moves by one |b|; its
// float % is a - b*floor(a/b), which already has the divisor's sign.
Expr onnx_mod(Expr a, Expr b, bool c_fmod) {
  if (a.type().is_uint()) return a % b;
  if (a.type().is_float()) {
    // float32 is computed in double so that floor(a/b) rounds the right way near multiples.
    const Halide::Type t = a.type();
    Expr x = Halide::cast(Halide::Float(64), a), y = Halide::cast(Halide::Float(64), b);
    if (!c_fmod) return Halide::cast(t, x % y);
    Expr m = Halide::abs(x) % Halide::abs(y);
    return Halide::cast(t, Halide::select(x < 0, -m, m));
  }
  Expr r = a % b, zero = Halide::cast(a.type(), 0);
  if (c_fmod) return Halide::select(a < zero && r != zero, r - Halide::cast(a.type(), Halide::abs(b)), r);
  return Halide::select(b < zero && r != zero, r + b, r);
}

// BitShift on unsigned ints; a shift by the full width or more gives 0 (numpy), not Halide's
// unspecified result.
Expr onnx_bitshift(Expr a, Expr b, const LowerContext& c) {
  const std::string dir = c.node.attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") c.fail(fmt::format("direction '{}' (LEFT or RIGHT)", dir));
  if (!a.type().is_uint()) c.fail("BitShift needs unsigned integers");
  Expr shifted = dir == "LEFT" ? a << b : a >> b;
  return Halide::select(b >= Halide::cast(b.type(), a.type().bits()), Halide::cast(a.type(), 0), shifted);
}

// Shrink: values within [-lambd, lambd] become 0, the others move towards 0 by `bias`.
// Integer inputs compare and shift in double, as the float attributes ask; the result is cast back.
Expr shrink(Expr x, const LowerContext& c) {
  const Halide::Type t = x.type().is_float() ? x.type() : Halide::Float(64);
  Expr v = Halide::cast(t, x);
  Expr lambd = typed_const(t, c.node.attr_float("lambd", 0.5)), bias = typed_const(t, c.node.attr_float("bias", 0.0));
  return Halide::select(v < -lambd, v + bias, v > lambd, v - bias, typed_const(t, 0.0));
}

// IsInf with its detect_positive / detect_negative switches.
Expr onnx_is_inf(Expr x, const LowerContext& c) {
  const bool pos = c.node.attr_int("detect_positive", 1) != 0, neg = c.node.attr_int("detect_negative", 1) != 0;
  if (pos && neg) return Halide::is_inf(x);
  if (!pos && !neg) return Halide::Internal::const_false();
  return Halide::is_inf(x) && (pos ? x > fconst(x, 0) : x < fconst(x, 0));
}

// Cast and CastLike: the target type is the output's (shape inference read 'to' or input 1).
std::vector<LTensor> lower_cast(const LowerContext& c) {
  const LTensor& x = c.in(0);
  DType to = c.out_info().dtype;
  return std::vector<LTensor>{c.output([&](const Idx& i) {
    Expr v = x.at(i);
    // float -> bool is "!= 0"; Halide's cast would truncate first.
    if (to == DType::Bool) return Expr(v != Halide::cast(v.type(), 0));
    return Halide::cast(halide_type(to), v);
  })};
}

// Dropout in inference mode (or of ratio 0): the identity, and an all-true mask when asked for.
std::vector<LTensor> lower_dropout(const LowerContext& c) {
  if (!dropout_is_identity(c.graph, c.node)) c.unsupported("training mode with a ratio other than 0");
  const LTensor& x = c.in(0);
  std::vector<LTensor> outs{c.output([&](const Idx& i) { return x.at(i); })};
  if (c.node.outputs.size() > 1 && !c.node.outputs[1].empty())
    outs.push_back(c.output([](const Idx&) { return Halide::Internal::const_true(); }, 1));
  return outs;
}

Expr clip_bound(const LowerContext& c, size_t input, const char* attr, Expr x, bool upper) {
  if (c.opset() < 11) {
    double d = upper ? 3.4028234663852886e38 : -3.4028234663852886e38;
    return fconst(x, c.node.attr_float(attr, d));
  }
  if (c.has_input(input)) {
    // A scalar in ONNX; ONNX Runtime also takes a tensor of one element (shape [1], [1,1], ...).
    const LTensor& b = c.in(input);
    if (num_elements(b.shape) != 1)
      c.fail(fmt::format("'{}' (input {}) has {} elements; it must be a scalar", attr, input, num_elements(b.shape)));
    return b.at(std::vector<Expr>(b.shape.size(), Expr(0)));
  }
  return upper ? x.type().max() : x.type().min();
}

// Activations, math functions, casts and Clip: one input.
void register_unary_ops(std::map<std::string, LowerFn>& r) {
  // NaN passes through as ONNX Runtime lets it: max(NaN, 0) is 0, and Halide's simplifier turns
  // select(x < 0, 0, x) into that max, so NaN is tested for explicitly.
  r["Relu"] = unary([](Expr x, auto&) {
    const Expr zero = Halide::cast(x.type(), 0);
    return x.type().is_float() ? Halide::select(ts_is_nan(x), x, Halide::max(x, zero)) : Halide::max(x, zero);
  });
  r["LeakyRelu"] = unary_float([](Expr x, auto& c) { return Halide::select(x < 0, x * fconst(x, c.node.attr_float("alpha", 0.01)), x); });
  r["Elu"] = unary_float([](Expr x, auto& c) {
    return Halide::select(x < 0, fconst(x, c.node.attr_float("alpha", 1.0)) * (ts_exp(x) - fconst(x, 1)), x);
  });
  r["Celu"] = unary_float([](Expr x, auto& c) {
    Expr a = fconst(x, c.node.attr_float("alpha", 1.0));
    const Expr y = Halide::max(x, fconst(x, 0)) + Halide::min(fconst(x, 0), a * (ts_exp(x / a) - fconst(x, 1)));
    return Halide::select(ts_is_nan(x), x, y);  // max and min drop NaN
  });
  r["Selu"] = unary_float([](Expr x, auto& c) {
    Expr a = fconst(x, c.node.attr_float("alpha", 1.67326319217681884765625));
    Expr g = fconst(x, c.node.attr_float("gamma", 1.05070102214813232421875));
    return g * Halide::select(x <= 0, a * (ts_exp(x) - fconst(x, 1)), x);
  });
  r["Sigmoid"] = unary_float([](Expr x, auto&) { return ts_sigmoid(x); });
  r["HardSigmoid"] = unary_float([](Expr x, auto& c) {
    Expr y = fconst(x, c.node.attr_float("alpha", 0.2)) * x + fconst(x, c.node.attr_float("beta", 0.5));
    return Halide::clamp(y, fconst(x, 0), fconst(x, 1));
  });
  r["HardSwish"] = unary_float([](Expr x, auto&) {
    return x * Halide::clamp(x * fconst(x, 1.0 / 6) + fconst(x, 0.5), fconst(x, 0), fconst(x, 1));
  });
  r["Tanh"] = unary_float([](Expr x, auto&) { return ts_tanh(x); });
  r["Softplus"] = unary_float([](Expr x, auto&) {
    return Halide::select(x > 20, x, ts_log(fconst(x, 1) + ts_exp(x)));
  });
  r["Softsign"] = unary_float([](Expr x, auto&) { return x / (fconst(x, 1) + Halide::abs(x)); });
  r["ThresholdedRelu"] = unary_float([](Expr x, auto& c) {
    return Halide::select(x > fconst(x, c.node.attr_float("alpha", 1.0)), x, fconst(x, 0));
  });
  r["Erf"] = unary_float([](Expr x, auto&) { return ts_erf(x); });
  // ONNX opset 20; graph/passes.h fuses the spelled-out form of earlier exports into it.
  r["Gelu"] = unary_float([](Expr x, auto& c) {
    const std::string approximate = c.node.attr_string("approximate", "none");
    if (approximate == "tanh") {
      const Expr inner = fconst(x, std::sqrt(2.0 / M_PI)) * (x + fconst(x, 0.044715) * x * x * x);
      return fconst(x, 0.5) * x * (fconst(x, 1) + ts_tanh(inner));
    }
    if (approximate != "none") c.unsupported("approximate=" + approximate);
    return fconst(x, 0.5) * x * (fconst(x, 1) + ts_erf(x * fconst(x, M_SQRT1_2)));
  });
  r["Exp"] = unary_float([](Expr x, auto&) { return ts_exp(x); });
  r["Log"] = unary_float([](Expr x, auto&) { return ts_log(x); });
  r["Sqrt"] = unary_float([](Expr x, auto&) { return Halide::sqrt(x); });
  r["Reciprocal"] = unary_float([](Expr x, auto&) { return fconst(x, 1) / x; });
  r["Floor"] = unary_float([](Expr x, auto&) { return Halide::floor(x); });
  r["Ceil"] = unary_float([](Expr x, auto&) { return Halide::ceil(x); });
  r["Round"] = unary_float([](Expr x, auto&) { return Halide::round(x); });  // half to even, as ONNX
  // Trigonometric and hyperbolic functions: Halide's (libm) versions.
  using HalideMath = Expr (*)(Expr);
  const std::pair<const char*, HalideMath> trig[] = {
      {"Sin", Halide::sin},   {"Cos", Halide::cos},     {"Tan", Halide::tan},     {"Asin", Halide::asin},
      {"Acos", Halide::acos}, {"Atan", Halide::atan},   {"Sinh", Halide::sinh},   {"Cosh", Halide::cosh},
      {"Asinh", Halide::asinh}, {"Acosh", Halide::acosh}, {"Atanh", Halide::atanh}};
  for (const auto& [op, fn] : trig) r[op] = unary_float([fn = fn](Expr x, auto&) { return fn(x); });
  r["IsNaN"] = unary_float([](Expr x, auto&) { return ts_is_nan(x); });
  r["IsInf"] = unary_float(onnx_is_inf);
  r["Shrink"] = unary(shrink);
  r["Abs"] = unary([](Expr x, auto&) { return x.type().is_uint() ? x : Halide::cast(x.type(), Halide::abs(x)); });
  r["Neg"] = unary([](Expr x, auto&) { return -x; });
  r["Sign"] = unary([](Expr x, auto&) {
    Expr z = Halide::cast(x.type(), 0);
    return Halide::select(x > z, Halide::cast(x.type(), 1), x < z, Halide::cast(x.type(), -1), z);
  });
  r["Not"] = unary([](Expr x, auto&) { return !x; });
  r["Identity"] = unary([](Expr x, auto&) { return x; });
  r["Dropout"] = lower_dropout;
  r["Cast"] = lower_cast;
  r["CastLike"] = lower_cast;
  r["Clip"] = [](const LowerContext& c) {
    const LTensor& x = c.in(0);
    return std::vector<LTensor>{c.output([&](const Idx& i) {
      Expr v = x.at(i), lo = clip_bound(c, 1, "min", v, false), hi = clip_bound(c, 2, "max", v, true);
      if (!v.type().is_float()) return Halide::min(Halide::max(v, lo), hi);
      // min(max(v, lo), hi) as ONNX and ONNX Runtime define it (lo > hi gives hi); NaN passes
      // through, tested explicitly (under LLVM's no-NaN flags comparisons may become min/max).
      return Halide::select(ts_is_nan(v), v, Halide::min(Halide::max(v, lo), hi));
    })};
  };
}

// Arithmetic, comparisons and logic of two (broadcast) inputs; Min, Max, Sum and Mean of any
// number; Where.
void register_binary_ops(std::map<std::string, LowerFn>& r) {
  r["Add"] = binary([](Expr a, Expr b, auto&) { return a + b; });
  r["Sub"] = binary([](Expr a, Expr b, auto&) { return a - b; });
  r["Mul"] = binary([](Expr a, Expr b, auto&) { return a * b; });
  r["Div"] = binary([](Expr a, Expr b, auto&) { return onnx_div(a, b); });
  r["Pow"] = binary([](Expr a, Expr b, auto& c) { return onnx_pow(a, b, c); });
  r["Mod"] = binary([](Expr a, Expr b, auto& c) { return onnx_mod(a, b, c.node.attr_int("fmod", 0) != 0); });
  r["BitShift"] = binary(onnx_bitshift);
  r["PRelu"] = [](const LowerContext& c) {
    const LTensor &x = c.in(0), &slope = c.in(1);
    // Before opset 7 a 1-D slope of size C is per channel (axis 1), not numpy-broadcast.
    const bool per_channel = c.opset() < 7 && slope.rank() == 1 && x.rank() > 1 && slope.shape[0] == x.shape[1] &&
                             slope.shape[0] != 1;
    return std::vector<LTensor>{c.output([&](const Idx& i) {
      Expr v = x.at(i), s = per_channel ? slope.at({i[1]}) : slope.at_broadcast(i);
      return Halide::select(v < 0, v * s, v);
    })};
  };
  r["Equal"] = binary([](Expr a, Expr b, auto&) { return a == b; });
  r["Less"] = binary([](Expr a, Expr b, auto&) { return a < b; });
  r["LessOrEqual"] = binary([](Expr a, Expr b, auto&) { return a <= b; });
  r["Greater"] = binary([](Expr a, Expr b, auto&) { return a > b; });
  r["GreaterOrEqual"] = binary([](Expr a, Expr b, auto&) { return a >= b; });
  r["And"] = binary([](Expr a, Expr b, auto&) { return a && b; });
  r["Or"] = binary([](Expr a, Expr b, auto&) { return a || b; });
  r["Xor"] = binary([](Expr a, Expr b, auto&) { return a != b; });

  // NaN wins, as in ONNX Runtime (and numpy): the vector min / max instructions return one
  // operand or the other, depending on the order the compiler gives them.
  r["Min"] = variadic(nan_min, false);
  r["Max"] = variadic(nan_max, false);
  r["Sum"] = variadic([](Expr a, Expr b) { return a + b; }, false);
  r["Mean"] = variadic([](Expr a, Expr b) { return a + b; }, true);

  r["Where"] = [](const LowerContext& c) {
    const LTensor &cond = c.in(0), &x = c.in(1), &y = c.in(2);
    return std::vector<LTensor>{c.output([&](const Idx& i) {
      return Halide::select(cond.at_broadcast(i), x.at_broadcast(i), y.at_broadcast(i));
    })};
  };
}

}  // namespace

void register_elementwise_ops(std::map<std::string, LowerFn>& r) {
  register_unary_ops(r);
  register_binary_ops(r);
}

}  // namespace ts
