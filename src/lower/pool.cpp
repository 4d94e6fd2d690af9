// Pooling: MaxPool, AveragePool, LpPool and their Global forms, over any number of spatial dims,
// with strides, explicit or automatic padding, ceil_mode and (MaxPool) dilations.
// Every pool lowers to the same stages, which the schedule search relies on:
//   <node>_pad  the input padded with the pool's neutral value (lowest for max, 0 otherwise),
//               only when some window reads outside the input; reads of X are clamped there;
//   <node>_acc  pure init plus one update over RDom(kernel dims, innermost = last spatial dim),
//               reading _pad unchecked;
//   <node>      the output: the max as is, the sum divided by the window count, or the p-th root.
// A global pool is the same with one window covering the whole spatial extent.
#include <fmt/format.h>

#include <algorithm>

#include "lower/math.h"
#include "lower/window.h"

namespace ts {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::Var;
using Idx = std::vector<Expr>;

namespace {

enum class PoolKind { Max, Average, Lp };

// Window geometry and output spatial dims from the attributes of a (non-global) pool.
Geometry pool_geometry(const LowerContext& c, PoolKind kind, const Shape& x, Shape& out) {
  const size_t s = x.size() - 2;
  if (!c.node.has("kernel_shape")) c.fail("kernel_shape is required");
  Geometry g{attr_dims(c, "kernel_shape", s, 1, 1), attr_dims(c, "strides", s, 1, 1),
             attr_dims(c, "dilations", s, 1, 1), {}, {}};
  // AveragePool and LpPool only gain dilations in opset 19.
  if (kind != PoolKind::Max && g.dilation != std::vector<int64_t>(s, 1)) c.unsupported("dilations on " + c.node.op);
  const bool ceil_mode = c.node.attr_int("ceil_mode", 0) != 0;
  const std::string auto_pad = c.node.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < s; i++) {
    const int64_t in = x[2 + i];
    if (auto_pad == "NOTSET" || auto_pad == "VALID") {
      auto pads = auto_pad == "VALID" ? std::vector<int64_t>(2 * s, 0) : attr_dims(c, "pads", 2 * s, 0, 0);
      g.pad_begin.push_back(pads[i]);
      g.pad_end.push_back(pads[s + i]);
      const int64_t room = in + pads[i] + pads[s + i] - g.span(i);
      if (room < 0) c.fail(fmt::format("kernel span {} exceeds padded input {}", g.span(i), room + g.span(i)));
      out.push_back((ceil_mode ? ceil_div(room, g.stride[i]) : room / g.stride[i]) + 1);
      // ONNX 1.12 shape inference keeps a last ceil_mode window that starts past the input,
      // which covers no element (PyTorch and later ONNX drop it): no value to give it.
      if ((out.back() - 1) * g.stride[i] >= in + pads[i]) c.unsupported("ceil_mode window that lies in the end padding only");
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output is ceil(in / stride); the odd unit of padding goes last (UPPER) or first (LOWER).
      out.push_back(ceil_div(in, g.stride[i]));
      const int64_t total = std::max<int64_t>(0, (out.back() - 1) * g.stride[i] + g.span(i) - in);
      g.pad_begin.push_back(auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2);
      g.pad_end.push_back(total - g.pad_begin[i]);
    } else {
      c.unsupported("auto_pad=" + auto_pad);
    }
  }
  return g;
}

// Window count of AveragePool at output position o: the product over spatial dims of the window
// part inside the counted range (the input, or the padded input with count_include_pad). Dims
// where every window lies inside contribute the constant kernel size.
Expr average_count(const LowerContext& c, const Geometry& g, const Shape& x, const Shape& out, const Idx& o) {
  const bool include_pad = c.node.attr_int("count_include_pad", 0) != 0;
  Expr count = 1;
  for (size_t i = 0; i < g.kernel.size(); i++) {
    const int64_t lo = include_pad ? -g.pad_begin[i] : 0;
    const int64_t hi = include_pad ? x[2 + i] + g.pad_end[i] : x[2 + i];
    const int64_t k = g.kernel[i];
    const int64_t last_end = (out[2 + i] - 1) * g.stride[i] - g.pad_begin[i] + k;
    if (-g.pad_begin[i] >= lo && last_end <= hi) {
      count = count * static_cast<int>(k);
      continue;
    }
    Expr start = o[2 + i] * static_cast<int>(g.stride[i]) - static_cast<int>(g.pad_begin[i]);
    count = count * (Halide::min(start + static_cast<int>(k), static_cast<int>(hi)) - Halide::max(start, static_cast<int>(lo)));
  }
  return count;
}

std::vector<LTensor> lower_pool(const LowerContext& c, PoolKind kind, bool global) {
  const LTensor& x = c.in(0);
  if (x.rank() < 3) c.fail(fmt::format("input {} has no spatial dims", shape_str(x.shape)));
  if (kind != PoolKind::Max && !dtype_is_float(x.dtype))
    c.unsupported(fmt::format("input type {} (float only)", dtype_name(x.dtype)));
  if (x.dtype == DType::Bool) c.unsupported("input type bool");
  if (c.node.outputs.size() > 1 && !c.node.outputs[1].empty()) c.unsupported("Indices output");
  const size_t s = x.rank() - 2;

  Shape out{x.shape[0], x.shape[1]};
  Geometry g;
  if (global) {
    g = Geometry{Shape(x.shape.begin() + 2, x.shape.end()), Shape(s, 1), Shape(s, 1), Shape(s, 0), Shape(s, 0)};
    out.resize(x.rank(), 1);
  } else {
    g = pool_geometry(c, kind, x.shape, out);
  }
  if (out != c.out_info().shape)
    c.fail(fmt::format("attributes give output shape {} but shape inference says {}", shape_str(out),
                       shape_str(c.out_info().shape)));

  // Pad only when some window reads outside X (the end padding may be unused; ceil_mode windows
  // may run past it).
  const Halide::Type t = x.type();
  const Expr fill = kind == PoolKind::Max ? t.min() : Halide::cast(t, 0);
  std::vector<int64_t> extent(s);
  bool pad = false;
  for (size_t i = 0; i < s; i++) {
    extent[i] = std::max((out[2 + i] - 1) * g.stride[i] + g.span(i), x.shape[2 + i] + g.pad_begin[i] + g.pad_end[i]);
    pad |= g.pad_begin[i] > 0 || (out[2 + i] - 1) * g.stride[i] + g.span(i) > x.shape[2 + i];
  }
  LTensor src = x;
  if (pad) {
    Shape shape{x.shape[0], x.shape[1]};
    shape.insert(shape.end(), extent.begin(), extent.end());
    src = define_tensor(c.name("_pad"), shape, x.dtype, [&](const Idx& o) {
      Idx xi{o[0], o[1]};
      for (size_t i = 0; i < s; i++) xi.push_back(o[2 + i] - static_cast<int>(g.pad_begin[i]));
      return x.at_or(xi, fill);
    }, x.layout.axis == 1 ? x.layout : Layout{});
  }

  std::vector<Halide::Range> ranges;
  for (size_t i = s; i-- > 0;) ranges.emplace_back(0, static_cast<int>(g.kernel[i]));
  RDom r(ranges, c.name("_r"));
  // The accumulator is stored like the output (a blocked output pools block by block).
  const Layout out_layout = c.out_info().layout;
  const TensorArgs ta = tensor_args(out, out_layout, true);
  const std::vector<Var>& args = ta.args;
  const Idx& o = ta.logical;
  Idx xi{o[0], o[1]};
  for (size_t i = 0; i < s; i++)
    xi.push_back(o[2 + i] * static_cast<int>(g.stride[i]) + r[static_cast<int>(s - 1 - i)] * static_cast<int>(g.dilation[i]));
  Expr v = src.at(xi);

  const int64_t p = kind == PoolKind::Lp ? c.node.attr_int("p", 2) : 0;
  if (kind == PoolKind::Lp && p < 1) c.fail(fmt::format("p={} (must be >= 1)", p));
  Func acc(c.name("_acc"));
  acc(args) = fill;
  if (kind == PoolKind::Max) acc(args) = nan_max(acc(args), v);  // a window with a NaN pools to NaN
  else if (kind == PoolKind::Average || p == 1) acc(args) += kind == PoolKind::Lp ? Halide::abs(v) : v;
  else if (p == 2) acc(args) += v * v;
  else acc(args) += Halide::pow(Halide::abs(v), Halide::cast(t, static_cast<int>(p)));
  set_shape_estimates(acc, storage_shape(out_layout, out));
  const LTensor a{acc, out, x.dtype, out_layout};

  return {c.output([&](const Idx& oi) {
    Expr sum = a.at(oi);
    if (kind == PoolKind::Max) return sum;
    if (kind == PoolKind::Average) return sum / Halide::cast(t, average_count(c, g, x.shape, out, oi));
    if (p == 1) return sum;
    if (p == 2) return Halide::sqrt(sum);
    return Halide::pow(sum, Halide::cast(t, 1.0f / static_cast<float>(p)));
  })};
}

LowerFn pool(PoolKind kind, bool global) {
  return [kind, global](const LowerContext& c) { return lower_pool(c, kind, global); };
}

}  // namespace

void register_pool_ops(std::map<std::string, LowerFn>& r) {
  r["MaxPool"] = pool(PoolKind::Max, false);
  r["AveragePool"] = pool(PoolKind::Average, false);
  r["LpPool"] = pool(PoolKind::Lp, false);
  r["GlobalMaxPool"] = pool(PoolKind::Max, true);
  r["GlobalAveragePool"] = pool(PoolKind::Average, true);
  r["GlobalLpPool"] = pool(PoolKind::Lp, true);
}

}  // namespace ts
