// Resampling ops: Resize (nearest, N-D linear and cubic), Upsample, GridSample, DepthToSpace,
// SpaceToDepth.
// Resize decides, per axis, which input elements feed each output element and with what weight.
// Shapes are static, so nearest-neighbour indices are computed on the host (in double, as the
// ONNX reference does, so ties round the same way) and emitted as a closed form when one fits.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "lower/lower.h"
#include "lower/reduction.h"

namespace ts {

using Halide::Expr;
using Idx = std::vector<Expr>;

namespace {

enum class Coord { HalfPixel, Asymmetric, AlignCorners, PytorchHalfPixel, TfHalfPixelForNN, TfCropAndResize };
enum class Nearest { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
enum class Mode { Nearest, Linear, Cubic };

struct Axis {
  int64_t in = 1, out = 1;
  double scale = 1;                   // output / input: the given scale, or sizes / input
  double length = 1;                  // in * scale: the resized length before flooring to out
  double roi_start = 0, roi_end = 1;  // tf_crop_and_resize only
};

struct ResizeSpec {
  std::vector<Axis> axes;
  Coord coord = Coord::HalfPixel;
  Mode mode = Mode::Nearest;
  Nearest nearest = Nearest::RoundPreferFloor;
  double extrapolation = 0;  // value outside the crop of tf_crop_and_resize
  double cubic_a = -0.75;    // cubic_coeff_a
  bool exclude_outside = false;  // cubic: zero the weights of taps outside the input, renormalize
};

// A literal of T: float32 for Exprs (Halide would turn a bare double into an int).
template <class T>
T lit(double v) {
  if constexpr (std::is_same_v<T, double>) return v;
  else return Expr(static_cast<float>(v));
}

// Input coordinate of output coordinate x (coordinate_transformation_mode). T is double for
// host-side nearest tables or a float32 Expr for interpolation weights; the formulas are the spec's.
template <class T>
T source_coord(T x, const Axis& a, Coord m) {
  const auto k = [](double v) { return lit<T>(v); };
  // align_corners and tf_crop_and_resize divide by the unfloored resized length, as the ONNX
  // reference does (it differs from the output extent when a scale is not a divisor).
  const double in = static_cast<double>(a.in), len = a.length;
  switch (m) {
    case Coord::HalfPixel: return (x + k(0.5)) / k(a.scale) - k(0.5);
    case Coord::Asymmetric: return x / k(a.scale);
    case Coord::TfHalfPixelForNN: return (x + k(0.5)) / k(a.scale);
    case Coord::PytorchHalfPixel: return len > 1 ? (x + k(0.5)) / k(a.scale) - k(0.5) : k(0);
    case Coord::AlignCorners: return len > 1 ? x * k(in - 1) / k(len - 1) : k(0);
    case Coord::TfCropAndResize:
      if (len > 1) return k(a.roi_start * (in - 1)) + x * k(a.roi_end - a.roi_start) * k(in - 1) / k(len - 1);
      return k(0.5 * (a.roi_start + a.roi_end) * (in - 1));
  }
  return x;
}

// Whether the axis maps every output index to the same input index with weight 1.
bool is_identity(const Axis& a, Coord m) {
  return a.in == a.out && a.scale == 1.0 && m != Coord::TfHalfPixelForNN && m != Coord::TfCropAndResize;
}

Coord parse_coord(const LowerContext& c) {
  // Resize-10 behaves as Resize-11 with asymmetric coordinates and floor rounding.
  if (c.opset() < 11) return Coord::Asymmetric;
  const std::string m = c.node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (m == "half_pixel") return Coord::HalfPixel;
  if (m == "asymmetric") return Coord::Asymmetric;
  if (m == "align_corners") return Coord::AlignCorners;
  if (m == "pytorch_half_pixel") return Coord::PytorchHalfPixel;
  if (m == "tf_half_pixel_for_nn") return Coord::TfHalfPixelForNN;
  if (m == "tf_crop_and_resize") return Coord::TfCropAndResize;
  c.unsupported(fmt::format("coordinate_transformation_mode '{}'", m));
}

Nearest parse_nearest(const LowerContext& c) {
  if (c.opset() < 11) return Nearest::Floor;
  const std::string m = c.node.attr_string("nearest_mode", "round_prefer_floor");
  if (m == "round_prefer_floor") return Nearest::RoundPreferFloor;
  if (m == "round_prefer_ceil") return Nearest::RoundPreferCeil;
  if (m == "floor") return Nearest::Floor;
  if (m == "ceil") return Nearest::Ceil;
  c.unsupported(fmt::format("nearest_mode '{}'", m));
}

Mode parse_mode(const LowerContext& c, bool cubic_allowed) {
  const std::string mode = c.node.attr_string("mode", "nearest");
  if (mode == "nearest") return Mode::Nearest;
  if (mode == "linear") return Mode::Linear;
  if (mode == "cubic" && cubic_allowed) return Mode::Cubic;
  c.unsupported(fmt::format("mode '{}'", mode));
}

// Axes from per-axis scales (empty: derive them from the inferred output shape, as for sizes).
std::vector<Axis> make_axes(const LowerContext& c, const std::vector<double>& scales) {
  const Shape &is = c.in(0).shape, &os = c.out_info().shape;
  if (os.size() != is.size() || (!scales.empty() && scales.size() != is.size()))
    c.fail(fmt::format("{} scales for rank {}", scales.size(), is.size()));
  std::vector<Axis> axes(is.size());
  for (size_t d = 0; d < is.size(); d++) {
    axes[d].in = is[d];
    axes[d].out = os[d];
    axes[d].scale = scales.empty() ? static_cast<double>(os[d]) / static_cast<double>(is[d]) : scales[d];
    if (!(axes[d].scale > 0)) c.fail(fmt::format("scale {} on axis {}", axes[d].scale, d));
    // An empty output (a scale below 1 / input size) would reach Halide with a zero extent, which
    // crashes its compiler: refused with the axis.
    if (os[d] < 1 || is[d] < 1)
      c.fail(fmt::format("scale {} on axis {} gives an empty output ({} -> {})", axes[d].scale, d, is[d], os[d]));
    axes[d].length = static_cast<double>(is[d]) * axes[d].scale;
  }
  return axes;
}

ResizeSpec parse_resize(const LowerContext& c) {
  ResizeSpec s;
  s.mode = parse_mode(c, c.opset() >= 11);
  s.coord = parse_coord(c);
  s.cubic_a = c.node.attr_float("cubic_coeff_a", -0.75);
  s.exclude_outside = c.node.attr_int("exclude_outside", 0) != 0;
  s.nearest = parse_nearest(c);
  if (c.node.attr_int("antialias", 0) != 0) c.unsupported("antialias 1");
  if (c.node.has("axes")) c.unsupported("the axes attribute");
  if (c.opset() < 11) {
    s.axes = make_axes(c, c.require_constant(1, "scales").to_f64_vector());
    return s;
  }
  // Inputs: X, roi, scales, sizes. An absent or empty scales means sizes gave the shape.
  const Tensor* scales = c.has_input(2) ? &c.require_constant(2, "scales") : nullptr;
  s.axes = make_axes(c, scales && scales->size() > 0 ? scales->to_f64_vector() : std::vector<double>{});
  if (s.coord == Coord::TfCropAndResize) {
    std::vector<double> roi = c.require_constant(1, "roi").to_f64_vector();
    if (roi.size() != 2 * s.axes.size()) c.fail(fmt::format("roi has {} values for rank {}", roi.size(), s.axes.size()));
    for (size_t d = 0; d < s.axes.size(); d++) {
      s.axes[d].roi_start = roi[d];
      s.axes[d].roi_end = roi[d + s.axes.size()];
    }
    s.extrapolation = c.node.attr_float("extrapolation_value", 0.0);
  }
  return s;
}

// Nearest input index of every output index along one axis; -1 marks outside the crop.
std::vector<int> nearest_table(const Axis& a, const ResizeSpec& s) {
  std::vector<int> t(a.out);
  for (int64_t x = 0; x < a.out; x++) {
    const double v = source_coord(static_cast<double>(x), a, s.coord);
    if (s.coord == Coord::TfCropAndResize && (v < 0 || v > static_cast<double>(a.in - 1))) {
      t[x] = -1;
      continue;
    }
    const double f = std::floor(v), frac = v - f;
    double i = f;
    switch (s.nearest) {
      case Nearest::RoundPreferFloor: i = frac <= 0.5 ? f : f + 1; break;
      case Nearest::RoundPreferCeil: i = frac < 0.5 ? f : f + 1; break;
      case Nearest::Floor: i = f; break;
      case Nearest::Ceil: i = std::ceil(v); break;
    }
    t[x] = static_cast<int>(std::clamp<double>(i, 0, static_cast<double>(a.in - 1)));
  }
  return t;
}

// t[x] as an Expr of x: (x*p + o) / q with p/q = in/out when that reproduces the table (every
// integer-factor up/downsampling), else a lookup in a constant buffer.
Expr table_expr(const std::vector<int>& t, int64_t in, Expr x, const std::string& name) {
  const int64_t n = static_cast<int64_t>(t.size()), g = std::gcd(in, n);
  const int64_t p = in / g, q = n / g;
  for (int64_t o = 0; o < q; o++) {
    bool fits = true;
    for (int64_t k = 0; k < n && fits; k++) fits = (k * p + o) / q == t[k];
    if (fits) return q == 1 ? x * static_cast<int>(p) + static_cast<int>(o) : (x * static_cast<int>(p) + static_cast<int>(o)) / static_cast<int>(q);
  }
  Halide::Buffer<int32_t> buf(static_cast<int>(n), name);
  for (int64_t k = 0; k < n; k++) buf(static_cast<int>(k)) = t[k];
  // The clamp tells bounds inference which input rows a lookup can reach.
  return Halide::clamp(buf(x), *std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()));
}

struct Tap {
  Expr index;
  Expr weight;  // undefined for weight 1
};

// Keys cubic convolution weights of neighbours i0-1 .. i0+2 of a coordinate i0 + r, 0 <= r < 1
// (distances 1+r, r, 1-r, 2-r), with coefficient a.
std::vector<Expr> cubic_weights(Expr r, double a) {
  const Expr A = lit<Expr>(a), one = lit<Expr>(1), two = lit<Expr>(2);
  auto near = [&](Expr t) { return ((A + two) * t - (A + lit<Expr>(3))) * t * t + one; };
  auto far = [&](Expr t) { return ((A * t - lit<Expr>(5) * A) * t + lit<Expr>(8) * A) * t - lit<Expr>(4) * A; };
  return {far(one + r), near(r), near(one - r), far(two - r)};
}

// Taps of one axis for output index x; `inside` is narrowed where the crop excludes x.
std::vector<Tap> axis_taps(const Axis& a, const ResizeSpec& s, Expr x, Expr& inside, const std::string& name) {
  if (is_identity(a, s.coord)) return {{x, Expr()}};
  const int hi = static_cast<int>(a.in) - 1;
  if (s.mode == Mode::Nearest) {
    std::vector<int> t = nearest_table(a, s);
    Expr i = table_expr(t, a.in, x, name);
    if (std::find(t.begin(), t.end(), -1) == t.end()) return {{i, Expr()}};
    inside = inside && i >= 0;
    return {{Halide::clamp(i, 0, hi), Expr()}};
  }
  Expr v = source_coord(Halide::cast<float>(x), a, s.coord);
  if (s.coord == Coord::TfCropAndResize) inside = inside && v >= Expr(0.0f) && v <= Expr(static_cast<float>(hi));
  Expr f = Halide::floor(v), r = v - f;
  Expr i0 = Halide::cast<int>(f);
  // Neighbours beyond the edge repeat the edge element, as in the reference's edge padding.
  if (s.mode == Mode::Linear) return {{Halide::clamp(i0, 0, hi), Expr(1.0f) - r}, {Halide::clamp(i0 + 1, 0, hi), r}};
  std::vector<Expr> w = cubic_weights(r, s.cubic_a);
  std::vector<Tap> taps;
  Expr total = lit<Expr>(0);
  for (int k = 0; k < 4; k++) {
    Expr at = i0 + (k - 1);
    if (s.exclude_outside) w[k] = Halide::select(at >= 0 && at <= hi, w[k], lit<Expr>(0));
    total = total + w[k];
    taps.push_back({Halide::clamp(at, 0, hi), w[k]});
  }
  if (s.exclude_outside)
    for (Tap& t : taps) t.weight = t.weight / total;
  return taps;
}

// A linear or cubic resize of two or more axes, one axis at a time, innermost first: each pass
// but the last is a reduction over its axis's taps (the rule computes it at root), and every
// pass after the first reads the one before densely along its rows. In one pass every output
// gathered 2^k (4^k) taps at computed indices: DeepLabV3's final upsampling of 21 x 33 x 33 to
// 520 x 520 took 15.6 ms, most of the network's time outside its convs.
LTensor lower_separable_resample(const LowerContext& c, const ResizeSpec& s, const std::vector<size_t>& resized) {
  const LTensor& x = c.in(0);
  const Halide::Type acc = x.type().is_float() ? x.type() : Halide::Float(32);
  const DType acc_dtype = x.type().is_float() ? x.dtype : DType::Float32;
  const int rank = x.rank();
  LTensor cur = x;
  for (size_t k = resized.size(); k-- > 1;) {
    const size_t d = resized[k];
    ReduceSpec taps_of;
    taps_of.in_shape = cur.shape;
    taps_of.in_shape[d] = s.axes[d].out;
    taps_of.in_shape.push_back(s.mode == Mode::Linear ? 2 : 4);
    taps_of.axes = {rank};
    taps_of.keepdims = false;
    taps_of.acc_type = acc_dtype;
    const LTensor prev = cur;
    cur = reduce_tensor(c.name(fmt::format("_axis{}", d)), taps_of, typed_const(acc, 0.0),
                        [](Expr a, Expr b) { return a + b; }, [&](const Idx& p) {
                          Idx i(p.begin(), p.end() - 1);
                          Expr inside = Halide::Internal::const_true();
                          const std::vector<Tap> taps = axis_taps(s.axes[d], s, i[d], inside, c.name(fmt::format("_idx{}", d)));
                          Expr index = taps.back().index, weight = taps.back().weight;
                          for (size_t t = taps.size() - 1; t-- > 0;) {
                            index = Halide::select(p[rank] == static_cast<int>(t), taps[t].index, index);
                            weight = Halide::select(p[rank] == static_cast<int>(t), taps[t].weight, weight);
                          }
                          i[d] = index;
                          return Halide::cast(acc, prev.at(i)) * Halide::cast(acc, weight);
                        });
  }
  const size_t d = resized.front();
  return c.output([&](const Idx& o) {
    Expr inside = Halide::Internal::const_true();
    Expr sum;
    for (const Tap& t : axis_taps(s.axes[d], s, o[d], inside, c.name(fmt::format("_idx{}", d)))) {
      Idx i = o;
      i[d] = t.index;
      const Expr v = Halide::cast(acc, cur.at(i)) * Halide::cast(acc, t.weight);
      sum = sum.defined() ? sum + v : v;
    }
    return sum;
  });
}

LTensor lower_resample(const LowerContext& c, const ResizeSpec& s) {
  const LTensor& x = c.in(0);
  const Halide::Type acc = x.type().is_float() ? x.type() : Halide::Float(32);
  std::vector<size_t> resized;
  for (size_t d = 0; d < s.axes.size(); d++)
    if (!is_identity(s.axes[d], s.coord)) resized.push_back(d);
  if (s.mode != Mode::Nearest && s.coord != Coord::TfCropAndResize && resized.size() >= 2)
    return lower_separable_resample(c, s, resized);
  return c.output([&](const Idx& i) {
    Expr inside = Halide::Internal::const_true();
    std::vector<std::vector<Tap>> taps;
    for (size_t d = 0; d < s.axes.size(); d++) taps.push_back(axis_taps(s.axes[d], s, i[d], inside, c.name(fmt::format("_idx{}", d))));
    // Sum over every combination of one tap per axis (2^k terms for k linear axes, 4^k cubic).
    Expr sum;
    std::vector<size_t> pick(taps.size(), 0);
    while (true) {
      Idx src(taps.size());
      Expr w;
      for (size_t d = 0; d < taps.size(); d++) {
        const Tap& t = taps[d][pick[d]];
        src[d] = t.index;
        if (t.weight.defined()) w = w.defined() ? w * t.weight : t.weight;
      }
      Expr v = x.at(src);
      if (w.defined()) v = Halide::cast(acc, v) * Halide::cast(acc, w);
      sum = sum.defined() ? sum + v : v;
      size_t d = 0;
      while (d < taps.size() && ++pick[d] == taps[d].size()) pick[d++] = 0;
      if (d == taps.size()) break;
    }
    if (s.coord != Coord::TfCropAndResize) return sum;
    return Halide::select(inside, Halide::cast(acc, sum), Halide::cast(acc, Expr(s.extrapolation)));
  });
}

std::vector<LTensor> lower_upsample(const LowerContext& c) {
  ResizeSpec s;
  s.mode = parse_mode(c, false);
  s.coord = Coord::Asymmetric;
  s.nearest = Nearest::Floor;
  s.axes = make_axes(c, c.opset() < 9 ? c.node.attr_floats("scales") : c.require_constant(1, "scales").to_f64_vector());
  return {lower_resample(c, s)};
}

int64_t block_size(const LowerContext& c) {
  const int64_t b = c.node.attr_int("blocksize", 0);
  if (b <= 0) c.fail(fmt::format("blocksize {}", b));
  if (c.in(0).rank() != 4) c.unsupported(fmt::format("rank {} input (4-D only)", c.in(0).rank()));
  return b;
}

// out[n, c, h*b + i, w*b + j] = in[n, channel(c, i, j), h, w]
std::vector<LTensor> lower_depth_to_space(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int b = static_cast<int>(block_size(c));
  const std::string mode = c.node.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") c.unsupported(fmt::format("mode '{}'", mode));
  const int oc = static_cast<int>(x.shape[1]) / (b * b);
  return {c.output([&](const Idx& o) {
    Expr i = o[2] % b, j = o[3] % b;
    // DCR stores the block offset outermost in the channel, CRD innermost.
    Expr ch = mode == "DCR" ? (i * b + j) * oc + o[1] : o[1] * (b * b) + i * b + j;
    return x.at({o[0], ch, o[2] / b, o[3] / b});
  })};
}

// out[n, (i*b + j)*C + c, h, w] = in[n, c, h*b + i, w*b + j]
std::vector<LTensor> lower_space_to_depth(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int b = static_cast<int>(block_size(c));
  const int ic = static_cast<int>(x.shape[1]);
  return {c.output([&](const Idx& o) {
    Expr block = o[1] / ic;
    return x.at({o[0], o[1] % ic, o[2] * b + block / b, o[3] * b + block % b});
  })};
}

// GridSample (opset 16, 4-D): out[n, c, h, w] samples x[n, c] at the point grid[n, h, w] = (gx,
// gy) in [-1, 1]^2, as PyTorch's grid_sample does (the ONNX cases' reference). A coordinate is
// unnormalized, then border clamps it and reflection folds it back inside; bilinear and nearest
// read the taps around it, bicubic applies the padding to each of its 4 x 4 taps instead. Taps
// left outside the input (zeros padding, or a bilinear tap one past the edge) read 0.
struct GridAxis {
  int64_t size = 1;
  bool align_corners = false;
  std::string padding = "zeros";

  // Pixel coordinate of normalized g.
  Expr unnormalize(Expr g) const {
    const float n = static_cast<float>(size);
    return align_corners ? (g + 1.0f) * 0.5f * (n - 1.0f) : ((g + 1.0f) * n - 1.0f) * 0.5f;
  }
  Expr clip(Expr v) const { return Halide::clamp(v, 0.0f, static_cast<float>(size - 1)); }
  // v reflected into [lo2 / 2, hi2 / 2] (the edges' pixel centres, or their outer borders).
  Expr reflect(Expr v) const {
    const float lo2 = align_corners ? 0.0f : -1.0f;
    const float hi2 = align_corners ? 2.0f * static_cast<float>(size - 1) : 2.0f * static_cast<float>(size) - 1.0f;
    if (lo2 == hi2) return Expr(0.0f);
    const float low = lo2 / 2, span = (hi2 - lo2) / 2;
    const Expr d = Halide::abs(v - low);
    const Expr flips = Halide::floor(d / span);
    const Expr extra = d - flips * span;
    return Halide::select(Halide::cast<int>(flips) % 2 == 0, extra + low, span - extra + low);
  }
  // Padding applied to a coordinate (or, for bicubic, to a tap's index).
  Expr pad(Expr v) const {
    if (padding == "border") return clip(v);
    if (padding == "reflection") return clip(reflect(v));
    return v;
  }
  Expr inside(Expr i) const { return i >= 0 && i < static_cast<int>(size); }
  Expr clamp_index(Expr i) const { return Halide::clamp(i, 0, static_cast<int>(size - 1)); }
};

std::vector<LTensor> lower_grid_sample(const LowerContext& c) {
  const LTensor &x = c.in(0), &grid = c.in(1);
  if (x.rank() != 4) c.unsupported(fmt::format("rank {} input (4-D only, as in opset 16)", x.rank()));
  if (!x.type().is_float() || !grid.type().is_float()) c.unsupported("non-float input or grid");
  if (grid.rank() != 4 || grid.shape[3] != 2 || grid.shape[0] != x.shape[0])
    c.fail(fmt::format("grid of shape {} for input {} ([N, H_out, W_out, 2] expected)", shape_str(grid.shape), shape_str(x.shape)));
  const std::string mode = c.node.attr_string("mode", "bilinear");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") c.unsupported(fmt::format("mode '{}'", mode));
  GridAxis ax{x.shape[3], c.node.attr_int("align_corners", 0) != 0, c.node.attr_string("padding_mode", "zeros")};
  if (ax.padding != "zeros" && ax.padding != "border" && ax.padding != "reflection")
    c.unsupported(fmt::format("padding_mode '{}'", ax.padding));
  GridAxis ay = ax;
  ay.size = x.shape[2];
  return {c.output([&](const Idx& o) {
    auto coord = [&](int k) { return Halide::cast<float>(grid.at({o[0], o[2], o[3], Expr(k)})); };
    const Expr gx = ax.unnormalize(coord(0)), gy = ay.unnormalize(coord(1));
    // Input value at integer (iy, ix), 0 outside.
    auto read = [&](Expr iy, Expr ix) {
      const Expr v = Halide::cast<float>(x.at({o[0], o[1], ay.clamp_index(iy), ax.clamp_index(ix)}));
      return Halide::select(ay.inside(iy) && ax.inside(ix), v, 0.0f);
    };
    if (mode == "nearest") {
      const Expr ix = Halide::cast<int>(Halide::round(ax.pad(gx))), iy = Halide::cast<int>(Halide::round(ay.pad(gy)));
      return read(iy, ix);
    }
    if (mode == "bilinear") {
      const Expr px = ax.pad(gx), py = ay.pad(gy);
      const Expr fx = Halide::floor(px), fy = Halide::floor(py);
      const Expr tx = px - fx, ty = py - fy;
      const Expr x0 = Halide::cast<int>(fx), y0 = Halide::cast<int>(fy);
      return (read(y0, x0) * (1.0f - tx) + read(y0, x0 + 1) * tx) * (1.0f - ty) +
             (read(y0 + 1, x0) * (1.0f - tx) + read(y0 + 1, x0 + 1) * tx) * ty;
    }
    const Expr fx = Halide::floor(gx), fy = Halide::floor(gy);
    const Expr x0 = Halide::cast<int>(fx), y0 = Halide::cast<int>(fy);
    const std::vector<Expr> wx = cubic_weights(gx - fx, -0.75), wy = cubic_weights(gy - fy, -0.75);
    // A padded tap index: border and reflection move it inside, zeros leaves it to read 0.
    auto tap = [](const GridAxis& a, Expr i) {
      return a.padding == "zeros" ? i : Halide::cast<int>(a.pad(Halide::cast<float>(i)));
    };
    Expr sum = 0.0f;
    for (int j = 0; j < 4; j++) {
      Expr row = 0.0f;
      for (int i = 0; i < 4; i++) row = row + read(tap(ay, y0 + (j - 1)), tap(ax, x0 + (i - 1))) * wx[i];
      sum = sum + row * wy[j];
    }
    return sum;
  })};
}

}  // namespace

void register_resize_ops(std::map<std::string, LowerFn>& r) {
  r["Resize"] = [](const LowerContext& c) { return std::vector<LTensor>{lower_resample(c, parse_resize(c))}; };
  r["Upsample"] = lower_upsample;
  r["DepthToSpace"] = lower_depth_to_space;
  r["SpaceToDepth"] = lower_space_to_depth;
  r["GridSample"] = lower_grid_sample;
}

}  // namespace ts
