// QuantizeLinear and DequantizeLinear: the affine maps between float tensors and 8-bit (or, to
// dequantize, 32-bit) integers that quantized exports put around every op. Scale and zero point
// are scalars (per tensor) or 1-D along `axis` (per channel); ONNX's block quantization is not
// lowered.
#include <fmt/format.h>

#include "graph/const_eval.h"
#include "lower/lower.h"

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

}  // namespace

void register_quantize_ops(std::map<std::string, LowerFn>& r) {
  r["QuantizeLinear"] = lower_quantize_linear;
  r["DequantizeLinear"] = lower_dequantize_linear;
}

}  // namespace ts
