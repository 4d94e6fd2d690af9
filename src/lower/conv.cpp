// Convolutions: Conv and ConvTranspose over any number of spatial dims (1D-3D in practice), with
// strides, dilations, explicit or automatic padding, groups (depthwise included) and bias.
// Every convolution lowers to the same three stages, which the schedule search relies on:
//   <node>_pad  the input with its zero padding (for ConvTranspose also zero-stuffed between
//               strided samples), only when the input needs it and the reduction does not skip
//               every padded tap (then it reads X, clamped); reads of X are clamped there;
//   <node>_acc  pure zero init plus one `+=` update over RDom(kernel dims, innermost = last
//               spatial dim; then the input channels of the group), reading _pad unchecked;
//   <node>      the output: accumulator plus bias.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "graph/winograd.h"
#include "lower/window.h"

namespace ts {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::Var;
using Idx = std::vector<Expr>;

namespace {

// Kernel dims from the weight (dims 2..), checked against the optional kernel_shape attribute.
std::vector<int64_t> weight_kernel(const LowerContext& c, const LTensor& w) {
  std::vector<int64_t> k(w.shape.begin() + 2, w.shape.end());
  if (c.node.has("kernel_shape") && c.node.attr_ints("kernel_shape") != k)
    c.fail(fmt::format("kernel_shape differs from the weight shape {}", shape_str(w.shape)));
  return k;
}

// Checks the shape this lowering computes against shape inference's, so a wrong padding rule
// shows up as an error instead of a silently shifted result.
void check_shape(const LowerContext& c, const Shape& s) {
  if (s != c.out_info().shape)
    c.fail(fmt::format("attributes give output shape {} but shape inference says {}", shape_str(s),
                       shape_str(c.out_info().shape)));
}

void check_float(const LowerContext& c, const LTensor& x) {
  if (!dtype_is_float(x.dtype)) c.unsupported(fmt::format("input type {} (float only)", dtype_name(x.dtype)));
}

// Input X viewed through a per-spatial-dim map from padded position j to (input index, valid):
// {N, C, extent...}, zero where the map is invalid or leaves X.
using SpatialMap = std::function<std::pair<Expr, Expr>(size_t dim, Expr j)>;
LTensor pad_input(const LowerContext& c, const LTensor& x, const std::vector<int64_t>& extent, const SpatialMap& map) {
  Shape shape{x.shape[0], x.shape[1]};
  shape.insert(shape.end(), extent.begin(), extent.end());
  // A channel-blocked input keeps its layout: the conv reads its padded copy by block and lane.
  const Layout layout = x.layout.axis == 1 ? x.layout : Layout{};
  return define_tensor(c.name("_pad"), shape, x.dtype, [&](const Idx& o) {
    Idx xi{o[0], o[1]};
    Expr valid = Halide::Internal::const_true();
    for (size_t i = 0; i < extent.size(); i++) {
      auto [src, ok] = map(i, o[2 + i]);
      xi.push_back(src);
      valid = valid && ok;
    }
    Expr zero = Halide::cast(x.type(), 0);
    return Halide::select(valid, x.at_or(xi, zero), zero);
  }, layout);
}

// Share of a spatial dim's (output position, tap) pairs whose input position falls in the padding.
double padded_tap_fraction(const Geometry& g, size_t i, int64_t out, int64_t in) {
  int64_t padded = 0;
  for (int64_t o = 0; o < out; o++)
    for (int64_t k = 0; k < g.kernel[i]; k++) {
      const int64_t at = o * g.stride[i] + k * g.dilation[i] - g.pad_begin[i];
      padded += at < 0 || at >= in;
    }
  return static_cast<double>(padded) / static_cast<double>(out * g.kernel[i]);
}
constexpr double kMinPaddedColumnTaps = 0.01;  // see accumulate

// Whether the reduction skips spatial dim i's taps that fall in the padding (see accumulate):
// dim i has some, and it is not the last dim, or the last one's guards pay (a channel-blocked
// output, a reduction across channels, at most 3 columns, enough padded taps).
bool skips_padded_taps(const Geometry& g, size_t i, int64_t cg, int64_t out, int64_t in, bool blocked_out) {
  const double padded = padded_tap_fraction(g, i, out, in);
  const bool last = i + 1 == g.kernel.size();
  return padded > 0 && !(last && (!blocked_out || cg == 1 || g.kernel[i] > 3 || padded < kMinPaddedColumnTaps));
}

// The shared accumulation: acc(n, m, o...) = sum over r of
// src(n, in_channel(m, rc), o * stride + rk * dilation) * w(weight_idx(m, rc, rk)), stored in the
// output's layout. When src is channel-blocked and the group's channels fill whole blocks, the
// reduction runs as (kernel..., lane, block), innermost first: every read of src is then a
// direct access of its block and lane.
// `input` (a Conv's X extents; empty for ConvTranspose, whose stuffed zeros are not skipped)
// makes the reduction skip the window taps that fall in the padding: a `where` on (output
// position, tap), which Halide hoists to the tap's loop. On the outer spatial dims (frames,
// rows) that loop runs outside the register tile: R3D-18's 3x3x3 convs at 2 frames spend a third
// of their taps on padded frames, a 3x3 conv at 7 x 7 a tenth on padded rows (ONNX Runtime's
// im2col computes them; oneDNN skips them). The last dim is a tile's unrolled columns, where the
// test guards the border columns' FMAs unless the tile spans the width (then it folds away): it
// is skipped there only where padded taps are at least kMinPaddedColumnTaps of the taps, the
// kernel has at most 3 columns and the guards are amortized over a reduction across channels.
// Skipping every padded tap also drops the padded copy of a blocked input (lower_conv). Below
// kMinPaddedColumnTaps (the widest images) the column guards cost more than they save and the
// input keeps its copy; kernels of more than 3 columns (1x7) and depthwise convs keep the column
// guards off (measured: docs/benchmarks.md, "The default rule"). A plain output keeps every
// column tap: its vectors run along the columns, where a guard is a masked load and a masked
// store per FMA (a stride-3 1-D conv over [2, 355, 217] ran at 4% of peak so).
LTensor accumulate(const LowerContext& c, const LTensor& src, const LTensor& w, const Shape& out_shape,
                   const Geometry& g, int64_t cg, const std::function<Expr(Expr, Expr)>& in_channel,
                   const std::function<Idx(Expr, Expr, const Idx&)>& weight_idx,
                   const std::vector<int64_t>& input = {}, bool unpadded_src = false) {
  const size_t s = g.kernel.size();
  const int64_t b = src.layout.axis == 1 ? src.layout.block : 0;
  const bool by_block = b > 0 && cg % b == 0;
  std::vector<Halide::Range> ranges;
  for (size_t i = s; i-- > 0;) ranges.emplace_back(0, static_cast<int>(g.kernel[i]));
  if (by_block) ranges.emplace_back(0, static_cast<int>(b));
  ranges.emplace_back(0, static_cast<int>(by_block ? cg / b : cg));
  RDom r(ranges, c.name("_r"));
  Idx rk(s);
  for (size_t i = 0; i < s; i++) rk[i] = r[static_cast<int>(s - 1 - i)];
  Expr rc = r[static_cast<int>(s) + (by_block ? 1 : 0)];
  std::optional<LaneBound> lane;
  if (by_block) {
    // Kernel loops innermost, then the block's lanes: a weight packed OIHW[x]o is then read in
    // storage order, one output-channel block's slice streaming through once per register tile.
    const Halide::RVar rl = r[static_cast<int>(s)];
    lane.emplace(rl.name(), b);
    rc = rc * static_cast<int>(b) + rl;
  }

  const Layout out_layout = c.out_info().layout;
  const TensorArgs ta = tensor_args(out_shape, out_layout, true);
  const Idx& o = ta.logical;
  Idx xi{o[0], in_channel(o[1], rc)};
  for (size_t i = 0; i < s; i++)
    xi.push_back(o[2 + i] * static_cast<int>(g.stride[i]) + rk[i] * static_cast<int>(g.dilation[i]));
  for (size_t i = 0; i < s && !input.empty(); i++) {
    const Expr at = xi[2 + i] - static_cast<int>(g.pad_begin[i]);  // position in X
    const bool skipped = skips_padded_taps(g, i, cg, out_shape[2 + i], input[i], c.out_info().layout.axis == 1);
    if (skipped) r.where(at >= 0 && at < static_cast<int>(input[i]));
    // src is X itself (no padded copy): read at the position in X, clamped into X where taps are
    // skipped (Halide's bounds inference does not narrow by the `where`; the clamp of a frame's
    // or a row's position is hoisted out of the tile's loops).
    if (unpadded_src) xi[2 + i] = skipped ? Halide::clamp(at, 0, static_cast<int>(input[i]) - 1) : at;
  }

  const DType acc_type = c.out_info().dtype;
  const Halide::Type t = halide_type(acc_type);
  Func acc(c.name("_acc"));
  acc(ta.args) = Halide::cast(t, 0);
  acc(ta.args) += Halide::cast(t, src.at(xi)) * Halide::cast(t, w.at(weight_idx(o[1], rc, rk)));
  set_shape_estimates(acc, storage_shape(out_layout, out_shape));
  return LTensor{acc, out_shape, acc_type, out_layout};
}

// Output stage: accumulator plus the optional bias (input 2), per output channel.
LTensor add_bias(const LowerContext& c, const LTensor& acc) {
  if (c.has_input(2) && c.in(2).shape != Shape{acc.shape[1]})
    c.fail(fmt::format("bias shape {} is not [{}]", shape_str(c.in(2).shape), acc.shape[1]));
  return c.output([&](const Idx& o) {
    Expr v = acc.at(o);
    return c.has_input(2) ? v + c.in(2).at({o[1]}) : v;
  });
}

std::vector<LTensor> lower_conv(const LowerContext& c) {
  if (is_winograd_conv(c.node)) return lower_winograd_conv(c);
  const LTensor &x = c.in(0), &w = c.in(1);
  check_float(c, x);
  if (x.rank() < 3 || w.rank() != x.rank())
    c.fail(fmt::format("input {} and weight {} ranks do not fit", shape_str(x.shape), shape_str(w.shape)));
  const size_t s = x.rank() - 2;
  const int64_t group = c.node.attr_int("group", 1), cin = x.shape[1], cout = w.shape[0];
  if (group < 1 || cin % group != 0 || cout % group != 0 || w.shape[1] != cin / group)
    c.fail(fmt::format("weight {} does not fit input {} with group={}", shape_str(w.shape), shape_str(x.shape), group));
  const int64_t cg = cin / group, mg = cout / group;

  Geometry g{weight_kernel(c, w), attr_dims(c, "strides", s, 1, 1), attr_dims(c, "dilations", s, 1, 1), {}, {}};
  const std::string auto_pad = c.node.attr_string("auto_pad", "NOTSET");
  Shape out{x.shape[0], cout};
  for (size_t i = 0; i < s; i++) {
    const int64_t in = x.shape[2 + i];
    if (auto_pad == "NOTSET" || auto_pad == "VALID") {
      auto pads = auto_pad == "VALID" ? std::vector<int64_t>(2 * s, 0) : attr_dims(c, "pads", 2 * s, 0, 0);
      g.pad_begin.push_back(pads[i]);
      g.pad_end.push_back(pads[s + i]);
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output is ceil(in / stride); the odd unit of padding goes last (UPPER) or first (LOWER).
      const int64_t total = std::max<int64_t>(0, (ceil_div(in, g.stride[i]) - 1) * g.stride[i] + g.span(i) - in);
      g.pad_begin.push_back(auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2);
      g.pad_end.push_back(total - g.pad_begin[i]);
    } else {
      c.unsupported("auto_pad=" + auto_pad);
    }
    const int64_t padded = in + g.pad_begin[i] + g.pad_end[i];
    if (padded < g.span(i)) c.fail(fmt::format("kernel span {} exceeds padded input {}", g.span(i), padded));
    out.push_back((padded - g.span(i)) / g.stride[i] + 1);
  }
  check_shape(c, out);

  // Pad only when some window reads outside X: the last window may end before the end padding.
  // Pad only when some window reads outside X: the last window may end before the end padding.
  // No copy either where the reduction skips every padded tap (accumulate) of a channel-blocked
  // input: it then reads X only inside X, and the copy (R(2+1)D-18's 3x1x1 convs copied 9-18 MB
  // per run for their two padded frames) cost more than the skipped taps' guards
  // (measured: docs/benchmarks.md, "The default rule").
  // copy, which the search space places inside the tiles.
  std::vector<int64_t> extent(s);
  bool pad = false, taps_skipped = true;
  for (size_t i = 0; i < s; i++) {
    extent[i] = (out[2 + i] - 1) * g.stride[i] + g.span(i);
    pad |= g.pad_begin[i] > 0 || extent[i] > x.shape[2 + i];
    const int64_t in = x.shape[2 + i];
    taps_skipped &= padded_tap_fraction(g, i, out[2 + i], in) == 0 ||
                    skips_padded_taps(g, i, cg, out[2 + i], in, c.out_info().layout.axis == 1);
  }
  const bool unpadded = pad && taps_skipped && x.layout.axis == 1;
  const LTensor src = !pad || unpadded ? x : pad_input(c, x, extent, [&](size_t i, Expr j) {
    return std::pair<Expr, Expr>{j - static_cast<int>(g.pad_begin[i]), Halide::Internal::const_true()};
  });

  // Output channel m is in group m / mg, which reads input channels [group * cg, +cg). With one
  // channel per group (depthwise) rc is always 0 and left out, so a blocked input is read at
  // the output's own block and lane.
  auto in_channel = [&](Expr m, Expr rc) {
    if (group == 1) return rc;
    if (cg == 1) return mg == 1 ? m : m / static_cast<int>(mg);
    return (m / static_cast<int>(mg)) * static_cast<int>(cg) + rc;
  };
  auto weight_idx = [](Expr m, Expr rc, const Idx& rk) {
    Idx wi{m, rc};
    wi.insert(wi.end(), rk.begin(), rk.end());
    return wi;
  };
  const std::vector<int64_t> input(x.shape.begin() + 2, x.shape.end());
  LTensor acc = accumulate(c, src, w, out, g, cg, in_channel, weight_idx, input, unpadded);
  return {add_bias(c, acc)};
}

// ConvTranspose as a stride-1 correlation with the flipped kernel over the zero-stuffed input:
// input sample i sits at stuffed position i * stride + (span - 1 - pad_begin).
std::vector<LTensor> lower_conv_transpose(const LowerContext& c) {
  const LTensor &x = c.in(0), &w = c.in(1);
  check_float(c, x);
  if (x.rank() < 3 || w.rank() != x.rank())
    c.fail(fmt::format("input {} and weight {} ranks do not fit", shape_str(x.shape), shape_str(w.shape)));
  const size_t s = x.rank() - 2;
  const int64_t group = c.node.attr_int("group", 1), cin = x.shape[1];
  if (group < 1 || cin % group != 0 || w.shape[0] != cin)
    c.fail(fmt::format("weight {} does not fit input {} with group={}", shape_str(w.shape), shape_str(x.shape), group));
  const int64_t cg = cin / group, mg = w.shape[1], cout = mg * group;

  Geometry g{weight_kernel(c, w), attr_dims(c, "strides", s, 1, 1), attr_dims(c, "dilations", s, 1, 1), {}, {}};
  const auto out_pad = attr_dims(c, "output_padding", s, 0, 0);
  const std::string auto_pad = c.node.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    c.unsupported("auto_pad=" + auto_pad);
  // output_shape may list the spatial dims only, or N and C too.
  auto target = c.node.attr_ints("output_shape");
  if (target.size() == s + 2) target.erase(target.begin(), target.begin() + 2);
  if (!target.empty() && target.size() != s) c.fail(fmt::format("output_shape has {} values for {} spatial dims", target.size(), s));
  const auto pads = auto_pad == "NOTSET" && target.empty() ? attr_dims(c, "pads", 2 * s, 0, 0) : std::vector<int64_t>(2 * s, 0);

  Shape out{x.shape[0], cout};
  for (size_t i = 0; i < s; i++) {
    const int64_t in = x.shape[2 + i];
    const int64_t full = g.stride[i] * (in - 1) + out_pad[i] + g.span(i);
    if (!target.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Total padding that gives the requested size (in * stride for SAME), split as the spec
      // says: the larger half first unless SAME_UPPER.
      const int64_t total = full - (target.empty() ? in * g.stride[i] : target[i]);
      g.pad_begin.push_back(auto_pad == "SAME_UPPER" ? floor_div(total, 2) : total - floor_div(total, 2));
      g.pad_end.push_back(total - g.pad_begin[i]);
    } else {
      g.pad_begin.push_back(pads[i]);
      g.pad_end.push_back(pads[s + i]);
    }
    out.push_back(full - g.pad_begin[i] - g.pad_end[i]);
    if (out.back() < 1) c.fail(fmt::format("spatial dim {} of the output would be {}", i, out.back()));
  }
  check_shape(c, out);

  std::vector<int64_t> extent(s), offset(s);
  bool pad = false;
  for (size_t i = 0; i < s; i++) {
    extent[i] = out[2 + i] + g.span(i) - 1;
    offset[i] = g.span(i) - 1 - g.pad_begin[i];
    pad |= g.stride[i] != 1 || offset[i] != 0 || extent[i] > x.shape[2 + i];
  }
  const LTensor src = !pad ? x : pad_input(c, x, extent, [&](size_t i, Expr j) {
    Expr shifted = j - static_cast<int>(offset[i]);
    const int st = static_cast<int>(g.stride[i]);
    if (st == 1) return std::pair<Expr, Expr>{shifted, Halide::Internal::const_true()};
    return std::pair<Expr, Expr>{shifted / st, shifted % st == 0};  // Euclidean: exact when divisible
  });

  // Output channel m is in group m / mg; the weight is [Cin, Cout/group, k...], read flipped.
  auto in_channel = [&](Expr m, Expr rc) { return group == 1 ? rc : (m / static_cast<int>(mg)) * static_cast<int>(cg) + rc; };
  auto weight_idx = [&](Expr m, Expr rc, const Idx& rk) {
    Idx wi{in_channel(m, rc), group == 1 ? m : m % static_cast<int>(mg)};
    for (size_t i = 0; i < s; i++) wi.push_back(static_cast<int>(g.kernel[i] - 1) - rk[i]);
    return wi;
  };
  Geometry unit_stride = g;  // the stride is in the stuffing
  unit_stride.stride.assign(s, 1);
  LTensor acc = accumulate(c, src, w, out, unit_stride, cg, in_channel, weight_idx);
  return {add_bias(c, acc)};
}

}  // namespace

void register_conv_ops(std::map<std::string, LowerFn>& r) {
  r["Conv"] = lower_conv;
  r["ConvTranspose"] = lower_conv_transpose;
}

}  // namespace ts
