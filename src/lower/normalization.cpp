// Normalizations (BatchNormalization, InstanceNormalization, LayerNormalization,
// MeanVarianceNormalization, LpNormalization, LRN) and the softmax family (Softmax, LogSoftmax,
// Hardmax), all on the shared reduction stage.
#include <fmt/format.h>

#include <limits>

#include "graph/const_eval.h"
#include "lower/math.h"
#include "lower/reduction.h"

namespace ts {

using Halide::Expr;

namespace {

Expr fconst(Halide::Type t, double v) { return typed_const(t, v); }

ReduceSpec spec_over(const LTensor& x, std::set<int> axes) {
  ReduceSpec s;
  s.in_shape = x.shape;
  s.axes = std::move(axes);
  s.keepdims = true;
  s.acc_type = x.dtype;
  return s;
}

// Mean and 1/sqrt(var + eps) of x over `axes` (keepdims), as two reduction stages + one stage.
// `variance` is a stage only the readers that want it bring into their pipeline.
struct Moments {
  LTensor mean, inv_std, variance;
};
Moments moments(const LowerContext& c, const LTensor& x, const std::set<int>& axes, double eps) {
  ReduceSpec s = spec_over(x, axes);
  const Halide::Type t = x.type();
  const Expr n = fconst(t, static_cast<double>(reduction_size(s)));
  // The sum is of x less the first element of its group (a shift, so a constant group sums to
  // exactly 0 and its mean is exact: a large constant's rounded mean, divided by sqrt(eps),
  // was off by 1e-2).
  auto first = [&](const Idx& i) { return read_reduced(x, i, axes); };
  LTensor sum = reduce_tensor(c.name("_sum"), s, fconst(t, 0), [](Expr a, Expr b) { return a + b; },
                              [&](const Idx& i) { return x.at(i) - first(i); });
  LTensor mean = define_tensor(c.name("_mean"), sum.shape, x.dtype, [&](const Idx& i) { return first(i) + sum.at(i) / n; });
  LTensor sq = reduce_tensor(c.name("_sqdev"), s, fconst(t, 0), [](Expr a, Expr b) { return a + b; },
                             [&](const Idx& i) {
                               Expr d = x.at(i) - read_reduced(mean, i, axes);
                               return d * d;
                             });
  LTensor inv_std = define_tensor(c.name("_invstd"), sq.shape, x.dtype, [&](const Idx& i) {
    return fconst(t, 1) / Halide::sqrt(sq.at(i) / n + fconst(t, eps));
  });
  LTensor variance = define_tensor(c.name("_var"), sq.shape, x.dtype, [&](const Idx& i) { return sq.at(i) / n; });
  return {mean, inv_std, variance};
}

std::vector<LTensor> batch_norm(const LowerContext& c) {
  if (c.node.attr_int("training_mode", 0) != 0) c.unsupported("training_mode=1");
  if (c.node.outputs.size() > 1 && !c.node.outputs[1].empty()) c.unsupported("training outputs (running mean/var)");
  if (c.opset() < 9 && c.node.attr_int("spatial", 1) == 0) c.unsupported("spatial=0");
  const LTensor &x = c.in(0), &scale = c.in(1), &bias = c.in(2), &mean = c.in(3), &var = c.in(4);
  const double eps = c.node.attr_float("epsilon", 1e-5);
  const Halide::Type t = x.type();
  // Per-channel affine coefficients, computed once: y = x * a[c] + b[c].
  // Strict IEEE math (once per channel): an epsilon of Inf must give a = 0, not the poison that
  // LLVM's no-Inf flag makes of sqrt(Inf).
  LTensor a = define_tensor(c.name("_a"), {x.shape[1]}, x.dtype, [&](const Idx& i) {
    return Halide::strict_float(scale.at(i) / Halide::sqrt(var.at(i) + fconst(t, eps)));
  });
  LTensor b = define_tensor(c.name("_b"), {x.shape[1]}, x.dtype, [&](const Idx& i) {
    return Halide::strict_float(bias.at(i) - mean.at(i) * a.at(i));
  });
  return {c.output([&](const Idx& i) { return x.at(i) * a.at({i[1]}) + b.at({i[1]}); })};
}

std::vector<LTensor> instance_norm(const LowerContext& c) {
  const LTensor &x = c.in(0), &scale = c.in(1), &bias = c.in(2);
  std::set<int> axes;
  for (int d = 2; d < x.rank(); d++) axes.insert(d);
  Moments m = moments(c, x, axes, c.node.attr_float("epsilon", 1e-5));
  return {c.output([&](const Idx& i) {
    return (x.at(i) - read_reduced(m.mean, i, axes)) * read_reduced(m.inv_std, i, axes) * scale.at({i[1]}) +
           bias.at({i[1]});
  })};
}

std::vector<LTensor> layer_norm(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", -1), x.rank(), c.node));
  std::set<int> axes;
  for (int d = axis; d < x.rank(); d++) axes.insert(d);
  Moments m = moments(c, x, axes, c.node.attr_float("epsilon", 1e-5));
  std::vector<LTensor> outs = {c.output([&](const Idx& i) {
    Expr y = (x.at(i) - read_reduced(m.mean, i, axes)) * read_reduced(m.inv_std, i, axes);
    if (c.has_input(1)) y = y * c.in(1).at_broadcast(i);
    if (c.has_input(2)) y = y + c.in(2).at_broadcast(i);
    return y;
  })};
  // Optional Mean and InvStdDev outputs (shape: x with normalized axes set to 1).
  if (c.node.outputs.size() > 1 && !c.node.outputs[1].empty())
    outs.push_back(c.output([&](const Idx& i) { return m.mean.at(i); }, 1));
  if (c.node.outputs.size() > 2 && !c.node.outputs[2].empty()) {
    if (outs.size() == 1) outs.push_back(m.mean);  // placeholder for the unrequested output 1
    outs.push_back(c.output([&](const Idx& i) { return m.inv_std.at(i); }, 2));
  }
  return outs;
}

// MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes` (default N, H, W), as
// ONNX's function body computes it.
std::vector<LTensor> mean_variance_norm(const LowerContext& c) {
  const LTensor& x = c.in(0);
  if (!x.type().is_float()) c.unsupported(fmt::format("input type {}", dtype_name(x.dtype)));
  std::set<int> axes;
  for (int64_t a : c.node.attr_ints("axes", {0, 2, 3})) axes.insert(static_cast<int>(normalize_axis(a, x.rank(), c.node)));
  if (axes.empty()) c.fail("no axes");
  Moments m = moments(c, x, axes, 0.0);
  const Halide::Type t = x.type();
  return {c.output([&](const Idx& i) {
    return (x.at(i) - read_reduced(m.mean, i, axes)) / (Halide::sqrt(read_reduced(m.variance, i, axes)) + fconst(t, 1e-9));
  })};
}

// LpNormalization: x / (sum of |x|^p over `axis`)^(1/p), p 1 or 2. A vector of zeros stays zeros,
// as in ONNX Runtime (the spec's formula would give 0 / 0).
std::vector<LTensor> lp_norm(const LowerContext& c) {
  const LTensor& x = c.in(0);
  if (!x.type().is_float()) c.unsupported(fmt::format("input type {} (float only)", dtype_name(x.dtype)));
  const int64_t p = c.node.attr_int("p", 2);
  if (p != 1 && p != 2) c.fail(fmt::format("p={} (1 or 2)", p));
  const std::set<int> axes = {static_cast<int>(normalize_axis(c.node.attr_int("axis", -1), x.rank(), c.node))};
  ReduceSpec s = spec_over(x, axes);
  const Halide::Type t = x.type();
  const auto sum = [](Expr a, Expr b) { return a + b; };
  const auto power = [&](const Idx& i) {
    Expr v = x.at(i);
    return p == 1 ? Halide::abs(v) : v * v;
  };
  // In two stages over the last axis; over another axis reduce_last_axis is reduce_tensor.
  LTensor total = reduce_last_axis(c.name("_sum"), s, fconst(t, 0), sum, power);
  LTensor inv = define_tensor(c.name("_inv"), total.shape, x.dtype, [&](const Idx& i) {
    Expr norm = p == 1 ? total.at(i) : Halide::sqrt(total.at(i));
    return Halide::select(norm == fconst(t, 0), fconst(t, 0), fconst(t, 1) / norm);
  });
  return {c.output([&](const Idx& i) { return x.at(i) * read_reduced(inv, i, axes); })};
}

// LRN: x / (bias + alpha / size * (sum of x^2 over the `size` channels around))^beta; the
// window is an extra reduction axis, its channels outside the tensor count 0.
std::vector<LTensor> local_response_norm(const LowerContext& c) {
  const LTensor& x = c.in(0);
  if (x.rank() < 3 || !x.type().is_float()) c.unsupported(fmt::format("a {}-D {} input ([N, C, ...] float expected)", x.rank(), dtype_name(x.dtype)));
  const int64_t size = c.node.attr_int("size", 0);
  if (size < 1) c.fail(fmt::format("size {}", size));
  const double alpha = c.node.attr_float("alpha", 1e-4), beta = c.node.attr_float("beta", 0.75), bias = c.node.attr_float("bias", 1.0);
  const Halide::Type t = x.type();
  const int r = x.rank(), channels = static_cast<int>(x.shape[1]), before = static_cast<int>((size - 1) / 2);
  ReduceSpec window = spec_over(x, {r});
  window.in_shape.push_back(size);
  window.keepdims = false;
  const LTensor squares = reduce_tensor(c.name("_sqsum"), window, fconst(t, 0), [](Expr a, Expr b) { return a + b; },
                                        [&](const Idx& p) {
                                          Idx i(p.begin(), p.end() - 1);
                                          const Expr ch = i[1] - before + p[r];
                                          i[1] = Halide::clamp(ch, 0, channels - 1);
                                          const Expr v = x.at(i);
                                          return Halide::select(ch >= 0 && ch < channels, v * v, fconst(t, 0));
                                        });
  return {c.output([&](const Idx& i) {
    const Expr base = fconst(t, bias) + fconst(t, alpha / static_cast<double>(size)) * squares.at(i);
    const Expr scale = t == Halide::Float(32) ? ts_exp(fconst(t, -beta) * ts_log(base)) : Halide::pow(base, fconst(t, -beta));
    return x.at(i) * scale;
  })};
}

// Axes a softmax-like op normalizes over: before opset 13 the input is viewed as 2-D at `axis`
// (all trailing axes together); from 13 on only `axis` itself.
std::set<int> softmax_axes(const LowerContext& c, const LTensor& x) {
  const bool v13 = c.opset() >= 13;
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", v13 ? -1 : 1), x.rank(), c.node));
  std::set<int> axes = {axis};
  if (!v13)
    for (int d = axis + 1; d < x.rank(); d++) axes.insert(d);
  return axes;
}

LowerFn softmax(bool log) {
  return [log](const LowerContext& c) {
    const LTensor& x = c.in(0);
    if (!dtype_is_float(x.dtype)) c.unsupported("non-float input");
    std::set<int> axes = softmax_axes(c, x);
    ReduceSpec s = spec_over(x, axes);
    const Halide::Type t = x.type();
    // Subtracting the max keeps exp() in range.
    LTensor mx = reduce_last_axis(c.name("_max"), s, fconst(t, -std::numeric_limits<double>::infinity()),
                               [](Expr a, Expr b) { return Halide::max(a, b); },
                               [&](const Idx& i) { return x.at(i); });
    // Strict: Halide compiles float ops with LLVM's no-NaN flag, under which a NaN input's
    // is_nan test inside ts_exp could be folded away; ONNX Runtime makes a row with a NaN all NaN.
    auto shifted_at = [&](const Idx& i) { return Halide::strict_float(x.at(i) - read_reduced(mx, i, axes)); };
    LTensor sum = reduce_last_axis(c.name("_expsum"), s, fconst(t, 0), [](Expr a, Expr b) { return a + b; },
                                [&](const Idx& i) { return ts_exp_nonpositive(shifted_at(i)); });
    if (log)
      return std::vector<LTensor>{c.output([&](const Idx& i) { return shifted_at(i) - ts_log(read_reduced(sum, i, axes)); })};
    // One division per row, a multiplication per element. exp is computed again here: storing
    // it for the sum to read ran slower (ViT's [12, 197, 197]).
    const LTensor inv = define_tensor(c.name("_inv"), sum.shape, x.dtype, [&](const Idx& i) { return fconst(t, 1) / sum.at(i); });
    // A probability below float's smallest normal is returned as 0: a masked score (Swin's
    // shifted windows add -100) otherwise came out subnormal, and the attention MatMul that read
    // it ran 16x slower on the CPU's subnormal assists (4.7 ms against 0.29 for the same shape).
    return std::vector<LTensor>{c.output([&](const Idx& i) {
      Expr p = ts_exp_nonpositive(shifted_at(i)) * read_reduced(inv, i, axes);
      if (t != Halide::Float(32)) return p;
      // Strict: under the no-NaN flag the test could turn true for a NaN row.
      return Halide::strict_float(Halide::select(p < std::numeric_limits<float>::min(), fconst(t, 0), p));
    })};
  };
}

std::vector<LTensor> hardmax(const LowerContext& c) {
  const LTensor& x = c.in(0);
  std::set<int> axes = softmax_axes(c, x);
  ReduceSpec s = spec_over(x, axes);
  // Row-major position inside the normalized axes: the first maximum wins.
  auto flat = [&](const Idx& i) {
    Expr f = 0;
    for (int a : axes) f = f * static_cast<int>(x.shape[a]) + i[a];
    return f;
  };
  const int n = static_cast<int>(reduction_size(s));
  LTensor mx = reduce_tensor(c.name("_max"), s, x.type().min(), [](Expr a, Expr b) { return Halide::max(a, b); },
                             [&](const Idx& i) { return x.at(i); });
  ReduceSpec si = s;
  si.acc_type = DType::Int32;
  LTensor first = reduce_tensor(c.name("_first"), si, Expr(n), [](Expr a, Expr b) { return Halide::min(a, b); },
                                [&](const Idx& i) { return Halide::select(x.at(i) == read_reduced(mx, i, axes), flat(i), n); });
  return {c.output([&](const Idx& i) { return Halide::select(flat(i) == read_reduced(first, i, axes), 1, 0); })};
}

}  // namespace

void register_normalization_ops(std::map<std::string, LowerFn>& r) {
  r["BatchNormalization"] = batch_norm;
  r["InstanceNormalization"] = instance_norm;
  r["LayerNormalization"] = layer_norm;
  r["MeanVarianceNormalization"] = mean_variance_norm;
  r["LpNormalization"] = lp_norm;
  r["LRN"] = local_response_norm;
  r["Softmax"] = softmax(false);
  r["LogSoftmax"] = softmax(true);
  r["Hardmax"] = hardmax;
}

}  // namespace ts
