#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "graph/passes.h"
#include "graph/winograd.h"
#include "graph/workload.h"

namespace ts {

namespace {

// Constants that shape the computation are part of the workload (and of its key): integer
// vectors (shapes, axes, pads, indices), scalars, and Resize/Upsample's roi and scales. Other
// constants (weights) are inputs of the compiled pipeline, so equal workloads share code.
constexpr int64_t kMaxEmbeddedIntegers = 64;

// The longest chain fused into one workload. Real networks fuse 1-5 ops after an anchor; a longer
// chain is split, because Halide's compile time of one fused chain grows about cubically with
// its length, while split chains compile in linear time (and equal pieces once).
constexpr size_t kMaxFusedNodes = 24;

bool embed_constant(const Tensor& t, const std::string& op, size_t slot) {
  if (t.size() <= 1) return true;
  if (!dtype_is_float(t.dtype) && t.size() <= kMaxEmbeddedIntegers) return true;
  return (op == "Resize" || op == "Upsample") && slot >= 1;
}

const std::set<std::string>& fusable_ops() {
  static const std::set<std::string> s = {
      "Relu", "LeakyRelu", "Elu", "Celu", "Selu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Softplus",
      "Softsign", "ThresholdedRelu", "Erf", "Gelu", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Abs",
      "Neg", "Sign", "Clip", "Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Min", "Max", "Sum", "Mean", "Where",
      "Cast", "Not", "And", "Or", "Xor", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"};
  return s;
}

const std::set<std::string>& anchor_ops() {
  static const std::set<std::string> s = {
      "Conv", "ConvTranspose", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
      "LpPool", "GlobalLpPool", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
      "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp", "ArgMax", "ArgMin", "Softmax",
      "LogSoftmax", "Hardmax", "BatchNormalization", "LayerNormalization", "InstanceNormalization"};
  return s;
}

std::string attr_text(const Attribute& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{:.9g}", v);
        else if constexpr (std::is_same_v<T, std::string>) return "\"" + v + "\"";
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return fmt::format("[{}]", fmt::join(v, ","));
        else if constexpr (std::is_same_v<T, std::vector<double>>) return fmt::format("[{:.9g}]", fmt::join(v, ","));
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) return fmt::format("[{}]", fmt::join(v, ","));
        else return fmt::format("tensor{}{}:{}", dtype_name(v.dtype), shape_str(v.shape), fnv1a_hex(std::string(v.bytes.begin(), v.bytes.end())));
      },
      a.value);
}

// The class key's part of a layout: which axis is blocked, not by how much (the block follows the
// channel count, a size).
std::string layout_class(const Layout& l) { return l.blocked() ? fmt::format("@{}c", l.axis) : ""; }

// Attributes that are sizes: tuning-reuse carries a schedule across them (refit), so the class
// key leaves them out.
bool is_size_attribute(const std::string& a) {
  static const std::set<std::string> sizes = {"kernel_shape", "strides", "pads", "dilations", "output_padding",
                                              "output_shape", "auto_pad"};
  return sizes.count(a) > 0;
}

// A node's attributes as the class key sees them: no sizes, no float values or tensors (they
// change what is computed, not how it is scheduled), and a conv's group as its kind: 1,
// depthwise (one input channel per group) or grouped; these lower to different algorithms.
std::string class_attributes(const Graph& g, const Node& n) {
  std::string text;
  for (const auto& [a, v] : n.attrs) {
    if (is_size_attribute(a) || std::holds_alternative<double>(v.value) ||
        std::holds_alternative<std::vector<double>>(v.value) || std::holds_alternative<Tensor>(v.value))
      continue;
    if (a == "group" && (n.op == "Conv" || n.op == "ConvTranspose")) {
      const int64_t group = std::get<int64_t>(v.value);
      const Shape& x = g.tensor(n.inputs[0]).shape;
      if (group != 1) text += x.size() > 1 && x[1] == group ? " group=depthwise" : " group=grouped";
      continue;
    }
    text += " " + a + "=" + attr_text(v);
  }
  return text;
}

// Builds the canonical subgraph of `nodes` and its two keys.
Workload make_workload(const Graph& g, const std::vector<size_t>& nodes, WorkloadStep& step) {
  Workload w;
  w.graph.path = g.path;
  w.graph.opset = g.opset;
  std::map<std::string, std::string> canon;  // model tensor -> canonical name
  std::set<std::string> produced;
  for (size_t k : nodes)
    for (const auto& o : g.nodes[k].outputs) produced.insert(o);
  int n_in = 0, n_tmp = 0;
  std::ostringstream exact, cls;
  auto name_of = [&](const std::string& t, const std::string& op, size_t slot) -> std::string {
    if (t.empty()) return "";
    if (auto it = canon.find(t); it != canon.end()) return it->second;
    const TensorInfo& info = g.tensor(t);
    std::string c;
    bool embed = info.value && embed_constant(*info.value, op, slot);
    if (produced.count(t)) {
      c = fmt::format("t{}", n_tmp++);
    } else {
      c = embed ? fmt::format("k{}", n_in++) : fmt::format("in{}", n_in++);
      const Layout layout = embed ? Layout{} : info.layout;  // embedded constants are read plain
      w.graph.tensors[c] = TensorInfo{c, info.dtype, info.shape, embed ? info.value : std::nullopt, layout};
      if (!embed) {
        w.graph.inputs.push_back(c);
        step.inputs.push_back(t);
        if (info.value) w.constant_inputs.push_back(c);
      }
      std::string v = embed ? attr_text(Attribute{*info.value}) : "";
      exact << c << ":" << dtype_name(info.dtype) << shape_str(info.shape) << layout_suffix(layout) << v << ";";
      cls << c << ":" << dtype_name(info.dtype) << layout_class(layout) << ";";
    }
    canon[t] = c;
    return c;
  };
  for (size_t k : nodes) {
    const Node& n = g.nodes[k];
    Node cn;
    cn.op = n.op;
    cn.attrs = n.attrs;
    cn.name = fmt::format("{}_{}", n.op, w.graph.nodes.size());
    for (size_t i = 0; i < n.inputs.size(); i++) cn.inputs.push_back(name_of(n.inputs[i], n.op, i));
    std::vector<std::string> out_text, out_class;  // outputs with their layouts: a blocked output is another algorithm
    for (const auto& o : n.outputs) {
      std::string c = name_of(o, n.op, 0);
      cn.outputs.push_back(c);
      out_text.push_back(o.empty() ? c : c + layout_suffix(g.tensor(o).layout));
      out_class.push_back(o.empty() ? c : c + layout_class(g.tensor(o).layout));
      if (!o.empty()) w.graph.tensors[c] = TensorInfo{c, g.tensor(o).dtype, g.tensor(o).shape, std::nullopt, g.tensor(o).layout};
    }
    const std::string op_text = cn.op + "(" + fmt::format("{}", fmt::join(cn.inputs, ",")) + ")->";
    std::string text = op_text + fmt::format("{}", fmt::join(out_text, ","));
    for (const auto& [a, v] : cn.attrs) text += " " + a + "=" + attr_text(v);
    exact << text << ";";
    cls << op_text << fmt::format("{}", fmt::join(out_class, ",")) << class_attributes(g, n) << ";";
    w.name += (w.name.empty() ? "" : "+") + n.op;
    w.flops += node_flops(g, n);
    w.graph.nodes.push_back(std::move(cn));
  }
  // Outputs: tensors read outside the group or graph outputs.
  std::set<size_t> inside(nodes.begin(), nodes.end());
  std::set<std::string> graph_outputs(g.outputs.begin(), g.outputs.end());
  for (size_t k : nodes)
    for (const auto& o : g.nodes[k].outputs) {
      if (o.empty()) continue;
      bool used_outside = graph_outputs.count(o) > 0;
      for (size_t c : g.consumers(o)) used_outside |= !inside.count(c);
      if (!used_outside) continue;
      w.graph.outputs.push_back(canon[o]);
      step.outputs.push_back(o);
      exact << "out " << canon[o] << shape_str(g.tensor(o).shape) << ";";
      cls << "out " << canon[o] << ";";
    }
  for (const auto& t : w.graph.inputs) w.bytes += num_elements(w.graph.tensor(t).shape) * dtype_size(w.graph.tensor(t).dtype);
  for (const auto& t : w.graph.outputs) w.bytes += num_elements(w.graph.tensor(t).shape) * dtype_size(w.graph.tensor(t).dtype);
  w.exact_key = exact.str();
  w.class_key = cls.str();
  return w;
}

// When t's two consumers are a unary elementwise f(t) read only by the other, an elementwise
// op of t and f(t) with t's shape (x * sigmoid(x)): (f, op), else nullopt.
std::optional<std::pair<size_t, size_t>> gate_of(const Graph& g, const std::string& t, const std::vector<size_t>& cons,
                                                 const std::vector<bool>& taken) {
  if (cons.size() != 2) return std::nullopt;
  for (int k = 0; k < 2; k++) {
    const size_t f = cons[k], op = cons[1 - k];
    const Node &nf = g.nodes[f], &nop = g.nodes[op];
    if (taken[f] || taken[op] || !is_fusable_elementwise(nf.op) || !is_fusable_elementwise(nop.op)) continue;
    if (nf.inputs.size() != 1 || nf.outputs.size() != 1 || nop.outputs.size() != 1 || nop.inputs.size() != 2) continue;
    const std::string& ft = nf.outputs[0];
    const bool reads_both = (nop.inputs[0] == t && nop.inputs[1] == ft) || (nop.inputs[0] == ft && nop.inputs[1] == t);
    if (!reads_both || g.consumers(ft).size() != 1 || g.tensor(ft).shape != g.tensor(t).shape ||
        g.tensor(nop.outputs[0]).shape != g.tensor(t).shape || std::find(g.outputs.begin(), g.outputs.end(), ft) != g.outputs.end())
      continue;
    return std::make_pair(f, op);
  }
  return std::nullopt;
}

}  // namespace

bool is_fusable_elementwise(const std::string& op) { return fusable_ops().count(op) > 0; }
bool is_anchor(const std::string& op) { return anchor_ops().count(op) > 0; }

std::string fnv1a_hex(const std::string& s) {
  uint64_t h = 14695981039346656037ULL;  // FNV-1a 64-bit offset basis
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return fmt::format("{:016x}", h);
}

Workload whole_graph_workload(const Graph& g) {
  std::vector<size_t> nodes(g.nodes.size());
  for (size_t k = 0; k < nodes.size(); k++) nodes[k] = k;
  WorkloadStep step;
  Workload w = make_workload(g, nodes, step);
  w.count = 1;
  return w;
}

std::string Workload::key_hash() const { return fnv1a_hex(exact_key); }
std::string Workload::class_hash() const { return fnv1a_hex(class_key); }

std::string class_anchor(const std::string& class_key) {
  // Statements end in ';' and an operation's has a '(' after its name (an input's declaration has
  // none); quoted attribute text may hold either.
  bool quoted = false;
  size_t start = 0, open = std::string::npos;  // the current statement's start and first '('
  for (size_t i = 0; i < class_key.size(); i++) {
    const char c = class_key[i];
    if (c == '"') quoted = !quoted;
    if (quoted) continue;
    if (c == '(' && open == std::string::npos) open = i;
    if (c != ';') continue;
    if (open != std::string::npos) return is_anchor(class_key.substr(start, open - start)) ? class_key.substr(0, i + 1) : "";
    start = i + 1;
  }
  return "";
}

const Workload* find_workload(const Partition& p, const std::string& key_hash) {
  for (const auto& w : p.workloads)
    if (w.key_hash() == key_hash) return &w;
  return nullptr;
}

int64_t node_flops(const Graph& g, const Node& n) {
  auto shape = [&](const std::string& t) { return g.tensor(t).shape; };
  const int64_t out = n.outputs.empty() || n.outputs[0].empty() ? 0 : num_elements(shape(n.outputs[0]));
  if (n.op == "Conv" || n.op == "ConvTranspose") {
    Shape w = shape(n.inputs[1]);
    int64_t per = num_elements(w) / w[0];  // Cin/group * kernel
    // The 3x3 (KD x 3 x 3) conv it computes: w is [Cout, 6, 6, Cin] ([Cout, KD, 6, 6, Cin]).
    if (is_winograd_conv(n)) per = w.back() * 9 * (w.size() == 5 ? w[1] : 1);
    if (n.op == "ConvTranspose") return 2 * num_elements(shape(n.inputs[0])) * num_elements(w) / shape(n.inputs[0])[1];
    // Taps on padding are not work (the lowering skips what it can): a throughput over the
    // peak FLOP rate would otherwise read as possible.
    return static_cast<int64_t>(std::llround(2.0 * static_cast<double>(out * per) * conv_tap_read_fraction(g, n)));
  }
  if (n.op == "Gemm") {
    Shape a = shape(n.inputs[0]);
    return 2 * out * (n.attr_int("transA", 0) ? a[0] : a[1]);
  }
  if (n.op == "MatMul") {
    Shape a = shape(n.inputs[0]);
    return 2 * out * a.back();
  }
  if (n.op.find("Pool") != std::string::npos || n.op.rfind("Reduce", 0) == 0 || n.op.rfind("Arg", 0) == 0)
    return num_elements(shape(n.inputs[0]));
  if (n.op == "Softmax" || n.op == "LogSoftmax" || n.op.find("Normalization") != std::string::npos)
    return 4 * out;
  if (is_fusable_elementwise(n.op)) return out;
  return 0;  // data movement only
}

// A chain of data-movement ops fuses into one copy, so ShuffleNet's channel shuffle (Concat,
// Reshape, Transpose, Reshape) is one pass over memory, not four steps (each a launch and a copy).
bool is_data_movement(const std::string& op) {
  static const std::set<std::string> s = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Slice"};
  return s.count(op) > 0;
}

namespace {

// Extends `group` (headed by node i) along the single-consumer chain of nodes `joins` accepts
// (node, the tensor it reads from the chain), and gates x * f(x) when `gates` (SiLU: Sigmoid
// and Mul both read x). Stops at graph outputs and at kMaxFusedNodes.
template <typename Joins>
void follow_chain(const Graph& g, size_t i, bool gates, std::vector<size_t>& group, std::vector<bool>& taken,
                  const std::set<std::string>& graph_outputs, Joins joins) {
  size_t cur = i;
  while (g.nodes[cur].outputs.size() == 1 && group.size() < kMaxFusedNodes) {
    const std::string& t = g.nodes[cur].outputs[0];
    auto cons = g.consumers(t);
    if (graph_outputs.count(t)) break;
    if (const auto gate = gates ? gate_of(g, t, cons, taken) : std::nullopt; gate) {
      if (group.size() + 2 > kMaxFusedNodes) break;
      group.push_back(gate->first);
      group.push_back(gate->second);
      taken[gate->first] = taken[gate->second] = true;
      cur = gate->second;
      continue;
    }
    if (cons.size() != 1) break;
    const size_t j = cons[0];
    if (taken[j] || g.nodes[j].outputs.size() != 1 || !joins(g.nodes[j], t)) break;
    group.push_back(j);
    taken[j] = true;
    cur = j;
  }
}

}  // namespace

bool folds_on_itself(const Node& n) {
  static const std::set<std::string> ops = {"Sub", "Div", "Equal", "LessOrEqual", "GreaterOrEqual"};
  return ops.count(n.op) > 0 && n.inputs.size() == 2 && n.inputs[0] == n.inputs[1];
}

Partition partition_graph(const Graph& g) {
  Partition p;
  std::vector<bool> taken(g.nodes.size(), false);
  std::set<std::string> graph_outputs(g.outputs.begin(), g.outputs.end());
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (taken[i]) continue;
    std::vector<size_t> group = {i};
    taken[i] = true;
    const Node& head = g.nodes[i];
    if (is_anchor(head.op) || is_fusable_elementwise(head.op)) {
      // Same-shaped elementwise ops after an anchor or an elementwise op. After an anchor, not
      // one that changes the layout (a blocked conv's output added to a plain residual): the
      // rule tiles a reduction in registers only inside outputs of its own layout, and a plain
      // output over a blocked conv ran it one accumulator at a time (MaxViT's 1x1 convs at 13%
      // of peak); a workload of its own converts for one pass over the conv's output.
      const bool anchored = is_anchor(head.op);
      follow_chain(g, i, true, group, taken, graph_outputs, [&](const Node& next, const std::string& t) {
        const TensorInfo &in = g.tensor(t), &out = g.tensor(next.outputs[0]);
        return is_fusable_elementwise(next.op) && out.shape == in.shape && (!anchored || out.layout == in.layout) &&
               !folds_on_itself(next);
      });
    } else if (is_data_movement(head.op) && head.outputs.size() == 1) {
      follow_chain(g, i, false, group, taken, graph_outputs,
                   [&](const Node& next, const std::string&) { return is_data_movement(next.op); });
    }
    groups.push_back(group);
  }
  // A group runs where its last node was: every input of every member is ready by then.
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.back() < b.back(); });
  std::map<std::string, size_t> by_key;
  for (const auto& group : groups) {
    WorkloadStep step;
    step.nodes = group;
    Workload w = make_workload(g, group, step);
    auto it = by_key.find(w.exact_key);
    if (it == by_key.end()) {
      it = by_key.emplace(w.exact_key, p.workloads.size()).first;
      p.workloads.push_back(std::move(w));
    }
    p.workloads[it->second].count++;
    step.workload = it->second;
    p.steps.push_back(std::move(step));
  }
  return p;
}

}  // namespace ts
