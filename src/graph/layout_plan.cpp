#include "graph/layout_plan.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "graph/passes.h"    // is_graph_output
#include "graph/workload.h"  // is_fusable_elementwise

namespace ts {

namespace {

bool is_pool(const std::string& op) {
  return op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool";
}

// A constant Pad of spatial dims only (the batch and channel pads are zero) works block by block.
bool pads_spatial_only(const Graph& g, const Node& n) {
  if (n.op != "Pad" || n.inputs.empty() || n.attr_string("mode", "constant") != "constant") return false;
  std::vector<int64_t> pads = n.attr_ints("pads");
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
    const TensorInfo& p = g.tensor(n.inputs[1]);
    if (!p.value) return false;
    pads = p.value->to_i64_vector();
  }
  if (n.inputs.size() > 3 && !n.inputs[3].empty()) return false;  // explicit axes: not worth the bookkeeping
  const size_t r = g.tensor(n.inputs[0]).shape.size();
  return pads.size() == 2 * r && pads[0] == 0 && pads[1] == 0 && pads[r] == 0 && pads[r + 1] == 0;
}

// A Transpose between channels-last and channels-first (ConvNeXt's permutes around its MLPs)
// whose channel axis is the innermost of its input (`from_last`: [N, H, W, C] -> [N, C, H, W],
// output axis 1 read from the input's last) or of its output ([N, C, H, W] -> [N, H, W, C]):
// a channel block is then a dense vector on both sides, so a blocked tensor costs the copy
// nothing and the depthwise conv next to it runs blocked (plain, or with one blocked side,
// ConvNeXt-T's 7x7 depthwise convs ran far below their blocked rate).
bool channels_last_transpose(const Graph& g, const Node& n, bool from_last) {
  if (n.op != "Transpose" || n.inputs.empty() || n.outputs.size() != 1) return false;
  const int64_t r = static_cast<int64_t>(g.tensor(n.inputs[0]).shape.size());
  const std::vector<int64_t> perm = n.attr_ints("perm");
  if (r < 3 || static_cast<int64_t>(perm.size()) != r || perm[0] != 0) return false;
  return from_last ? perm[1] == r - 1 : perm[r - 1] == 1;
}

// Whether node n computes its output `t` block by block when t is blocked.
bool blocked_producer(const Graph& g, const Node& n) {
  if (n.op == "Identity") return n.outputs.size() == 1;  // a conversion step (graph inputs)
  if (n.op == "Conv" || n.op == "BatchNormalization" || is_fusable_elementwise(n.op)) return n.outputs.size() == 1;
  if (is_pool(n.op)) return n.outputs.size() == 1;  // MaxPool's Indices output is not lowered blocked
  if (n.op == "Concat") return n.attr_int("axis", 0) == 1;
  if (channels_last_transpose(g, n, /*from_last=*/true)) return true;
  return pads_spatial_only(g, n);
}

// The channel block of a tensor of `channels` channels: the full vector when it divides C, else
// half a vector (24, 40, 56, 72 or 120 channels with 16 lanes), so narrow layers still read and
// write dense vectors; 0 = not blocked.
int64_t channel_block(int64_t channels, int64_t block) {
  if (channels % block == 0) return block;
  if (block >= 8 && channels % (block / 2) == 0) return block / 2;
  return 0;
}

// Whether node n reads input tensor `t` block by block when t is blocked: a grouped conv when
// each group's input channels fill whole blocks and its output channels whole output blocks
// (every vector of outputs then reads one group's input blocks).
using BlockOf = std::function<int64_t(const std::string&)>;  // a tensor's channel block, 0 = none
bool blocked_consumer(const Graph& g, const Node& n, const std::string& t, const BlockOf& block_of) {
  if (n.op == "Conv") {
    if (n.inputs.empty() || n.inputs[0] != t) return false;  // weights and bias stay plain
    const int64_t group = n.attr_int("group", 1);
    const Shape& x = g.tensor(t).shape;
    const Shape& y = g.tensor(n.outputs[0]).shape;
    if (group == 1 || (group == x[1] && group == y[1])) return true;
    const int64_t bx = block_of(t), by = block_of(n.outputs[0]);
    return group > 0 && bx > 0 && by > 0 && (x[1] / group) % bx == 0 && (y[1] / group) % by == 0;
  }
  if (is_pool(n.op) || n.op == "BatchNormalization") return !n.inputs.empty() && n.inputs[0] == t;
  if (n.op == "Concat") return n.attr_int("axis", 0) == 1;
  if (is_fusable_elementwise(n.op)) return n.outputs.size() == 1 && g.tensor(n.outputs[0]).shape == g.tensor(t).shape;
  if (channels_last_transpose(g, n, /*from_last=*/false)) return true;
  if (n.op == "Identity") return true;  // a conversion step (graph outputs)
  if (n.op == "Slice" && n.attr_int(kUnpadAttr, 0) == 1) return true;  // one that drops padded channels
  return pads_spatial_only(g, n) && n.inputs[0] == t;
}

// The rows (M) and columns (N) of a MatMul or Gemm whose B is a float32 2-D constant, and whether
// B is stored [N, K] already; nullopt for any other node.
struct MatmulShape {
  int64_t m = 0, n = 0;
  bool b_nk = false;
};
std::optional<MatmulShape> constant_b_matmul(const Graph& g, const Node& n) {
  if ((n.op != "MatMul" && n.op != "Gemm") || n.inputs.size() < 2 || n.inputs[1].empty() || !g.is_constant(n.inputs[1]))
    return std::nullopt;
  const TensorInfo& a = g.tensor(n.inputs[0]);
  const TensorInfo& b = g.tensor(n.inputs[1]);
  if (b.dtype != DType::Float32 || b.shape.size() != 2 || a.shape.size() < 2) return std::nullopt;
  MatmulShape s;
  if (n.op == "Gemm") {
    s.m = n.attr_int("transA", 0) ? a.shape[1] : a.shape[0];
    s.b_nk = n.attr_int("transB", 0) != 0;
  } else {
    s.m = num_elements(a.shape) / std::max<int64_t>(a.shape.back(), 1);  // every row of every batch meets the one B
    s.b_nk = n.attr_int(kTransposedBAttr, 0) != 0;
  }
  s.n = s.b_nk ? b.shape[0] : b.shape[1];
  return s;
}

// Stores the constant B of every MatMul / Gemm that qualifies (header) as [N, K] panels.
int plan_matmul_panels(Graph& g, int64_t panel) {
  int planned = 0;
  for (Node& n : g.nodes) {
    const auto s = constant_b_matmul(g, n);
    // Matrix-vector products (M <= 4) read B along k as it is (lower/gemm.cpp's dot form).
    if (!s || s->m <= 4 || s->n % panel != 0) continue;
    std::string b = n.inputs[1];
    if (g.consumers(b).size() != 1) continue;  // shared weights keep their one layout
    if (!s->b_nk) {
      const Tensor nk = g.tensor(b).value->transposed_2d();  // [K, N] -> [N, K]
      const std::string t = b + "::nk";
      g.tensors[t] = TensorInfo{t, DType::Float32, nk.shape, nk, {}};
      if (std::find(g.outputs.begin(), g.outputs.end(), b) == g.outputs.end()) g.tensors.erase(b);
      n.inputs[1] = b = t;
      if (n.op == "Gemm") n.attrs["transB"] = Attribute{int64_t{1}};
      else n.attrs[kTransposedBAttr] = Attribute{int64_t{1}};
    }
    g.tensor(b).layout = Layout{0, panel};
    planned++;
  }
  return planned;
}

// Grouped convs whose groups are narrower than a channel block (ResNeXt's 4 and 8 channels per
// group, RegNet's 8) read an input block across several groups: every output vector would need
// its own input values (a gather). Widened, f = block / (C_in / group) neighbouring groups make
// one group of a whole block, their weights zero outside the original groups: f times the
// multiplies, but as a blocked conv at the register-tile rate (see layout_plan.h).
int widen_groups_to_blocks(Graph& g, int64_t block) {
  int widened = 0;
  for (Node& n : g.nodes) {
    if (n.op != "Conv" || n.inputs.size() < 2 || n.outputs.size() != 1 || !g.is_constant(n.inputs[1])) continue;
    const int64_t group = n.attr_int("group", 1);
    const TensorInfo& w = g.tensor(n.inputs[1]);
    const Shape& x = g.tensor(n.inputs[0]).shape;
    if (group <= 1 || w.dtype != DType::Float32 || w.shape.size() < 3 || x.size() != w.shape.size() || !w.value)
      continue;
    const int64_t cin = x[1], cout = w.shape[0], cg = w.shape[1];
    const int64_t bx = channel_block(cin, block), by = channel_block(cout, block);
    if (cg == 1 || bx == 0 || by == 0 || cg * group != cin || cg % bx == 0 || bx % cg != 0) continue;
    const int64_t f = bx / cg, wide_groups = group / f;
    if (f > kMaxGroupWidening || group % f != 0 || (cout / wide_groups) % by != 0) continue;
    const int64_t mg = cout / group, kernel = num_elements(w.shape) / (cout * cg);
    Shape shape = w.shape;
    shape[1] = bx;
    Tensor wide(DType::Float32, shape);  // zero-filled
    const float* src = w.value->data<float>();
    float* dst = wide.data<float>();
    for (int64_t m = 0; m < cout; m++) {
      const int64_t offset = (m / mg) % f * cg;  // the original group's place in the wide one
      for (int64_t c = 0; c < cg; c++)
        std::copy_n(src + (m * cg + c) * kernel, kernel, dst + (m * bx + offset + c) * kernel);
    }
    const std::string name = n.inputs[1] + "::groups" + std::to_string(wide_groups);
    const std::string old = n.inputs[1];
    g.tensors[name] = TensorInfo{name, DType::Float32, shape, std::move(wide), {}};
    n.inputs[1] = name;
    n.attrs["group"] = Attribute{wide_groups};
    if (g.consumers(old).empty() && std::find(g.outputs.begin(), g.outputs.end(), old) == g.outputs.end())
      g.tensors.erase(old);
    widened++;
  }
  return widened;
}

// Unary ops that keep a zero channel finite (its value is then multiplied by a zero weight).
bool finite_on_zero(const std::string& op) {
  static const std::set<std::string> ops{"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                                         "HardSwish", "Elu", "Selu", "Celu", "Gelu", "Neg", "Abs", "Identity"};
  return ops.count(op) > 0;
}

// The tensors from conv output `y` through unary ops to the convs that read them (`readers`:
// node index and input slot 0), or false when another reader, a graph output or an op that
// might turn a zero channel into an infinity lies on the way.
bool conv_to_conv_chain(const Graph& g, const std::string& y, std::vector<std::string>& chain, std::vector<size_t>& readers) {
  if (std::find(g.outputs.begin(), g.outputs.end(), y) != g.outputs.end()) return false;
  chain.push_back(y);
  for (size_t c : g.consumers(y)) {
    const Node& n = g.nodes[c];
    if (n.op == "Conv") {
      if (n.inputs[0] != y || n.attr_int("group", 1) != 1 || n.inputs.size() < 2 || !g.is_constant(n.inputs[1]) ||
          !g.tensor(n.inputs[1]).value || g.tensor(n.inputs[1]).dtype != DType::Float32)
        return false;
      readers.push_back(c);
      continue;
    }
    if (!finite_on_zero(n.op) || n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] != y) return false;
    for (size_t i = 1; i < n.inputs.size(); i++)
      if (!n.inputs[i].empty() && !g.is_constant(n.inputs[i])) return false;
    if (!conv_to_conv_chain(g, n.outputs[0], chain, readers)) return false;
  }
  return !readers.empty();
}

// `t` with axis `axis` (0 or 1) grown to `size`, zeros in the new rows / columns, under a new name.
std::string pad_constant_axis(Graph& g, const std::string& t, int axis, int64_t size) {
  const TensorInfo& info = g.tensor(t);
  const Shape& from = info.shape;
  Shape to = from;
  to[axis] = size;
  Tensor padded(DType::Float32, to);  // zero-filled
  const int64_t outer = axis == 0 ? 1 : from[0], inner = num_elements(from) / (outer * from[axis]);
  const float* src = info.value->data<float>();
  float* dst = padded.data<float>();
  for (int64_t o = 0; o < outer; o++)
    std::copy_n(src + o * from[axis] * inner, from[axis] * inner, dst + o * size * inner);
  const std::string name = t + (axis == 0 ? "::pad_out" : "::pad_in") + std::to_string(size);
  g.tensors[name] = TensorInfo{name, DType::Float32, to, std::move(padded), {}};
  return name;
}

// Convs whose output channels do not block (R(2+1)D's 230, 460 and 921) write zero channels up
// to a whole block when only unary ops and convs read them: see layout_plan.h.
int pad_channels_to_blocks(Graph& g, int64_t block) {
  int padded = 0;
  for (size_t k = 0; k < g.nodes.size(); k++) {
    Node& a = g.nodes[k];
    if (a.op != "Conv" || a.outputs.size() != 1 || a.inputs.size() < 2 || a.attr_int("group", 1) != 1) continue;
    const TensorInfo& w = g.tensor(a.inputs[1]);
    const Shape& y = g.tensor(a.outputs[0]).shape;
    if (!w.value || w.dtype != DType::Float32 || y.size() < 3 || y.size() > 5 || channel_block(y[1], block) != 0) continue;
    const int64_t c = y[1], wide = (c + block - 1) / block * block;
    if ((wide - c) * kMaxChannelPadding > c) continue;
    std::vector<std::string> chain;
    std::vector<size_t> readers;
    const bool bias = a.inputs.size() > 2 && !a.inputs[2].empty();
    if (bias && !g.tensor(a.inputs[2]).value) continue;
    if (!conv_to_conv_chain(g, a.outputs[0], chain, readers)) continue;
    std::vector<std::string> replaced{a.inputs[1]};
    a.inputs[1] = pad_constant_axis(g, a.inputs[1], 0, wide);
    if (bias) {
      replaced.push_back(a.inputs[2]);
      a.inputs[2] = pad_constant_axis(g, a.inputs[2], 0, wide);
    }
    for (size_t r : readers) {
      replaced.push_back(g.nodes[r].inputs[1]);
      g.nodes[r].inputs[1] = pad_constant_axis(g, g.nodes[r].inputs[1], 1, wide);
    }
    for (const std::string& t : chain) g.tensor(t).shape[1] = wide;
    for (const std::string& t : replaced)
      if (g.tensors.count(t) && g.consumers(t).empty() && std::find(g.outputs.begin(), g.outputs.end(), t) == g.outputs.end())
        g.tensors.erase(t);
    padded++;
  }
  return padded;
}

// A float32 activation of rank 3 to 5 whose channels fill whole vectors.
bool whole_block_activation(const TensorInfo& t, int64_t block) {
  return t.dtype == DType::Float32 && t.shape.size() >= 3 && t.shape.size() <= 5 && !t.value && t.shape[1] % block == 0;
}

// Whether conv n reads input `t` (its data input) as a blocked consumer: group 1 or depthwise.
bool conv_reads_whole_blocks(const Graph& g, const Node& n, const std::string& t) {
  if (n.op != "Conv" || n.inputs.empty() || n.inputs[0] != t || n.outputs.size() != 1) return false;
  const int64_t group = n.attr_int("group", 1);
  return group == 1 || (group == g.tensor(t).shape[1] && group == g.tensor(n.outputs[0]).shape[1]);
}

// The conv that computes graph output y, through single-reader elementwise ops; nullopt if none.
std::optional<size_t> conv_behind(const Graph& g, const std::string& y, const std::map<std::string, size_t>& producer) {
  std::string t = y;
  for (int hops = 0; hops < 8 && producer.count(t); hops++) {
    const Node& n = g.nodes[producer.at(t)];
    if (n.op == "Conv") return n.outputs.size() == 1 ? std::optional<size_t>(producer.at(t)) : std::nullopt;
    if (!is_fusable_elementwise(n.op) || n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
    const std::string& x = n.inputs[0];
    if (x.empty() || g.tensor(x).value || g.tensor(x).shape != g.tensor(t).shape || g.consumers(x).size() != 1)
      return std::nullopt;
    t = x;
  }
  return std::nullopt;
}

// Graph inputs read by convs and graph outputs a conv computes, of whole channel blocks, get an
// Identity step that converts between their declared layout and a blocked twin (what ONNX
// Runtime's ReorderInput / ReorderOutput do), where the convs run slowly plain (layout_plan.h).
struct IoTwin {
  std::string twin;   // the blocked tensor
  std::string io;     // the graph input or output it converts
  bool input = true;  // true: io -> twin; false: twin -> io
};

// Plain, a conv vectorizes along its output rows and reduces with broadcast scalars: rows
// narrower than two vectors waste lanes, long reductions reload their vectors per scalar.
bool narrow_rows(const Graph& g, const Node& conv, int64_t block) {
  return g.tensor(conv.outputs[0]).shape.back() < 2 * block;
}
bool runs_slow_plain(const Graph& g, const Node& conv, int64_t block) {
  const Shape& w = g.tensor(conv.inputs[1]).shape;
  return narrow_rows(g, conv, block) || num_elements(w) / std::max<int64_t>(w[0], 1) >= kMinReductionToConvert;
}

// Converts the graph inputs whose convs run slowly plain; returns the conversions (run first).
std::vector<Node> convert_inputs_at_convs(Graph& g, int64_t block, std::vector<IoTwin>& twins) {
  std::vector<Node> conversions;
  for (const std::string& x : g.inputs) {
    if (!g.tensors.count(x) || !whole_block_activation(g.tensor(x), block) || is_graph_output(g, x)) continue;
    std::vector<size_t> convs;
    bool slow = false;
    for (size_t c : g.consumers(x))
      if (conv_reads_whole_blocks(g, g.nodes[c], x)) {
        convs.push_back(c);
        slow = slow || runs_slow_plain(g, g.nodes[c], block);
      }
    if (!slow) continue;
    const std::string twin = x + "::blocked";
    g.tensors[twin] = TensorInfo{twin, DType::Float32, g.tensor(x).shape, std::nullopt, {}};
    for (size_t c : convs) g.nodes[c].inputs[0] = twin;
    conversions.push_back(Node{twin + "::convert", "Identity", {x}, {twin}, {}});
    twins.push_back({twin, x, true});
  }
  return conversions;
}

// Converts the graph outputs whose conv pays for it; returns {producer node: its conversion}.
std::map<size_t, Node> convert_outputs_at_convs(Graph& g, int64_t block, std::vector<IoTwin>& twins) {
  std::map<std::string, size_t> producer;
  for (size_t k = 0; k < g.nodes.size(); k++)
    for (const auto& o : g.nodes[k].outputs)
      if (!o.empty()) producer[o] = k;
  std::map<size_t, Node> conversions;
  for (const std::string& y : g.outputs) {
    if (!g.tensors.count(y) || !whole_block_activation(g.tensor(y), block) || !producer.count(y)) continue;
    const std::optional<size_t> conv = std::count(g.outputs.begin(), g.outputs.end(), y) == 1 ? conv_behind(g, y, producer) : std::nullopt;
    if (!conv) continue;
    // A conv reading an activation (blocked, most likely, or the twin of a converted input) and
    // writing plain gathers its input per vector; one reading a plain graph input runs plain
    // well unless its rows are narrow.
    const Node& c = g.nodes[*conv];
    const bool reads_activation = std::find(g.inputs.begin(), g.inputs.end(), c.inputs[0]) == g.inputs.end();
    const double per_value = static_cast<double>(node_flops(g, c)) / static_cast<double>(num_elements(g.tensor(y).shape));
    if (!narrow_rows(g, c, block) && !(reads_activation && per_value >= kMinConvFlopsPerConvertedValue)) continue;
    const std::string twin = y + "::blocked";
    const size_t k = producer.at(y);
    g.tensors[twin] = TensorInfo{twin, DType::Float32, g.tensor(y).shape, std::nullopt, {}};
    for (Node& n : g.nodes)
      for (auto& in : n.inputs)
        if (in == y) in = twin;  // the graph's own readers stay on the blocked side
    for (auto& o : g.nodes[k].outputs)
      if (o == y) o = twin;
    conversions.emplace(k, Node{twin + "::convert", "Identity", {twin}, {y}, {}});
    twins.push_back({twin, y, false});
  }
  return conversions;
}

// g's nodes after `first`, each followed by its entry in `after` (keyed by node index).
void splice_after(Graph& g, std::vector<Node> first, std::map<size_t, Node> after) {
  for (size_t k = 0; k < g.nodes.size(); k++) {
    first.push_back(std::move(g.nodes[k]));
    if (after.count(k)) first.push_back(std::move(after.at(k)));
  }
  g.nodes = std::move(first);
}

// Both conversions, spliced into g's nodes; returns the twins (renamed back by the caller where
// the rule leaves them plain).
std::vector<IoTwin> convert_graph_io_at_convs(Graph& g, int64_t block) {
  std::vector<IoTwin> twins;
  std::vector<Node> nodes = convert_inputs_at_convs(g, block, twins);
  std::map<size_t, Node> after = convert_outputs_at_convs(g, block, twins);
  if (!twins.empty()) splice_after(g, std::move(nodes), std::move(after));
  return twins;
}

// Undoes convert_graph_io_at_convs for a twin the rule left plain: a plain-to-plain copy step.
void drop_io_twin(Graph& g, const IoTwin& t) {
  const auto conversion = std::find_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return n.op == "Identity" && n.outputs.size() == 1 && n.outputs[0] == (t.input ? t.twin : t.io);
  });
  if (conversion != g.nodes.end()) g.nodes.erase(conversion);
  for (Node& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == t.twin) in = t.io;
    for (auto& o : n.outputs)
      if (o == t.twin) o = t.io;
  }
  g.tensors.erase(t.twin);
}

// Tensors a grouped conv reads or writes in groups of an odd multiple of half a block (RegNet's
// 24 channels per group) take half blocks, so that each group still fills whole blocks.
std::set<std::string> half_block_tensors(const Graph& g, int64_t block) {
  std::set<std::string> halved;
  for (const Node& n : g.nodes) {
    const int64_t group = n.attr_int("group", 1);
    if (n.op != "Conv" || group <= 1 || n.inputs.empty() || n.outputs.size() != 1) continue;
    for (const std::string& t : {n.inputs[0], n.outputs[0]}) {
      const Shape& s = g.tensor(t).shape;
      if (s.size() < 2 || s[1] == group) continue;
      const int64_t per_group = s[1] / group;
      if (per_group % block != 0 && block >= 8 && per_group % (block / 2) == 0) halved.insert(t);
    }
  }
  // Same-shaped operands and results of elementwise ops (the conv's fused BatchNorm and ReLU)
  // follow, so that no workload converts between the two blocks.
  for (bool changed = !halved.empty(); changed;) {
    changed = false;
    for (const Node& n : g.nodes) {
      if (n.outputs.size() != 1 || !(is_fusable_elementwise(n.op) || n.op == "BatchNormalization")) continue;
      const Shape& y = g.tensor(n.outputs[0]).shape;
      std::vector<std::string> same{n.outputs[0]};
      for (const auto& in : n.inputs)
        if (!in.empty() && !g.tensor(in).value && g.tensor(in).shape == y) same.push_back(in);
      const bool any = std::any_of(same.begin(), same.end(), [&](const std::string& t) { return halved.count(t) > 0; });
      for (const auto& t : same) changed |= any && halved.insert(t).second;
    }
  }
  return halved;
}

// Convs the rule leaves plain that run slowly so (group 1, a long reduction, narrow rows or an
// activation read with kMinConvFlopsPerConvertedValue per output value, of at least
// kMinConvertedConvFlops) write a blocked twin instead, with zero filters up to whole
// blocks where their channels do not block, and a Slice of the real channels (a conversion step,
// marked kUnpadAttr) writes the plain tensor their readers read (layout_plan.h). Returns the
// twins with their blocks.
std::map<std::string, int64_t> block_slow_plain_convs(Graph& g, int64_t block, const std::map<std::string, int64_t>& blocked) {
  std::map<std::string, int64_t> twins;
  std::map<size_t, Node> conversions;  // by the conv they follow
  for (size_t k = 0; k < g.nodes.size(); k++) {
    Node& a = g.nodes[k];
    if (a.op != "Conv" || a.outputs.size() != 1 || a.inputs.size() < 2 || a.attr_int("group", 1) != 1) continue;
    const std::string y = a.outputs[0];
    const TensorInfo& w = g.tensor(a.inputs[1]);
    const bool bias = a.inputs.size() > 2 && !a.inputs[2].empty();
    const Shape shape = g.tensor(y).shape;
    if (blocked.count(y) || !w.value || w.dtype != DType::Float32 || shape.size() < 3 || shape.size() > 5 ||
        g.tensor(y).dtype != DType::Float32 || (bias && !g.tensor(a.inputs[2]).value))
      continue;
    const int64_t reduction = num_elements(w.shape) / std::max<int64_t>(w.shape[0], 1);
    // As at a graph output (convert_outputs_at_convs): rows too narrow for vectors, or an
    // activation read (blocked, most likely) by a conv writing plain, which gathers its input
    // per vector (a 3x3 conv of 64 -> 128 channels over 80 x 80 feeding a Reshape: 36 GFLOP/s
    // plain, 277 blocked; a 2x2 one whose output outgrows its input: 4).
    const bool reads_activation = std::find(g.inputs.begin(), g.inputs.end(), a.inputs[0]) == g.inputs.end();
    const double per_value = static_cast<double>(node_flops(g, a)) / static_cast<double>(num_elements(shape));
    if (!(narrow_rows(g, a, block) || (reads_activation && per_value >= kMinConvFlopsPerConvertedValue)) ||
        reduction < kMinReductionToConvert || node_flops(g, a) < kMinConvertedConvFlops)
      continue;
    // A whole vector per block unless half a vector pads far fewer channels (5 -> 8, not 16).
    const int64_t c = shape[1], full = (c + block - 1) / block * block, half = block >= 8 ? (c + block / 2 - 1) / (block / 2) * (block / 2) : full;
    const int64_t wide = full == half || (full - c) * kMaxChannelPadding <= c ? full : half;
    if (wide != c) {
      a.inputs[1] = pad_constant_axis(g, a.inputs[1], 0, wide);
      if (bias) a.inputs[2] = pad_constant_axis(g, a.inputs[2], 0, wide);
    }
    const std::string twin = y + "::blocked";
    Shape twin_shape = shape;
    twin_shape[1] = wide;
    g.tensors[twin] = TensorInfo{twin, DType::Float32, twin_shape, std::nullopt, {}};
    a.outputs[0] = twin;
    Node convert{twin + "::convert", wide == c ? "Identity" : "Slice", {twin}, {y}, {}};
    if (wide != c) {
      convert.attrs[kUnpadAttr] = Attribute{int64_t{1}};
      for (const auto& [part, value] : std::vector<std::pair<std::string, int64_t>>{{"starts", 0}, {"ends", c}, {"axes", 1}}) {
        const std::string t = twin + "::" + part;
        g.tensors[t] = TensorInfo{t, DType::Int64, {1}, Tensor::from_i64({value}, {1}), {}};
        convert.inputs.push_back(t);
      }
    }
    twins[twin] = channel_block(wide, block);
    conversions.emplace(k, std::move(convert));
  }
  if (!conversions.empty()) splice_after(g, {}, std::move(conversions));  // else g.nodes stay as they are
  return twins;
}

// Packs by output-channel block the weights of convs writing blocked outputs, where every reader
// of the weight is such a conv with the same block. Returns how many it packed.
int pack_conv_weights(Graph& g, const std::map<std::string, int64_t>& blocked) {
  int packed = 0;
  std::map<std::string, int64_t> weight_ok;  // weight -> block all its readers want (0 = plain)
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.inputs.size(); i++) {
      const std::string& t = n.inputs[i];
      if (t.empty() || !g.tensor(t).value) continue;
      const int64_t b = n.op == "Conv" && i == 1 && blocked.count(n.outputs[0]) ? blocked.at(n.outputs[0]) : 0;
      const bool packable = b > 0 && g.tensor(t).shape.size() >= 3 && g.tensor(t).shape[0] % b == 0 &&
                            g.tensor(t).dtype == DType::Float32;
      auto it = weight_ok.emplace(t, packable ? b : 0).first;
      if (it->second != (packable ? b : 0)) it->second = 0;  // readers that disagree: keep it plain
    }
  for (const auto& [t, b] : weight_ok)
    if (b > 0) {
      g.tensor(t).layout = Layout{0, b};
      packed++;
    }
  return packed;
}

}  // namespace

LayoutPlanStats plan_layouts(Graph& g, int64_t block) {
  for (auto& [name, info] : g.tensors) info.layout = Layout{};
  LayoutPlanStats stats;
  if (block < 2) return stats;
  stats.widened_groups = widen_groups_to_blocks(g, block);
  stats.padded_channels = pad_channels_to_blocks(g, block);
  const std::vector<IoTwin> twins = convert_graph_io_at_convs(g, block);
  std::map<std::string, size_t> producer;
  for (size_t k = 0; k < g.nodes.size(); k++)
    for (const auto& o : g.nodes[k].outputs)
      if (!o.empty()) producer[o] = k;
  const std::set<std::string> io(g.inputs.begin(), g.inputs.end());
  std::set<std::string> outputs(g.outputs.begin(), g.outputs.end());
  const std::set<std::string> halved = half_block_tensors(g, block);
  const BlockOf block_of = [&](const std::string& t) {
    const int64_t c = g.tensor(t).shape.size() >= 2 ? g.tensor(t).shape[1] : 0;
    return halved.count(t) ? block / 2 : channel_block(c, block);
  };
  std::map<std::string, int64_t> blocked;
  for (const auto& [name, info] : g.tensors) {
    const int r = static_cast<int>(info.shape.size());
    if (info.dtype != DType::Float32 || (r < 3 || r > 5) || block_of(name) == 0 || info.value ||
        io.count(name) || outputs.count(name) || !producer.count(name))
      continue;
    if (!blocked_producer(g, g.nodes[producer.at(name)])) continue;
    // A pooled [N, C, 1, 1] may feed anything: converting C values where it is read costs less
    // than a pool gathering its input across blocks.
    const bool one_pixel = num_elements(info.shape) == info.shape[0] * info.shape[1];
    bool ok = true;
    for (size_t c : g.consumers(name)) ok = ok && (one_pixel || blocked_consumer(g, g.nodes[c], name, block_of));
    if (ok) blocked[name] = block_of(name);
  }
  // An elementwise or concat output stays plain when a same-shaped (or concatenated) operand is plain.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Node& n : g.nodes) {
      if (n.outputs.size() != 1 || !blocked.count(n.outputs[0]) || n.op == "Conv" || n.op == "Identity" || is_pool(n.op))
        continue;
      const Shape& y = g.tensor(n.outputs[0]).shape;
      for (const auto& in : n.inputs) {
        if (in.empty() || blocked.count(in)) continue;
        const Shape& x = g.tensor(in).shape;
        const bool full = n.op == "Concat" ? true : (n.op == "BatchNormalization" ? in == n.inputs[0] : x == y);
        if (!full) continue;
        blocked.erase(n.outputs[0]);
        changed = true;
        break;
      }
    }
  }
  for (const IoTwin& t : twins) {
    if (blocked.count(t.twin)) stats.io_conversions++;
    else drop_io_twin(g, t);
  }
  const std::map<std::string, int64_t> slow = block_slow_plain_convs(g, block, blocked);
  blocked.insert(slow.begin(), slow.end());
  stats.slow_plain_convs = static_cast<int>(slow.size());
  for (const auto& [name, b] : blocked) g.tensor(name).layout = Layout{1, b};
  stats.blocked_activations = static_cast<int>(blocked.size());

  stats.packed_weights = pack_conv_weights(g, blocked);
  stats.matmul_panels = plan_matmul_panels(g, 2 * block);
  return stats;
}

}  // namespace ts
