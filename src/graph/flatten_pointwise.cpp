#include "graph/flatten_pointwise.h"

#include <algorithm>
#include <optional>

#include "graph/passes.h"
#include "graph/workload.h"

namespace ts {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [&](int64_t d) { return d == x; });
}

// Whether conv n is one the rule flattens (see the header).
bool pointwise_plain_conv(const Graph& g, const Node& n) {
  if (!is_pointwise_conv(g, n)) return false;
  const TensorInfo& x = g.tensor(n.inputs[0]);
  const TensorInfo& w = g.tensor(n.inputs[1]);
  if (x.dtype != DType::Float32 || g.tensor(n.outputs[0]).layout.blocked() || !w.value ||
      w.layout.blocked() || x.shape[2] < 2)
    return false;
  if (n.inputs.size() > 2 && !n.inputs[2].empty() && !g.is_constant(n.inputs[2])) return false;
  if (x.layout.blocked() && w.shape[0] < kMinChannelsToConvert) return false;
  return std::find(g.inputs.begin(), g.inputs.end(), n.inputs[0]) == g.inputs.end();
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

// Rewrites conv k (and its elementwise `chain`) over [N, C, H * W] pixels; returns the number of
// nodes it inserted. A tensor another flattened conv reads, or wrote, already has its plain and
// pixel twins (its name + "::plain", "::pixels"): they are read, not made again (a second Reshape
// to t::pixels from the t that a Reshape of t::pixels made closed a cycle of views).
size_t flatten(Graph& g, size_t k, const std::vector<size_t>& chain) {
  Node& conv = g.nodes[k];
  const Shape x = g.tensor(conv.inputs[0]).shape;
  // A blocked input is converted first, by an Identity (its own step): a Reshape of a blocked
  // tensor straight to pixels computed each lane's row and column by a vector division.
  std::optional<Node> convert, before;
  if (g.tensor(conv.inputs[0]).layout.blocked()) {
    const std::string plain = conv.inputs[0] + "::plain";
    if (!g.tensors.count(plain)) {
      g.tensors[plain] = TensorInfo{plain, DType::Float32, x, std::nullopt, {}};
      convert = Node{plain + "::convert", "Identity", {conv.inputs[0]}, {plain}, {}};
    }
    conv.inputs[0] = plain;
  }
  const std::string pixels_in = conv.inputs[0] + "::pixels";
  if (!g.tensors.count(pixels_in)) before = reshape_node(g, conv.inputs[0], pixels_in, {x[0], x[1], x[2] * x[3]});
  conv.inputs[0] = pixels_in;
  // The weight [C_out, C_in, 1, 1] as [C_out, C_in, 1]: the same bytes.
  const std::string w3 = conv.inputs[1] + "::pixels";
  if (!g.tensors.count(w3)) {
    TensorInfo w = g.tensor(conv.inputs[1]);
    w.name = w3;
    w.shape.pop_back();
    w.value->shape = w.shape;
    g.tensors[w3] = std::move(w);
  }
  conv.inputs[1] = w3;
  conv.attrs.erase("auto_pad");
  conv.attrs["kernel_shape"] = Attribute{std::vector<int64_t>{1}};
  conv.attrs["strides"] = Attribute{std::vector<int64_t>{1}};
  conv.attrs["dilations"] = Attribute{std::vector<int64_t>{1}};
  conv.attrs["pads"] = Attribute{std::vector<int64_t>{0, 0}};
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
  const size_t inserted = 1 + (convert ? 1 : 0) + (before ? 1 : 0);
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + inserted);
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (i == k && convert) nodes.push_back(std::move(*convert));
    if (i == k && before) nodes.push_back(std::move(*before));
    nodes.push_back(std::move(g.nodes[i]));
    if (i == region.back()) nodes.push_back(std::move(after));
  }
  g.nodes = std::move(nodes);
  return inserted;
}

}  // namespace

bool is_pointwise_conv(const Graph& g, const Node& n) {
  if (n.op != "Conv" || n.inputs.size() < 2 || n.outputs.size() != 1 || n.attr_int("group", 1) != 1) return false;
  const Shape& x = g.tensor(n.inputs[0]).shape;
  const Shape& w = g.tensor(n.inputs[1]).shape;
  return x.size() == 4 && w.size() == 4 && w[2] == 1 && w[3] == 1 && all_equal(n.attr_ints("strides", {1, 1}), 1) &&
         all_equal(n.attr_ints("pads", {0, 0, 0, 0}), 0);
}

int flatten_pointwise_convs(Graph& g) {
  int done = 0;
  for (size_t k = 0; k < g.nodes.size(); k++) {
    if (!pointwise_plain_conv(g, g.nodes[k])) continue;
    const std::vector<size_t> chain = elementwise_chain(g, k);
    const size_t inserted = flatten(g, k, chain);
    done++;
    k = (chain.empty() ? k : chain.back()) + inserted;  // past the region, its reshapes and conversion
  }
  // A Reshape back from pixels that every reader now bypasses (they read the pixel twin) is dead.
  if (done) remove_dead_nodes(g);
  return done;
}

}  // namespace ts
