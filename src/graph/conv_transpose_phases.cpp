// transposed_convs_to_phases (passes.h): a strided ConvTranspose as one Conv per output phase,
// the phases interleaved by a copy.
//
// Along an axis of stride s, full output position o = q * s + r (phase r) sums x[q - m] *
// w[r + m * s] over m: a stride-1 correlation with the kernel's phase-r taps, flipped. With
// M = ceil(K / s) taps per phase (the missing ones zero), pad M - 1 before, every phase is one
// output channel group of a single Conv: channel c * S + p for output channel c and phase p
// (S phases, row-major over the axes). Reshape, Transpose and Reshape put phase r of position q
// at q * s + r, and a Slice drops ConvTranspose's pads. A dilated kernel is a kernel with
// d - 1 zero taps between its taps; where gcd(d, s) > 1 some phases get only zeros, which costs
// their share of the conv but stays far ahead of the zero-stuffed direct lowering.
// A ConvTranspose of stride 1 on every axis is one phase: a Conv (of its groups) with the kernel
// flipped and transposed and pads taps - 1 - pad, with no copy after.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes.h"

namespace ts {

namespace {

// One spatial axis of a ConvTranspose: input length, kernel taps dilated ((K - 1) * d + 1),
// stride, the pad removed before the output, the output length, and the kernel's dilation.
struct PhaseAxis {
  int64_t in = 0, taps = 0, stride = 1, pad_begin = 0, out = 0, dilation = 1;
  int64_t kernel_taps() const { return (taps - 1) / dilation + 1; }                   // K
  int64_t phase_taps() const { return (taps + stride - 1) / stride; }                 // M
  int64_t positions() const { return (pad_begin + out - 1) / stride + 1; }            // Q: full positions / s, rounded up
  int64_t conv_out() const { return std::max(positions(), in); }                      // the phase conv's output length
};

// The axes of ConvTranspose n with output_shape and auto_pad resolved as lower/conv.cpp resolves
// them; nullopt where the pass does not apply (groups on strided axes, pads that add zeros,
// non-constant parameters, attributes the lowering must judge).
std::optional<std::vector<PhaseAxis>> phase_axes(const Graph& g, const Node& n) {
  if (n.op != "ConvTranspose" || n.inputs.size() < 2 || n.outputs.size() != 1 || !g.is_constant(n.inputs[1])) return std::nullopt;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !g.is_constant(n.inputs[2])) return std::nullopt;
  const TensorInfo& xi = g.tensor(n.inputs[0]);
  const Shape& x = xi.shape;
  const Shape& w = g.tensor(n.inputs[1]).shape;
  const Shape& y = g.tensor(n.outputs[0]).shape;
  const int64_t group = n.attr_int("group", 1);
  if (xi.dtype != DType::Float32 || x.size() < 3 || w.size() != x.size() || y.size() != x.size() || group < 1 ||
      w[0] != x[1] || x[1] % group != 0 || y[1] != w[1] * group)
    return std::nullopt;
  const size_t s = x.size() - 2;
  const auto strides = n.attr_ints("strides", std::vector<int64_t>(s, 1));
  const auto dilations = n.attr_ints("dilations", std::vector<int64_t>(s, 1));
  const auto out_pad = n.attr_ints("output_padding", std::vector<int64_t>(s, 0));
  const auto pads = n.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  auto target = n.attr_ints("output_shape");
  if (target.size() == s + 2) target.erase(target.begin(), target.begin() + 2);
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (strides.size() != s || dilations.size() != s || out_pad.size() != s || pads.size() != 2 * s ||
      (!target.empty() && target.size() != s) ||
      (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER"))
    return std::nullopt;
  std::vector<PhaseAxis> axes(s);
  bool strided = false;
  for (size_t i = 0; i < s; i++) {
    PhaseAxis& a = axes[i];
    if (dilations[i] < 1 || w[2 + i] < 1) return std::nullopt;
    a = {x[2 + i], (w[2 + i] - 1) * dilations[i] + 1, strides[i], 0, y[2 + i], dilations[i]};
    if (a.stride < 1 || a.in < 1) return std::nullopt;
    strided |= a.stride > 1;
    const int64_t full = a.stride * (a.in - 1) + out_pad[i] + a.taps;
    if (!target.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t total = full - (target.empty() ? a.in * a.stride : target[i]);
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor
      a.pad_begin = auto_pad == "SAME_UPPER" ? half : total - half;
    } else if (auto_pad == "NOTSET") {
      a.pad_begin = pads[i];
    }
    // Outputs past the full length (pads that add zeros) are left to the lowering.
    if (a.pad_begin < 0 || a.pad_begin + a.out > full || a.out < 1) return std::nullopt;
  }
  if (strided && group != 1) return std::nullopt;
  return axes;
}

bool strided(const std::vector<PhaseAxis>& axes) {
  return std::any_of(axes.begin(), axes.end(), [](const PhaseAxis& a) { return a.stride > 1; });
}

// The Conv of a stride-1 ConvTranspose n over `axes`, or nullopt where its output needs pads
// below 0 (a crop) on some axis: weight [Cin, Cout / G, K...] -> [Cout, Cin / G, K... flipped],
// dilations kept; pads taps - 1 - pad_begin before, and what makes the output length after.
std::optional<Node> stride_one_conv(Graph& g, const Node& n, const std::vector<PhaseAxis>& axes) {
  const size_t s = axes.size();
  std::vector<int64_t> pads(2 * s);
  for (size_t i = 0; i < s; i++) {
    const PhaseAxis& a = axes[i];
    pads[i] = a.taps - 1 - a.pad_begin;
    pads[s + i] = a.out - a.in - pads[i] + a.taps - 1;
    if (pads[i] < 0 || pads[s + i] < 0) return std::nullopt;
  }
  const Tensor& w = *g.tensor(n.inputs[1]).value;
  const int64_t group = n.attr_int("group", 1), cin = w.shape[0], cout_g = w.shape[1], cin_g = cin / group;
  Shape shape{cout_g * group, cin_g};
  int64_t taps = 1;
  for (size_t i = 0; i < s; i++) shape.push_back(w.shape[2 + i]), taps *= w.shape[2 + i];
  Tensor flipped(DType::Float32, shape);
  for (int64_t ci = 0; ci < cin; ci++)
    for (int64_t co = 0; co < cout_g; co++)
      for (int64_t t = 0; t < taps; t++) {
        // Tap t flipped on every axis is taps - 1 - t (row-major with each axis reversed).
        const int64_t oc = (ci / cin_g) * cout_g + co;
        flipped.data<float>()[(oc * cin_g + ci % cin_g) * taps + (taps - 1 - t)] = w.data<float>()[(ci * cout_g + co) * taps + t];
      }
  const std::string name = n.outputs[0] + "::flipped_weights";
  g.tensors[name] = TensorInfo{name, flipped.dtype, flipped.shape, flipped, {}};
  Node conv;
  conv.name = n.name;
  conv.op = "Conv";
  conv.inputs = {n.inputs[0], name};
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) conv.inputs.push_back(n.inputs[2]);
  conv.outputs = n.outputs;
  std::vector<int64_t> kernel(shape.begin() + 2, shape.end()), dilations;
  for (const auto& a : axes) dilations.push_back(a.dilation);
  conv.attrs["kernel_shape"] = Attribute{kernel};
  conv.attrs["pads"] = Attribute{pads};
  conv.attrs["strides"] = Attribute{std::vector<int64_t>(s, 1)};
  conv.attrs["dilations"] = Attribute{dilations};
  conv.attrs["group"] = Attribute{group};
  return conv;
}

// The phase conv's weight [Cout * S, Cin, M...] from ConvTranspose's [Cin, Cout, K...].
Tensor phase_weights(const Tensor& w, const std::vector<PhaseAxis>& axes) {
  const size_t s = axes.size();
  const int64_t cin = w.shape[0], cout = w.shape[1];
  int64_t phases = 1, taps = 1;
  for (const auto& a : axes) phases *= a.stride, taps *= a.phase_taps();
  Shape shape{cout * phases, cin};
  for (const auto& a : axes) shape.push_back(a.phase_taps());
  Tensor out(DType::Float32, shape);
  std::vector<int64_t> r(s), m(s);
  for (int64_t c = 0; c < cout; c++)
    for (int64_t p = 0; p < phases; p++)
      for (int64_t ci = 0; ci < cin; ci++)
        for (int64_t t = 0; t < taps; t++) {
          // Phase p and tap t, row-major over the axes; the dilated tap k = r + (M - 1 - m) * s,
          // a kernel tap where d divides it.
          int64_t pr = p, tr = t, src = ci * cout + c;
          bool inside = true;
          for (size_t i = s; i-- > 0;) {
            r[i] = pr % axes[i].stride, pr /= axes[i].stride;
            m[i] = tr % axes[i].phase_taps(), tr /= axes[i].phase_taps();
          }
          for (size_t i = 0; i < s; i++) {
            const int64_t k = r[i] + (axes[i].phase_taps() - 1 - m[i]) * axes[i].stride;
            inside &= k < axes[i].taps && k % axes[i].dilation == 0;
            src = src * axes[i].kernel_taps() + std::min(k / axes[i].dilation, axes[i].kernel_taps() - 1);
          }
          if (inside) out.data<float>()[((c * phases + p) * cin + ci) * taps + t] = w.data<float>()[src];
        }
  return out;
}

}  // namespace

int transposed_convs_to_phases(Graph& g) {
  int done = 0;
  if (g.opset < 5) return 0;  // Reshape's shape became an input in opset 5
  std::vector<Node> out;
  for (Node& n : g.nodes) {
    const auto axes = phase_axes(g, n);
    if (axes && !strided(*axes)) {
      std::optional<Node> conv = stride_one_conv(g, n, *axes);
      out.push_back(conv ? std::move(*conv) : std::move(n));
      done += conv.has_value();
      continue;
    }
    if (!axes) {
      out.push_back(std::move(n));
      continue;
    }
    const size_t s = axes->size();
    const Shape x = g.tensor(n.inputs[0]).shape;
    const Tensor& w = *g.tensor(n.inputs[1]).value;
    const int64_t cout = w.shape[1];
    int64_t phases = 1;
    for (const auto& a : *axes) phases *= a.stride;
    const std::string y = n.outputs[0], p = y + "::phase";
    auto constant = [&](const std::string& name, const Tensor& t) { g.tensors[name] = TensorInfo{name, t.dtype, t.shape, t, {}}; };

    Node conv;
    conv.name = n.name;
    conv.op = "Conv";
    const Tensor pw = phase_weights(w, *axes);
    constant(p + "_weights", pw);
    conv.inputs = {n.inputs[0], p + "_weights"};
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      const Tensor& b = *g.tensor(n.inputs[2]).value;
      Tensor pb(DType::Float32, {cout * phases});
      for (int64_t e = 0; e < pb.size(); e++) pb.data<float>()[e] = static_cast<float>(b.get_f64(e / phases));
      constant(p + "_bias", pb);
      conv.inputs.push_back(p + "_bias");
    }
    std::vector<int64_t> pads(2 * s), kernel(s);
    Shape z{x[0], cout * phases}, split{x[0], cout}, interleaved{x[0], cout};
    std::vector<int64_t> perm{0, 1};
    for (size_t i = 0; i < s; i++) {
      const PhaseAxis& a = (*axes)[i];
      kernel[i] = a.phase_taps();
      pads[i] = a.phase_taps() - 1;
      pads[s + i] = a.conv_out() - a.in;
      z.push_back(a.conv_out());
      split.push_back(a.stride);
      interleaved.push_back(a.conv_out() * a.stride);
    }
    for (size_t i = 0; i < s; i++) split.push_back(z[2 + i]);
    for (size_t i = 0; i < s; i++) perm.push_back(2 + s + i), perm.push_back(2 + i);
    conv.attrs["kernel_shape"] = Attribute{kernel};
    conv.attrs["pads"] = Attribute{pads};
    conv.attrs["strides"] = Attribute{std::vector<int64_t>(s, 1)};
    conv.outputs = {p + "_conv"};
    g.tensors[p + "_conv"] = TensorInfo{p + "_conv", DType::Float32, z, std::nullopt, {}};
    out.push_back(conv);
    // [N, Cout * S, Q...] -> [N, Cout, s..., Q...] -> [N, Cout, Q0, s0, Q1, s1, ...] -> [N, Cout, Q0 * s0, ...].
    out.push_back(reshape_node(g, p + "_conv", p + "_split", split));
    out.push_back(transpose_node(g, p + "_split", p + "_moved", perm));
    bool sliced = false;
    for (size_t i = 0; i < s; i++) sliced |= (*axes)[i].pad_begin != 0 || (*axes)[i].out != interleaved[2 + i];
    if (!sliced) {
      out.push_back(reshape_node(g, p + "_moved", y, interleaved));
    } else {
      out.push_back(reshape_node(g, p + "_moved", p + "_full", interleaved));
      std::vector<int64_t> starts, ends, slice_axes;
      for (size_t i = 0; i < s; i++) {
        starts.push_back((*axes)[i].pad_begin);
        ends.push_back((*axes)[i].pad_begin + (*axes)[i].out);
        slice_axes.push_back(static_cast<int64_t>(2 + i));
      }
      out.push_back(slice_node(g, p + "_full", y, starts, ends, slice_axes));
    }
    done++;
  }
  g.nodes = std::move(out);
  return done;
}

}  // namespace ts
