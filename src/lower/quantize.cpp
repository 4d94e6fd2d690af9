// QuantizeLinear and DequantizeLinear: the affine maps between float tensors and 8-bit (or, to
// dequantize, 32-bit) integers that quantized exports put around every op. Scale and zero point
// are scalars (per tensor) or 1-D along `axis` (per channel); ONNX's block quantization is not
// lowered. DynamicQuantizeLinear computes its uint8 scale and zero point from the tensor's range.
#include <fmt/format.h>

#include <limits>

#include "graph/const_eval.h"
#include "lower/lower.h"
#include "lower/reduction.h"

namespace ts {

using Halide::Expr;
using Idx = std::vector<Expr>;

namespace {

// Reads a scale or zero point for the element at `i`: one value, or the one of i's `axis`.
Expr per_axis(const LowerContext& c, const LTensor& p, const Idx& i, int64_t axis, const char* what) {
  const int64_t n = num_elements(p.shape);
  if (n == 1) return p.at(Idx(p.rank(), Expr(0)));
  // The axis matters only to per-channel parameters (a scalar scale may come with any axis).
  axis = normalize_axis(axis, static_cast<int64_t>(i.size()), c.node);
  if (p.rank() != 1 || n != c.in(0).shape[axis])
    c.unsupported(fmt::format("{} of shape {} (a scalar or one value per element of axis {} expected; block "
                              "quantization is not supported)", what, shape_str(p.shape), axis));
  return p.at({i[axis]});
}

int64_t quantization_axis(const LowerContext& c) {
  if (c.node.has("block_size") && c.node.attr_int("block_size", 0) != 0) c.unsupported("block quantization (block_size)");
  return c.node.attr_int("axis", 1);
}

// y = saturate(round_half_even(x / scale) + zero_point), in the zero point's type (uint8 absent).
std::vector<LTensor> lower_quantize_linear(const LowerContext& c) {
  const LTensor &x = c.in(0), &scale = c.in(1);
  const DType out = c.out_info().dtype;
  if (out != DType::UInt8 && out != DType::Int8 && out != DType::UInt16 && out != DType::Int16)
    c.unsupported(fmt::format("output type {} (8- and 16-bit integers only)", dtype_name(out)));
  if (c.node.attr_int("saturate", 1) == 0) c.unsupported("saturate = 0");
  const int64_t axis = quantization_axis(c);
  const Halide::Type t = halide_type(out);
  return {c.output([&](const Idx& i) {
    const Expr s = Halide::cast<float>(per_axis(c, scale, i, axis, "y_scale"));
    Expr q = Halide::round(Halide::cast<float>(x.at(i)) / s);
    if (c.has_input(2)) q = q + Halide::cast<float>(per_axis(c, c.in(2), i, axis, "y_zero_point"));
    return Halide::cast(t, Halide::clamp(q, Halide::cast<float>(t.min()), Halide::cast<float>(t.max())));
  })};
}

// y = (x - zero_point) * scale, in the scale's type.
std::vector<LTensor> lower_dequantize_linear(const LowerContext& c) {
  const LTensor &x = c.in(0), &scale = c.in(1);
  if (dtype_is_float(x.dtype)) c.unsupported(fmt::format("input type {} (integers only)", dtype_name(x.dtype)));
  const int64_t axis = quantization_axis(c);
  return {c.output([&](const Idx& i) {
    Expr v = Halide::cast<int>(x.at(i));
    if (c.has_input(2)) v = v - Halide::cast<int>(per_axis(c, c.in(2), i, axis, "x_zero_point"));
    return Halide::cast<float>(v) * Halide::cast<float>(per_axis(c, scale, i, axis, "x_scale"));
  })};
}

// DynamicQuantizeLinear: the range [min(0, min x), max(0, max x)] mapped onto uint8; outputs y,
// y_scale = range / 255 and y_zero_point = saturate(round(-min / y_scale)). An all-zero input has
// scale 0, where the formulas divide by zero: it quantizes to y = 0 with zero point 0.
std::vector<LTensor> lower_dynamic_quantize_linear(const LowerContext& c) {
  const LTensor& x = c.in(0);
  if (x.dtype != DType::Float32) c.unsupported(fmt::format("input type {} (float32 only)", dtype_name(x.dtype)));
  ReduceSpec all;
  all.in_shape = x.shape;
  for (int d = 0; d < x.rank(); d++) all.axes.insert(d);
  all.keepdims = false;
  auto whole = [&](const char* suffix, Expr init, std::function<Expr(Expr, Expr)> pick) {
    if (x.rank() == 0) return x;
    return reduce_tensor(c.name(suffix), all, init, pick, [&](const Idx& i) { return x.at(i); });
  };
  const float inf = std::numeric_limits<float>::infinity();
  const LTensor lo = whole("_min", Expr(inf), [](Expr a, Expr b) { return Halide::min(a, b); });
  const LTensor hi = whole("_max", Expr(-inf), [](Expr a, Expr b) { return Halide::max(a, b); });
  const Expr low = Halide::min(0.0f, lo.at({})), high = Halide::max(0.0f, hi.at({}));
  const Expr scale = (high - low) / 255.0f;
  const Expr zero_point = Halide::select(scale > 0.0f, Halide::clamp(Halide::round(-low / scale), 0.0f, 255.0f), 0.0f);
  return {c.output([&](const Idx& i) {
            const Expr q = Halide::clamp(Halide::round(x.at(i) / scale) + zero_point, 0.0f, 255.0f);
            return Halide::cast<uint8_t>(Halide::select(scale > 0.0f, q, 0.0f));
          }, 0),
          c.output([&](const Idx&) { return scale; }, 1),
          c.output([&](const Idx&) { return Halide::cast<uint8_t>(zero_point); }, 2)};
}

}  // namespace

void register_quantize_ops(std::map<std::string, LowerFn>& r) {
  r["QuantizeLinear"] = lower_quantize_linear;
  r["DequantizeLinear"] = lower_dequantize_linear;
  r["DynamicQuantizeLinear"] = lower_dynamic_quantize_linear;
}

}  // namespace ts
