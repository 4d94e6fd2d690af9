#include "graph/passes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "graph/const_eval.h"
#include "graph/workload.h"

namespace ts {

namespace {

void rename_uses(Graph& g, const std::string& from, const std::string& to) {
  for (auto& n : g.nodes)
    for (auto& in : n.inputs)
      if (in == from) in = to;
  for (auto& o : g.outputs)
    if (o == from) o = to;
}

}  // namespace

bool is_graph_output(const Graph& g, const std::string& name) {
  return std::find(g.outputs.begin(), g.outputs.end(), name) != g.outputs.end();
}

int fold_constants(Graph& g) {
  int folded = 0;
  std::vector<Node> kept;
  for (auto& n : g.nodes) {
    std::vector<const Tensor*> ins;
    std::vector<std::optional<Shape>> shapes;
    for (const auto& name : n.inputs) {
      ins.push_back(!name.empty() && g.is_constant(name) ? &*g.tensor(name).value : nullptr);
      shapes.push_back(name.empty() ? std::nullopt : std::optional<Shape>(g.tensor(name).shape));
    }
    auto r = eval_constant_node(n, g.opset, ins, shapes);
    if (!r) { kept.push_back(std::move(n)); continue; }
    for (size_t k = 0; k < r->size() && k < n.outputs.size(); k++) g.tensor(n.outputs[k]).value = (*r)[k];
    folded++;
  }
  g.nodes = std::move(kept);
  return folded;
}

bool dropout_is_identity(const Graph& g, const Node& n) {
  auto constant = [&](size_t i) -> const Tensor* {
    return i < n.inputs.size() && !n.inputs[i].empty() && g.tensor(n.inputs[i]).value ? &*g.tensor(n.inputs[i]).value : nullptr;
  };
  if (n.inputs.size() <= 2 || n.inputs[2].empty()) return true;  // no training_mode: inference
  const Tensor* training = constant(2);
  if (training && training->get_i64(0) == 0) return true;
  // Training with a ratio of 0 drops nothing and scales by 1 (Swin's attention dropout as
  // torchvision exports it).
  const Tensor* ratio = constant(1);
  return training && ratio && ratio->size() == 1 && ratio->get_f64(0) == 0;
}

int remove_identity_ops(Graph& g) {
  int removed = 0;
  std::vector<Node> kept;
  for (auto& n : g.nodes) {
    bool dropout_plain = n.op == "Dropout" && (n.outputs.size() < 2 || n.outputs[1].empty() ||
                                               (g.consumers(n.outputs[1]).empty() && !is_graph_output(g, n.outputs[1])));
    if (n.op == "Dropout" && !dropout_is_identity(g, n)) dropout_plain = false;
    // Keep the op when its output is a graph output that is also read under another name: the
    // runtime then copies. Renaming graph outputs to inputs is fine otherwise.
    if ((n.op == "Identity" || dropout_plain) && !is_graph_output(g, n.outputs[0])) {
      rename_uses(g, n.outputs[0], n.inputs[0]);
      removed++;
      continue;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return removed;
}

int fold_batchnorm_into_conv(Graph& g) {
  int folds = 0;
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (const auto& o : g.nodes[i].outputs) producer[o] = i;
  std::set<size_t> dead;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    Node& bn = g.nodes[i];
    if (bn.op != "BatchNormalization" || bn.outputs.size() != 1 || bn.inputs.size() < 5) continue;
    bool params_const = true;
    for (size_t k = 1; k < 5; k++) params_const &= g.is_constant(bn.inputs[k]);
    auto p = producer.find(bn.inputs[0]);
    if (!params_const || p == producer.end()) continue;
    Node& conv = g.nodes[p->second];
    if (conv.op != "Conv" || !g.is_constant(conv.inputs[1]) ||
        (conv.inputs.size() > 2 && !conv.inputs[2].empty() && !g.is_constant(conv.inputs[2])))
      continue;
    if (g.consumers(conv.outputs[0]).size() != 1 || is_graph_output(g, conv.outputs[0])) continue;
    const Tensor& w = *g.tensor(conv.inputs[1]).value;
    if (w.dtype != DType::Float32) continue;
    const int64_t cout = w.shape[0];
    auto scale = g.tensor(bn.inputs[1]).value->to_f64_vector();
    auto beta = g.tensor(bn.inputs[2]).value->to_f64_vector();
    auto mean = g.tensor(bn.inputs[3]).value->to_f64_vector();
    auto var = g.tensor(bn.inputs[4]).value->to_f64_vector();
    if (static_cast<int64_t>(scale.size()) != cout) continue;
    double eps = bn.attr_float("epsilon", 1e-5);
    Tensor nw = w;
    Tensor nb(DType::Float32, {cout});
    std::vector<double> old_b(cout, 0.0);
    if (conv.inputs.size() > 2 && !conv.inputs[2].empty()) old_b = g.tensor(conv.inputs[2]).value->to_f64_vector();
    const int64_t per = w.size() / cout;
    for (int64_t c = 0; c < cout; c++) {
      double s = scale[c] / std::sqrt(var[c] + eps);
      for (int64_t k = 0; k < per; k++) nw.data<float>()[c * per + k] = static_cast<float>(w.data<float>()[c * per + k] * s);
      nb.data<float>()[c] = static_cast<float>((old_b[c] - mean[c]) * s + beta[c]);
    }
    std::string wname = conv.name + "::bnfolded_w", bname = conv.name + "::bnfolded_b";
    g.tensors[wname] = TensorInfo{wname, DType::Float32, nw.shape, nw};
    g.tensors[bname] = TensorInfo{bname, DType::Float32, nb.shape, nb};
    conv.inputs.resize(3);
    conv.inputs[1] = wname;
    conv.inputs[2] = bname;
    conv.outputs[0] = bn.outputs[0];
    dead.insert(i);
    folds++;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); i++)
    if (!dead.count(i)) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  return folds;
}

int pretranspose_gemm_weights(Graph& g) {
  int done = 0;
  for (Node& n : g.nodes) {
    if (n.op != "Gemm" || n.attr_int("transB", 0) != 1 || n.inputs.size() < 2 || !g.is_constant(n.inputs[1])) continue;
    const TensorInfo& a = g.tensor(n.inputs[0]);
    const Tensor& b = *g.tensor(n.inputs[1]).value;
    if (b.dtype != DType::Float32 || b.shape.size() != 2 || a.shape.size() != 2) continue;
    const int64_t m = n.attr_int("transA", 0) ? a.shape[1] : a.shape[0];
    if (m <= 4) continue;  // matrix-vector products read B's rows along k as they are (lower/gemm.cpp)
    const Tensor t = b.transposed_2d();  // B is [N, K]
    const std::string name = n.name + "::b_transposed";
    g.tensors[name] = TensorInfo{name, DType::Float32, t.shape, t};
    n.inputs[1] = name;
    n.attrs["transB"] = Attribute{int64_t{0}};
    done++;
  }
  return done;
}

namespace {

// The axes a ReduceMean reduces, normalized to [0, rank); nullopt when they are not constant.
std::optional<std::vector<int64_t>> reduce_axes(const Graph& g, const Node& n, int64_t rank) {
  std::vector<int64_t> axes = n.attr_ints("axes");
  if (n.inputs.size() > 1 && !n.inputs[1].empty()) {  // opset 18: axes is an input
    const TensorInfo& a = g.tensor(n.inputs[1]);
    if (!a.value) return std::nullopt;
    axes = a.value->to_i64_vector();
  }
  for (auto& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  return axes;
}

}  // namespace

namespace {

// The one node reading t when it is an `op`, else nullptr.
const Node* only_consumer(const Graph& g, const std::string& t, const std::string& op) {
  const auto c = g.consumers(t);
  return c.size() == 1 && g.nodes[c[0]].op == op ? &g.nodes[c[0]] : nullptr;
}
// The other input of binary node n, one of whose inputs is t; nullptr when n does not read t.
const std::string* other_input(const Node& n, const std::string& t) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == t) return &n.inputs[1];
  if (n.inputs[1] == t) return &n.inputs[0];
  return nullptr;
}
// Whether t is a one-element constant within `tol` of v.
bool is_scalar_const(const Graph& g, const std::string* t, double v, double tol = 0) {
  return t && g.is_constant(*t) && g.tensor(*t).value->size() == 1 && std::abs(g.tensor(*t).value->to_f64_vector().at(0) - v) <= tol;
}
// The index of node n, one of g's nodes.
size_t node_index(const Graph& g, const Node& n) { return static_cast<size_t>(&n - g.nodes.data()); }
// g's nodes without those in `gone`, with `replacement` in place of node `at`.
void replace_nodes(Graph& g, const std::set<size_t>& gone, size_t at, Node replacement) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); i++) {
    if (i == at) kept.push_back(std::move(replacement));
    else if (!gone.count(i)) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
}

// Matches fuse_layer_norm's pattern (passes.h) over the graph's producer / consumer maps.
class LayerNormMatcher {
 public:
  explicit LayerNormMatcher(const Graph& g) : g_(g) {
    for (size_t k = 0; k < g.nodes.size(); k++)
      for (const auto& o : g.nodes[k].outputs)
        if (!o.empty()) producer_[o] = k;
  }

  struct Match {
    std::vector<size_t> nodes;  // the pattern's nodes; the last one writes `out`
    std::string x, gamma, beta, out, name;
    int64_t axis = 0;
    double eps = 0;
  };

  // The pattern whose variance ReduceMean is node k.
  std::optional<Match> at(size_t k) const {
    Match m;
    const Node& var = g_.nodes[k];
    std::vector<int64_t> axes;
    const Node* pow = reduce_mean_of(var, axes) ? producer_of(var.inputs[0]) : nullptr;
    if (!pow || pow->op != "Pow" || !is_scalar_const(g_, &pow->inputs[1], 2.0)) return std::nullopt;
    const Node* sub = producer_of(pow->inputs[0]);
    if (!sub || sub->op != "Sub") return std::nullopt;
    const Node* mean = producer_of(sub->inputs[1]);
    std::vector<int64_t> mean_axes;
    if (!mean || !reduce_mean_of(*mean, mean_axes) || mean_axes != axes || mean->inputs[0] != sub->inputs[0]) return std::nullopt;
    m.x = sub->inputs[0];
    const int64_t rank = static_cast<int64_t>(g_.tensor(m.x).shape.size());
    for (size_t i = 0; i < axes.size(); i++)
      if (axes[i] != rank - static_cast<int64_t>(axes.size() - i)) return std::nullopt;  // the last axes only
    m.axis = rank - static_cast<int64_t>(axes.size());
    const Node* add_eps = only_consumer(var.outputs[0], "Add");
    const std::string* eps = add_eps ? other_input(*add_eps, var.outputs[0]) : nullptr;
    if (!eps || !g_.is_constant(*eps) || g_.tensor(*eps).value->size() != 1) return std::nullopt;
    m.eps = g_.tensor(*eps).value->to_f64_vector().at(0);
    const Node* sqrt = only_consumer(add_eps->outputs[0], "Sqrt");
    const Node* div = sqrt ? only_consumer(sqrt->outputs[0], "Div") : nullptr;
    if (!div || div->inputs[0] != sub->outputs[0] || div->inputs[1] != sqrt->outputs[0]) return std::nullopt;
    // d feeds the Pow and the Div only; the mean the Sub only; the squares the ReduceMean only.
    if (g_.consumers(sub->outputs[0]).size() != 2 || !only_consumer(mean->outputs[0], "Sub") ||
        !only_consumer(pow->outputs[0], "ReduceMean"))
      return std::nullopt;
    m.nodes = {index(*mean), index(*sub), index(*pow), k, index(*add_eps), index(*sqrt), index(*div)};
    m.out = div->outputs[0];
    m.name = mean->name;
    if (const Node* mul = only_consumer(m.out, "Mul"); mul && affine_operand(*mul, m.out, m.x)) {
      m.gamma = *other_input(*mul, m.out);
      m.nodes.push_back(index(*mul));
      m.out = mul->outputs[0];
    }
    if (const Node* add = only_consumer(m.out, "Add"); add && affine_operand(*add, m.out, m.x)) {
      m.beta = *other_input(*add, m.out);
      m.nodes.push_back(index(*add));
      m.out = add->outputs[0];
    }
    for (size_t i = 0; i + 1 < m.nodes.size(); i++)
      if (is_graph_output(g_, g_.nodes[m.nodes[i]].outputs[0])) return std::nullopt;
    return m;
  }

 private:
  bool reduce_mean_of(const Node& n, std::vector<int64_t>& axes) const {
    if (n.op != "ReduceMean" || n.inputs.empty() || n.outputs.size() != 1 || n.attr_int("keepdims", 1) == 0) return false;
    const TensorInfo& x = g_.tensor(n.inputs[0]);
    if (x.dtype != DType::Float32 || x.shape.empty()) return false;
    const auto a = reduce_axes(g_, n, static_cast<int64_t>(x.shape.size()));
    if (!a || a->empty()) return false;
    axes = *a;
    return true;
  }
  // A constant operand of the affine Mul / Add whose shape is the normalized axes' (or fewer).
  bool affine_operand(const Node& n, const std::string& y, const std::string& x) const {
    const std::string* c = other_input(n, y);
    if (!c || !g_.is_constant(*c) || n.outputs.size() != 1) return false;
    const Shape &cs = g_.tensor(*c).shape, &xs = g_.tensor(x).shape;
    return cs.size() <= xs.size() && g_.tensor(n.outputs[0]).shape == xs && g_.tensor(*c).dtype == DType::Float32;
  }
  const Node* producer_of(const std::string& t) const {
    auto it = producer_.find(t);
    return it == producer_.end() ? nullptr : &g_.nodes[it->second];
  }
  const Node* only_consumer(const std::string& t, const std::string& op) const { return ts::only_consumer(g_, t, op); }
  size_t index(const Node& n) const { return node_index(g_, n); }

  const Graph& g_;
  std::map<std::string, size_t> producer_;
};

}  // namespace

int fuse_layer_norm(Graph& g) {
  int done = 0;
  for (bool again = true; again;) {
    again = false;
    const LayerNormMatcher matcher(g);
    for (size_t k = 0; k < g.nodes.size() && !again; k++) {
      const auto m = matcher.at(k);
      if (!m) continue;
      Node ln;
      ln.name = m->name;
      ln.op = "LayerNormalization";
      ln.inputs = {m->x, m->gamma, m->beta};
      while (!ln.inputs.empty() && ln.inputs.back().empty()) ln.inputs.pop_back();
      ln.outputs = {m->out};
      ln.attrs["axis"] = Attribute{m->axis};
      ln.attrs["epsilon"] = Attribute{m->eps};
      // The norm takes the place of its last node (its inputs are all defined by then).
      replace_nodes(g, std::set<size_t>(m->nodes.begin(), m->nodes.end()), m->nodes.back(), std::move(ln));
      done++;
      again = true;
    }
  }
  return done;
}

int fuse_gelu(Graph& g) {
  int done = 0;
  for (size_t k = 0; k < g.nodes.size(); k++) {
    const Node& div = g.nodes[k];
    if (div.op != "Div" || div.inputs.size() != 2 || div.outputs.size() != 1 ||
        !is_scalar_const(g, &div.inputs[1], std::sqrt(2.0), 1e-6))
      continue;
    const std::string x = div.inputs[0];
    if (g.tensor(x).dtype != DType::Float32) continue;
    const Node* erf = only_consumer(g, div.outputs[0], "Erf");
    const Node* add = erf ? only_consumer(g, erf->outputs[0], "Add") : nullptr;
    if (!add || !is_scalar_const(g, other_input(*add, erf->outputs[0]), 1.0)) continue;
    const Node* mul_x = only_consumer(g, add->outputs[0], "Mul");
    const std::string* by_x = mul_x ? other_input(*mul_x, add->outputs[0]) : nullptr;
    if (!by_x || *by_x != x) continue;
    const Node* half = only_consumer(g, mul_x->outputs[0], "Mul");
    if (!half || !is_scalar_const(g, other_input(*half, mul_x->outputs[0]), 0.5)) continue;
    const Node* chain[] = {&div, erf, add, mul_x};
    if (std::any_of(std::begin(chain), std::end(chain), [&](const Node* n) { return is_graph_output(g, n->outputs[0]); }) ||
        g.tensor(half->outputs[0]).shape != g.tensor(x).shape)
      continue;
    Node gelu;
    gelu.name = div.name;
    gelu.op = "Gelu";
    gelu.inputs = {x};
    gelu.outputs = half->outputs;
    gelu.attrs["approximate"] = Attribute{std::string("none")};
    const size_t last = node_index(g, *half);
    replace_nodes(g, {k, node_index(g, *erf), node_index(g, *add), node_index(g, *mul_x), last}, last, std::move(gelu));
    done++;
    k = static_cast<size_t>(-1);  // indices moved: from the start again
  }
  return done;
}

namespace {

// The rows of the region flatten_matmul_rows rewrites (passes.h): nodes that treat every row of
// their [..., C] input alike, so they compute the same on [rows, C].
class RowRegion {
 public:
  explicit RowRegion(const Graph& g) : g_(g) {
    for (size_t i = 0; i < g.nodes.size(); i++)
      for (const auto& o : g.nodes[i].outputs) producer_[o] = i;
  }

  // The input of n it reads row by row when n treats every row alike and writes as many rows, else
  // -1: LayerNormalization over the last axis, a unary elementwise op, a binary one whose other
  // operand is a constant of one row ([C], [1, C] or a scalar), or a MatMul by a constant 2-D B.
  int row_input(const Node& n) const {
    if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0].empty()) return -1;
    if (n.op == "MatMul")
      return n.inputs.size() == 2 && g_.tensor(n.inputs[0]).shape.size() >= 2 && constant_rank(n.inputs[1]) == 2 ? 0 : -1;
    if (n.op == "LayerNormalization") {
      const int64_t axis = n.attr_int("axis", -1), last = static_cast<int64_t>(g_.tensor(n.inputs[0]).shape.size()) - 1;
      const bool affine = std::all_of(n.inputs.begin() + 1, n.inputs.end(), [&](const std::string& c) { return c.empty() || constant_rank(c) <= 1; });
      return (axis == -1 || axis == last) && affine && same_rows(n, n.inputs[0]) ? 0 : -1;
    }
    if (!is_fusable_elementwise(n.op)) return -1;
    if (n.inputs.size() == 1) return same_rows(n, n.inputs[0]) ? 0 : -1;
    if (n.inputs.size() != 2) return -1;
    if (one_row_constant(n.inputs[1])) return same_rows(n, n.inputs[0]) ? 0 : -1;
    if (one_row_constant(n.inputs[0])) return same_rows(n, n.inputs[1]) ? 1 : -1;
    return -1;
  }
  // Whether n reads tensor t row by row (row_input above).
  bool row_wise(const Node& n, const std::string& t) const {
    const int i = row_input(n);
    return i >= 0 && n.inputs[i] == t;
  }
  // The node producing t, or nullptr for inputs and constants.
  const Node* producer(const std::string& t) const {
    auto it = producer_.find(t);
    return it == producer_.end() ? nullptr : &g_.nodes[it->second];
  }
  size_t index(const Node& n) const { return node_index(g_, n); }

 private:
  int constant_rank(const std::string& t) const { return g_.is_constant(t) ? static_cast<int>(g_.tensor(t).shape.size()) : -1; }
  bool same_rows(const Node& n, const std::string& x) const {
    const Shape& s = g_.tensor(x).shape;
    return s.size() >= 2 && g_.tensor(n.outputs[0]).shape == s;
  }
  bool one_row_constant(const std::string& t) const {
    const int r = constant_rank(t);
    return r >= 0 && r <= 2 && (r < 2 || g_.tensor(t).shape[0] == 1);
  }

  const Graph& g_;
  std::map<std::string, size_t> producer_;
};

}  // namespace

// A Reshape node of `from` to `to` (shape `s`); its shape constant and `to` are added to g.
Node reshape_node(Graph& g, const std::string& from, const std::string& to, const Shape& s) {
  const std::string shape_name = to + "::shape";
  const Tensor shape = Tensor::from_i64(s, {static_cast<int64_t>(s.size())});
  g.tensors[shape_name] = TensorInfo{shape_name, DType::Int64, shape.shape, shape, {}};
  g.tensors[to] = TensorInfo{to, g.tensor(from).dtype, s, std::nullopt, {}};
  Node r;
  r.name = to + "::reshape";
  r.op = "Reshape";
  r.inputs = {from, shape_name};
  r.outputs = {to};
  return r;
}

int flatten_matmul_rows(Graph& g) {
  int done = 0;
  std::optional<RowRegion> built;  // its producer map, rebuilt after a rewrite moves the nodes
  for (size_t k = 0; k < g.nodes.size(); k++) {
    if (!built) built.emplace(g);
    const RowRegion& region = *built;
    const Node& mm = g.nodes[k];
    if (mm.op != "MatMul" || !region.row_wise(mm, mm.inputs[0])) continue;
    const Shape a_shape = g.tensor(mm.inputs[0]).shape;
    const int64_t rows = std::accumulate(a_shape.begin(), a_shape.end() - 1, int64_t{1}, std::multiplies<>());
    // Rank 2 already, or one batch of rows (a [1, 197, 768] ViT): numpy's batching costs nothing.
    if (a_shape.size() < 3 || rows == a_shape[a_shape.size() - 2] || g.tensor(mm.inputs[0]).dtype != DType::Float32) continue;
    // Backwards: row-wise producers whose outputs feed only the region.
    std::vector<size_t> nodes = {k};
    std::string first = mm.inputs[0];
    for (const Node* p = region.producer(first); p && g.consumers(first).size() == 1 && !is_graph_output(g, first) &&
                                                 region.row_input(*p) >= 0;
         p = region.producer(first)) {
      nodes.insert(nodes.begin(), region.index(*p));
      first = p->inputs[region.row_input(*p)];
    }
    // Forwards: row-wise consumers of single-consumer tensors.
    std::string last = mm.outputs[0];
    for (auto c = g.consumers(last); c.size() == 1 && !is_graph_output(g, last) && region.row_wise(g.nodes[c[0]], last);
         c = g.consumers(last)) {
      nodes.push_back(c[0]);
      last = g.nodes[c[0]].outputs[0];
    }
    // The reshapes must join copies that run anyway (see passes.h).
    const Node* before = region.producer(first);
    const auto after = g.consumers(last);
    if (!before || !is_data_movement(before->op) || g.consumers(first).size() != 1 || after.size() != 1 ||
        !is_data_movement(g.nodes[after[0]].op) || is_graph_output(g, last))
      continue;
    const std::string rows_in = first + "::rows", rows_out = last + "::rows";
    const Shape flat{rows, g.tensor(first).shape.back()};
    std::vector<Node> out;
    for (size_t i = 0; i < g.nodes.size(); i++) {
      if (i == nodes.front()) out.push_back(reshape_node(g, first, rows_in, flat));
      Node n = std::move(g.nodes[i]);
      const bool inside = std::find(nodes.begin(), nodes.end(), i) != nodes.end();
      if (inside) {
        for (auto& in : n.inputs)
          if (in == first) in = rows_in;
        if (n.op == "LayerNormalization") n.attrs["axis"] = Attribute{int64_t{1}};
        const TensorInfo was = g.tensor(n.outputs[0]);
        if (n.outputs[0] == last) n.outputs[0] = rows_out;
        g.tensors[n.outputs[0]] = TensorInfo{n.outputs[0], was.dtype, {rows, was.shape.back()}, std::nullopt, {}};
      }
      out.push_back(std::move(n));
      if (i == nodes.back()) out.push_back(reshape_node(g, rows_out, last, g.tensor(last).shape));
    }
    g.nodes = std::move(out);
    built.reset();
    done++;
    k = nodes.back() + 2;  // past the region and its two reshapes
  }
  return done;
}

Node transpose_node(Graph& g, const std::string& from, const std::string& to, std::vector<int64_t> perm) {
  const TensorInfo& in = g.tensor(from);
  Shape s;
  for (int64_t a : perm) s.push_back(in.shape.at(a));
  g.tensors[to] = TensorInfo{to, in.dtype, s, std::nullopt, {}};
  Node t;
  t.name = to + "::transpose";
  t.op = "Transpose";
  t.inputs = {from};
  t.outputs = {to};
  t.attrs["perm"] = Attribute{std::move(perm)};
  return t;
}

Node slice_node(Graph& g, const std::string& from, const std::string& to, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  const TensorInfo& in = g.tensor(from);
  Shape s = in.shape;
  for (size_t i = 0; i < axes.size(); i++) {
    const int64_t step = steps.empty() ? 1 : steps[i];
    s[axes[i]] = (ends[i] - starts[i] + step - 1) / step;
  }
  g.tensors[to] = TensorInfo{to, in.dtype, s, std::nullopt, {}};
  Node slice;
  slice.name = to + "::slice";
  slice.op = "Slice";
  slice.inputs = {from};
  std::vector<std::pair<std::string, std::vector<int64_t>>> parts{{"starts", starts}, {"ends", ends}, {"axes", axes}};
  if (!steps.empty()) parts.emplace_back("steps", steps);
  for (const auto& [part, v] : parts) {
    if (g.opset < 10) {  // before opset 10, Slice's bounds are attributes
      slice.attrs[part] = Attribute{v};
      continue;
    }
    const std::string name = to + "::" + part;
    const Tensor t = Tensor::from_i64(v, {static_cast<int64_t>(v.size())});
    g.tensors[name] = TensorInfo{name, DType::Int64, t.shape, t, {}};
    slice.inputs.push_back(name);
  }
  slice.outputs = {to};
  return slice;
}

namespace {

// Whether conv n cuts its input in disjoint patches that patches_to_matmul rewrites (passes.h).
constexpr int64_t kMaxPatchChannels = 4;  // an image's channels: more would block (graph/layout_plan.h)
constexpr int64_t kMinPatchDepth = 256;   // C * kh * kw: a shallower product is no better as a matmul
bool is_patch_conv(const Graph& g, const Node& n) {
  if (n.op != "Conv" || n.outputs.size() != 1 || n.inputs.size() < 2 || !g.is_constant(n.inputs[1]) ||
      (n.inputs.size() > 2 && !n.inputs[2].empty() && !g.is_constant(n.inputs[2])))
    return false;
  const Shape& x = g.tensor(n.inputs[0]).shape;
  const Shape& w = g.tensor(n.inputs[1]).shape;
  if (x.size() != 4 || w.size() != 4 || g.tensor(n.inputs[0]).dtype != DType::Float32 || n.attr_int("group", 1) != 1) return false;
  const std::vector<int64_t> kernel{w[2], w[3]};
  auto all = [](const std::vector<int64_t>& v, int64_t e) { return std::all_of(v.begin(), v.end(), [&](int64_t a) { return a == e; }); };
  return n.attr_ints("strides", {1, 1}) == kernel && all(n.attr_ints("pads", {0, 0, 0, 0}), 0) &&
         all(n.attr_ints("dilations", {1, 1}), 1) && n.attr_string("auto_pad", "NOTSET") == "NOTSET" && x[2] % w[2] == 0 &&
         x[3] % w[3] == 0 && x[1] <= kMaxPatchChannels && x[1] * w[2] * w[3] >= kMinPatchDepth;
}

}  // namespace

int patches_to_matmul(Graph& g) {
  int done = 0;
  std::vector<Node> out;
  for (Node& n : g.nodes) {
    if (!is_patch_conv(g, n)) {
      out.push_back(std::move(n));
      continue;
    }
    const Shape x = g.tensor(n.inputs[0]).shape;
    const Tensor& w = *g.tensor(n.inputs[1]).value;
    const int64_t b = x[0], c = x[1], kh = w.shape[2], kw = w.shape[3], ho = x[2] / kh, wo = x[3] / kw, co = w.shape[0];
    const int64_t rows = b * ho * wo, depth = c * kh * kw;
    const std::string p = n.outputs[0] + "::patch";
    auto add = [&](const std::string& t, const Shape& s) { g.tensors[t] = TensorInfo{t, DType::Float32, s, std::nullopt, {}}; };
    // The patches as rows: [N, C, Ho, kh, Wo, kw] -> [N, Ho, Wo, C, kh, kw] -> [N * Ho * Wo, C * kh * kw].
    out.push_back(reshape_node(g, n.inputs[0], p + "_split", {b, c, ho, kh, wo, kw}));
    out.push_back(transpose_node(g, p + "_split", p + "_moved", {0, 2, 4, 1, 3, 5}));
    out.push_back(reshape_node(g, p + "_moved", p + "_rows", {rows, depth}));
    // The weights as B [C * kh * kw, Cout].
    Tensor wk = w;
    wk.shape = {co, depth};
    const Tensor wt = wk.transposed_2d();
    g.tensors[p + "_weights"] = TensorInfo{p + "_weights", DType::Float32, wt.shape, wt, {}};
    Node mm;
    mm.name = n.name;
    mm.op = "MatMul";
    mm.inputs = {p + "_rows", p + "_weights"};
    mm.outputs = {p + "_product"};
    add(p + "_product", {rows, co});
    out.push_back(mm);
    std::string result = p + "_product";
    if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
      Node bias;
      bias.name = n.name + "::bias";
      bias.op = "Add";
      bias.inputs = {result, n.inputs[2]};
      bias.outputs = {p + "_biased"};
      add(p + "_biased", {rows, co});
      out.push_back(bias);
      result = p + "_biased";
    }
    // Back to [N, Cout, Ho, Wo]: the rows are [N, Ho, Wo, Cout].
    out.push_back(reshape_node(g, result, p + "_nhwc", {b, ho, wo, co}));
    out.push_back(transpose_node(g, p + "_nhwc", n.outputs[0], {0, 3, 1, 2}));
    done++;
  }
  g.nodes = std::move(out);
  return done;
}

int reduce_mean_to_global_pool(Graph& g) {
  int done = 0;
  std::vector<Node> out;
  for (Node& n : g.nodes) {
    const bool candidate = n.op == "ReduceMean" && n.inputs.size() >= 1 && n.outputs.size() == 1 && !n.inputs[0].empty();
    const TensorInfo* x = candidate ? &g.tensor(n.inputs[0]) : nullptr;
    const int64_t rank = x ? static_cast<int64_t>(x->shape.size()) : 0;
    std::vector<int64_t> spatial;
    for (int64_t a = 2; a < rank; a++) spatial.push_back(a);
    const auto axes = x && x->dtype == DType::Float32 && rank >= 3 && rank <= 5 ? reduce_axes(g, n, rank) : std::nullopt;
    if (!axes || *axes != spatial) {
      out.push_back(std::move(n));
      continue;
    }
    const bool keep = n.attr_int("keepdims", 1) != 0;
    Node pool;
    pool.name = n.name;
    pool.op = "GlobalAveragePool";
    pool.inputs = {n.inputs[0]};
    pool.outputs = n.outputs;
    Node flat;  // keepdims = 0: the pool writes [N, C, 1...] and a Flatten drops the ones
    if (!keep) {
      Shape pooled = x->shape;
      for (int64_t a = 2; a < rank; a++) pooled[a] = 1;
      const std::string t = n.outputs[0] + "::pooled";
      g.tensors[t] = TensorInfo{t, DType::Float32, pooled, std::nullopt, Layout{}};
      pool.outputs = {t};
      flat.name = n.name + "::flatten";
      flat.op = "Flatten";
      flat.attrs["axis"] = Attribute{int64_t{1}};
      flat.inputs = {t};
      flat.outputs = n.outputs;
    }
    out.push_back(std::move(pool));
    if (!keep) out.push_back(std::move(flat));
    done++;
  }
  g.nodes = std::move(out);
  return done;
}

int remove_dead_nodes(Graph& g) {
  std::set<std::string> live(g.outputs.begin(), g.outputs.end());
  std::vector<bool> keep(g.nodes.size(), false);
  for (size_t k = g.nodes.size(); k-- > 0;) {
    for (const auto& o : g.nodes[k].outputs)
      if (live.count(o)) keep[k] = true;
    if (keep[k])
      for (const auto& in : g.nodes[k].inputs) live.insert(in);
  }
  std::vector<Node> kept;
  int removed = 0;
  for (size_t k = 0; k < g.nodes.size(); k++) {
    if (keep[k]) kept.push_back(std::move(g.nodes[k])); else removed++;
  }
  g.nodes = std::move(kept);
  return removed;
}

void run_default_passes(Graph& g) {
  fold_constants(g);
  remove_identity_ops(g);
  fold_batchnorm_into_conv(g);
  transposed_convs_to_phases(g);
  drop_padding_taps(g);
  pretranspose_gemm_weights(g);
  patches_to_matmul(g);
  fuse_layer_norm(g);
  fuse_gelu(g);
  flatten_matmul_rows(g);
  reduce_mean_to_global_pool(g);
  remove_dead_nodes(g);
}

}  // namespace ts
