// drop_padding_taps (passes.h): a conv's kernel cut to the taps that read its input, and
// conv_tap_read_fraction, the share of its multiply-adds that read the input.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/passes.h"
#include "graph/winograd.h"

namespace ts {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// One spatial axis of a conv: input length, kernel taps, stride, dilation and pads.
struct ConvAxis {
  int64_t in = 0, taps = 0, stride = 1, dilation = 1, pad_begin = 0, pad_end = 0;
  int64_t out() const { return (in + pad_begin + pad_end - dilation * (taps - 1) - 1) / stride + 1; }
  // Whether tap k reads input inside [0, in) for some output o: o * stride + k * dilation -
  // pad_begin lands in it (with a stride above the input length, a tap may skip it entirely).
  bool live(int64_t k) const {
    const int64_t a = k * dilation - pad_begin;
    const int64_t o = std::max<int64_t>(0, ceil_div(-a, stride));
    return o < out() && o * stride + a <= in - 1;
  }
};

// The axes of conv n with auto_pad resolved as lower/conv.cpp resolves it; nullopt where the
// conv is not one this pass reads (ranks, attributes absent or malformed: the lowering reports).
std::optional<std::vector<ConvAxis>> conv_axes(const Graph& g, const Node& n) {
  const Shape& x = g.tensor(n.inputs[0]).shape;
  const Shape& w = g.tensor(n.inputs[1]).shape;
  if (x.size() < 3 || w.size() != x.size()) return std::nullopt;
  const size_t s = x.size() - 2;
  // Winograd weights ([Cout, (KD,) 6, 6, Cin]) stand for a 3 x 3 ((KD x) 3 x 3) kernel.
  Shape taps(w.begin() + 2, w.end());
  if (is_winograd_conv(n)) taps = s == 3 ? Shape{w[1], 3, 3} : Shape{3, 3};
  if (taps.size() != s) return std::nullopt;
  const auto strides = n.attr_ints("strides", std::vector<int64_t>(s, 1));
  const auto dilations = n.attr_ints("dilations", std::vector<int64_t>(s, 1));
  const auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (strides.size() != s || dilations.size() != s || pads.size() != 2 * s) return std::nullopt;
  std::vector<ConvAxis> axes(s);
  for (size_t i = 0; i < s; i++) {
    ConvAxis& a = axes[i];
    a = {x[2 + i], taps[i], strides[i], dilations[i], pads[i], pads[s + i]};
    if (a.in < 1 || a.taps < 1 || a.stride < 1 || a.dilation < 1 || a.pad_begin < 0 || a.pad_end < 0) return std::nullopt;
    if (auto_pad == "VALID") {
      a.pad_begin = a.pad_end = 0;
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t span = a.dilation * (a.taps - 1) + 1;
      const int64_t total = std::max<int64_t>(0, (ceil_div(a.in, a.stride) - 1) * a.stride + span - a.in);
      a.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      a.pad_end = total - a.pad_begin;
    } else if (auto_pad != "NOTSET") {
      return std::nullopt;
    }
    if (a.in + a.pad_begin + a.pad_end < a.dilation * (a.taps - 1) + 1) return std::nullopt;
  }
  return axes;
}

// The taps [lo, hi] of axis a to keep: from its first live tap to its last, widened where the
// cut would need a negative pad (a tap the stride skips between two that read). Empty (lo > hi)
// when no tap reads the input: the output is the bias alone (bias_alone).
std::pair<int64_t, int64_t> kept_taps(const ConvAxis& a) {
  int64_t lo = 0, hi = a.taps - 1;
  while (lo < a.taps && !a.live(lo)) lo++;
  while (hi >= 0 && !a.live(hi)) hi--;
  if (lo > hi) return {lo, hi};
  lo = std::min(lo, a.pad_begin / a.dilation);
  hi = std::max(hi, a.taps - 1 - a.pad_end / a.dilation);
  return {lo, hi};
}

// Weight w [M, C/g, k0, k1, ...] cut to taps [lo[i], hi[i]] of each spatial axis i.
Tensor cut_weights(const Tensor& w, const std::vector<std::pair<int64_t, int64_t>>& keep) {
  Shape shape = w.shape;
  for (size_t i = 0; i < keep.size(); i++) shape[2 + i] = keep[i].second - keep[i].first + 1;
  Tensor out(w.dtype, shape);
  const size_t es = dtype_size(w.dtype);
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < out.size(); e++) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; d++) src = src * w.shape[d] + idx[d] + (d >= 2 ? keep[d - 2].first : 0);
    std::copy_n(w.bytes.data() + src * es, es, out.bytes.data() + e * es);
    for (int64_t d = rank - 1; d >= 0 && ++idx[d] == shape[d]; d--) idx[d] = 0;
  }
  return out;
}

// The (output position, tap) pairs of axis a whose tap reads input inside [0, in).
int64_t taps_read(const ConvAxis& a) {
  int64_t reads = 0;
  for (int64_t o = 0; o < a.out(); o++)
    for (int64_t k = 0; k < a.taps; k++) {
      const int64_t i = o * a.stride + k * a.dilation - a.pad_begin;
      reads += i >= 0 && i < a.in;
    }
  return reads;
}

}  // namespace

double conv_tap_read_fraction(const Graph& g, const Node& n) {
  if (n.op != "Conv" || n.inputs.size() < 2) return 1.0;
  const auto axes = conv_axes(g, n);
  if (!axes) return 1.0;
  double fraction = 1.0;
  for (const ConvAxis& a : *axes) fraction *= static_cast<double>(taps_read(a)) / static_cast<double>(a.out() * a.taps);
  return fraction;
}

// Outputs of at most this many values that are the bias alone become constants; a larger one is
// left to the lowering (a constant of its size would be read from memory anyway).
constexpr int64_t kMaxBiasAloneValues = int64_t{1} << 22;

// The output of float conv n whose taps all read padding: its bias per output channel (0
// without one), broadcast over the output; nullopt where it is not float or too large.
std::optional<Tensor> bias_alone(const Graph& g, const Node& n) {
  const TensorInfo& y = g.tensor(n.outputs[0]);
  if (y.dtype != DType::Float32 || y.shape.size() < 3 || num_elements(y.shape) > kMaxBiasAloneValues) return std::nullopt;
  const bool has_bias = n.inputs.size() > 2 && !n.inputs[2].empty();
  if (has_bias && !g.is_constant(n.inputs[2])) return std::nullopt;
  const Tensor* bias = has_bias ? &*g.tensor(n.inputs[2]).value : nullptr;
  Tensor out(DType::Float32, y.shape);
  const int64_t channels = y.shape[1], per_channel = num_elements(y.shape) / std::max<int64_t>(1, y.shape[0] * channels);
  for (int64_t e = 0; e < out.size(); e++)
    out.data<float>()[e] = bias ? static_cast<float>(bias->get_f64(e / per_channel % channels)) : 0.f;
  return out;
}

int drop_padding_taps(Graph& g) {
  int done = 0;
  std::vector<Node> kept;
  for (Node& node : g.nodes) {
    kept.push_back(std::move(node));
    Node& n = kept.back();
    if (n.op != "Conv" || n.inputs.size() < 2 || !g.is_constant(n.inputs[1]) || is_winograd_conv(n)) continue;
    const auto axes = conv_axes(g, n);
    if (!axes) continue;
    std::vector<std::pair<int64_t, int64_t>> keep;
    bool cut = false, empty = false;
    for (const ConvAxis& a : *axes) {
      keep.push_back(kept_taps(a));
      empty |= keep.back().first > keep.back().second;
      cut |= keep.back().first > 0 || keep.back().second < a.taps - 1;
    }
    if (empty) {
      // Every output is the bias: the conv folds to a constant (a 1-D conv of 61 and 105 pads
      // over one column, dilation 30, read padding only and ran 7 ms).
      if (std::optional<Tensor> y = bias_alone(g, n)) {
        g.tensor(n.outputs[0]).value = std::move(*y);
        kept.pop_back();
        done++;
      }
      continue;
    }
    if (!cut) continue;
    const size_t s = axes->size();
    std::vector<int64_t> pads(2 * s), dilations(s), strides(s);
    for (size_t i = 0; i < s; i++) {
      const ConvAxis& a = (*axes)[i];
      pads[i] = a.pad_begin - keep[i].first * a.dilation;
      pads[s + i] = a.pad_end - (a.taps - 1 - keep[i].second) * a.dilation;
      dilations[i] = keep[i].first == keep[i].second ? 1 : a.dilation;  // one tap: no spacing
      strides[i] = a.stride;
    }
    const Tensor w = cut_weights(*g.tensor(n.inputs[1]).value, keep);
    const std::string name = n.outputs[0] + "::taps_read";
    g.tensors[name] = TensorInfo{name, w.dtype, w.shape, w, {}};
    n.inputs[1] = name;
    n.attrs.erase("auto_pad");
    n.attrs["pads"] = Attribute{pads};
    n.attrs["dilations"] = Attribute{dilations};
    n.attrs["strides"] = Attribute{strides};
    n.attrs["kernel_shape"] = Attribute{std::vector<int64_t>(w.shape.begin() + 2, w.shape.end())};
    done++;
  }
  g.nodes = std::move(kept);
  return done;
}

}  // namespace ts
