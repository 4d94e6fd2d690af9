#include "graph/flatten_pointwise.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "graph/passes.h"
#include "graph/workload.h"

namespace ts {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [&](int64_t d) { return d == x; });
}

// What both rules ask of conv n: a float input that is not a graph input (blocked only where
// the conv has kMinChannelsToConvert outputs to pay for converting it), constant plain weights
// and bias, a plain output.
bool flattenable_conv(const Graph& g, const Node& n) {
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const TensorInfo& w = g.tensor(n.inputs[1]);
  if (x.dtype != DType::Float32 || g.tensor(n.outputs[0]).layout.blocked() || !w.value || w.layout.blocked()) return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !g.is_constant(n.inputs[2])) return false;
  if (x.layout.blocked() && w.shape[0] < kMinChannelsToConvert) return false;
  return std::find(g.inputs.begin(), g.inputs.end(), n.inputs[0]) == g.inputs.end();
}

// Whether conv n is one the pointwise rule flattens (see the header).
bool pointwise_plain_conv(const Graph& g, const Node& n) {
  return is_pointwise_conv(g, n) && g.tensor(n.inputs[0]).shape[2] >= 2 && flattenable_conv(g, n);
}

// Node indices of the fusable elementwise ops after conv k that keep its output's shape and read
// nothing else but scalar constants (rank <= 3, so a 3-D operand keeps the result 3-D).
std::vector<size_t> elementwise_chain(const Graph& g, size_t k) {
  std::vector<size_t> chain;
  std::string t = g.nodes[k].outputs[0];
  const Shape& shape = g.tensor(t).shape;
  for (auto c = g.consumers(t); c.size() == 1 && !is_graph_output(g, t); c = g.consumers(t)) {
    const Node& n = g.nodes[c[0]];
    if (!is_fusable_elementwise(n.op) || n.outputs.size() != 1 || g.tensor(n.outputs[0]).shape != shape ||
        g.tensor(n.outputs[0]).layout.blocked())
      break;
    bool scalars = std::count(n.inputs.begin(), n.inputs.end(), t) == 1;
    for (const auto& in : n.inputs)
      if (in != t && !in.empty())
        scalars = scalars && g.is_constant(in) && g.tensor(in).value && g.tensor(in).shape.size() <= 3 &&
                  num_elements(g.tensor(in).shape) == 1;
    if (!scalars) break;
    chain.push_back(c[0]);
    t = n.outputs[0];
  }
  return chain;
}

// How a conv's input and weight become 3-D: the input reshaped (after a Slice of the columns the
// conv reads and a Transpose [0, 1, 3, 2] where they fold into the channels) to `input_shape`
// under the twin name input + `input_suffix`, the weight replaced by `weight`, and the conv's 1-D
// attributes.
struct Flattening {
  std::string input_suffix;           // "::pixels" ([N, C, H * W]) or "::columns..." ([N, C * W, H])
  int64_t columns_end = 0, columns_step = 1;  // > 0: a Slice of the columns [0, end) by step first
  bool transpose_input = false;       // W folds into the channels: Transpose [N, C, W, H] first
  Shape input_shape;                  // the 3-D input
  std::string weight_suffix;          // the weight twin's name: weight + this
  Tensor weight;                      // the 3-D weight
  std::vector<int64_t> kernel, strides, dilations, pads;  // the 1-D conv's attributes
};

// Rewrites conv k (and its elementwise `chain`) as `how` says; returns the number of nodes it
// inserted. A tensor another flattened conv reads, or wrote, already has its plain and 3-D twins
// (its name + "::plain", + the suffix): they are read, not made again (a second Reshape to
// t::pixels from the t that a Reshape of t::pixels made closed a cycle of views).
size_t flatten(Graph& g, size_t k, const std::vector<size_t>& chain, Flattening how) {
  Node& conv = g.nodes[k];
  const Shape x = g.tensor(conv.inputs[0]).shape;
  // A blocked input is converted first, by an Identity (its own step): a Reshape of a blocked
  // tensor straight to pixels computed each lane's row and column by a vector division.
  std::vector<Node> before;
  if (g.tensor(conv.inputs[0]).layout.blocked()) {
    const std::string plain = conv.inputs[0] + "::plain";
    if (!g.tensors.count(plain)) {
      g.tensors[plain] = TensorInfo{plain, DType::Float32, x, std::nullopt, {}};
      before.push_back(Node{plain + "::convert", "Identity", {conv.inputs[0]}, {plain}, {}});
    }
    conv.inputs[0] = plain;
  }
  const std::string twin_in = conv.inputs[0] + how.input_suffix;
  if (!g.tensors.count(twin_in)) {
    std::string from = conv.inputs[0];
    if (how.columns_end > 0) {
      const std::vector<int64_t> step = how.columns_step > 1 ? std::vector<int64_t>{how.columns_step} : std::vector<int64_t>{};
      before.push_back(slice_node(g, from, twin_in + "_s", {0}, {how.columns_end}, {3}, step));
      from = twin_in + "_s";
    }
    if (how.transpose_input) {
      before.push_back(transpose_node(g, from, twin_in + "_t", {0, 1, 3, 2}));
      from = twin_in + "_t";
    }
    before.push_back(reshape_node(g, from, twin_in, how.input_shape));
  }
  conv.inputs[0] = twin_in;
  const std::string twin_w = conv.inputs[1] + how.weight_suffix;
  if (!g.tensors.count(twin_w)) {
    TensorInfo w = g.tensor(conv.inputs[1]);
    w.name = twin_w;
    w.shape = how.weight.shape;
    w.value = std::move(how.weight);
    g.tensors[twin_w] = std::move(w);
  }
  conv.inputs[1] = twin_w;
  conv.attrs.erase("auto_pad");
  conv.attrs["kernel_shape"] = Attribute{how.kernel};
  conv.attrs["strides"] = Attribute{how.strides};
  conv.attrs["dilations"] = Attribute{how.dilations};
  conv.attrs["pads"] = Attribute{how.pads};
  // Every tensor of the region gets a 3-D twin; the last keeps its name, restored by a Reshape.
  std::vector<size_t> region{k};
  region.insert(region.end(), chain.begin(), chain.end());
  const std::string last = g.nodes[region.back()].outputs[0];
  const Shape y = g.tensor(last).shape;
  for (size_t r = 0; r < region.size(); r++) {
    Node& n = g.nodes[region[r]];
    const std::string from = n.outputs[0], to = from + "::pixels";
    g.tensors[to] = TensorInfo{to, g.tensor(from).dtype, {y[0], y[1], y[2] * y[3]}, std::nullopt, {}};
    n.outputs[0] = to;
    if (r + 1 < region.size()) {
      for (auto& in : g.nodes[region[r + 1]].inputs)
        if (in == from) in = to;
      g.tensors.erase(from);
    }
  }
  Node after = reshape_node(g, last + "::pixels", last, y);
  const size_t inserted = 1 + before.size();
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + inserted);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (i == k)
      for (Node& b : before) nodes.push_back(std::move(b));
    nodes.push_back(std::move(g.nodes[i]));
    if (i == region.back()) nodes.push_back(std::move(after));
  }
  g.nodes = std::move(nodes);
  return inserted;
}

// A pointwise conv over [N, C, H * W] pixels: the weight [C_out, C_in, 1, 1] as [C_out, C_in, 1].
Flattening over_pixels(const Graph& g, const Node& conv) {
  const Shape& x = g.tensor(conv.inputs[0]).shape;
  Tensor w = *g.tensor(conv.inputs[1]).value;
  w.shape.pop_back();
  return {"::pixels", 0, 1, false, {x[0], x[1], x[2] * x[3]}, "::pixels", std::move(w), {1}, {1}, {1}, {0, 0}};
}

// Whether conv n's output is one column wide with no padding along the width, read from a plain
// input (see the header): its taps read columns 0, d, ... (k - 1) * d only.
bool spans_last_axis(const Graph& g, const Node& n) {
  if (n.op != "Conv" || n.inputs.size() < 2 || n.outputs.size() != 1 || is_pointwise_conv(g, n)) return false;
  const Shape& x = g.tensor(n.inputs[0]).shape;
  const Shape& w = g.tensor(n.inputs[1]).shape;
  const Shape& y = g.tensor(n.outputs[0]).shape;
  if (x.size() != 4 || w.size() != 4 || y[3] != 1 || y[2] < 2 || !flattenable_conv(g, n)) return false;
  const auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (pads.size() != 4 || pads[1] != 0 || pads[3] != 0 || (auto_pad != "NOTSET" && auto_pad != "VALID")) return false;
  const int64_t kw = w[3], dw = n.attr_ints("dilations", {1, 1}).at(1);
  return (kw - 1) * dw < x[3] && !(kw > 1 && dw > 1 && g.opset < 10);  // Slice steps: opset 10
}

// A conv one column wide as a 1-D conv over H: the columns its taps read sliced out where they are
// not all of them; one column is a unit axis dropped ([N, C, H, 1] is [N, C, H]), more fold into
// the channels ([N, C * kw, H] after a Transpose; the weight [C_out, C_in / g, kh, kw] as
// [C_out, C_in / g * kw, kh], which keeps every channel in its group).
Flattening over_rows(const Graph& g, const Node& conv) {
  const Shape& x = g.tensor(conv.inputs[0]).shape;
  const Tensor& w = *g.tensor(conv.inputs[1]).value;
  const int64_t co = w.shape[0], ci = w.shape[1], kh = w.shape[2], kw = w.shape[3];
  Tensor w3(DType::Float32, {co, ci * kw, kh});
  for (int64_t o = 0; o < co * ci; o++)
    for (int64_t i = 0; i < kh; i++)
      for (int64_t j = 0; j < kw; j++) w3.data<float>()[(o * kw + j) * kh + i] = w.data<float>()[(o * kh + i) * kw + j];
  const auto pads = conv.attr_ints("pads", {0, 0, 0, 0});
  const auto dilations = conv.attr_ints("dilations", {1, 1});
  const int64_t step = kw > 1 ? dilations.at(1) : 1, end = (kw - 1) * step + 1;
  const bool slice = end < x[3] || step > 1;
  const std::string suffix = slice || kw > 1 ? fmt::format("::columns{}_{}", kw, step) : "::pixels";
  return {suffix, slice ? end : 0, step, kw > 1, {x[0], x[1] * kw, x[2]}, kw > 1 ? "::columns" : "::pixels", std::move(w3),
          {kh}, {conv.attr_ints("strides", {1, 1}).at(0)}, {dilations.at(0)}, {pads[0], pads[2]}};
}

}  // namespace

bool is_pointwise_conv(const Graph& g, const Node& n) {
  if (n.op != "Conv" || n.inputs.size() < 2 || n.outputs.size() != 1 || n.attr_int("group", 1) != 1) return false;
  const Shape& x = g.tensor(n.inputs[0]).shape;
  const Shape& w = g.tensor(n.inputs[1]).shape;
  return x.size() == 4 && w.size() == 4 && w[2] == 1 && w[3] == 1 && all_equal(n.attr_ints("strides", {1, 1}), 1) &&
         all_equal(n.attr_ints("pads", {0, 0, 0, 0}), 0);
}

int flatten_plain_convs(Graph& g) {
  int done = 0;
  // One pass in graph order, both rules: a conv flattened before its producer made a Reshape to
  // the twin the producer then wrote too (two producers of t::pixels).
  for (size_t k = 0; k < g.nodes.size(); k++) {
    const bool pointwise = pointwise_plain_conv(g, g.nodes[k]);
    if (!pointwise && !spans_last_axis(g, g.nodes[k])) continue;
    const std::vector<size_t> chain = elementwise_chain(g, k);
    const size_t inserted = flatten(g, k, chain, pointwise ? over_pixels(g, g.nodes[k]) : over_rows(g, g.nodes[k]));
    done++;
    k = (chain.empty() ? k : chain.back()) + inserted;  // past the region, its reshapes and conversion
  }
  // A Reshape back from pixels that every reader now bypasses (they read the pixel twin) is dead.
  if (done) remove_dead_nodes(g);
  return done;
}

}  // namespace ts
