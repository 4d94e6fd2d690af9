#include "graph/onnx_import.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "graph/const_eval.h"
#include "graph/einsum_equation.h"
#include "graph/file_io.h"
#include "graph/model_check.h"

namespace ts {

namespace {

constexpr int kMinOpset = 6, kMaxOpset = 17;


std::string printable(const std::string& s) { return printable_name(s); }

Node convert_node(const onnx::NodeProto& p, size_t index) {
  Node n;
  n.op = p.op_type();
  n.name = printable(p.name().empty() ? fmt::format("{}_{}", p.op_type(), index) : p.name());
  n.inputs.assign(p.input().begin(), p.input().end());
  n.outputs.assign(p.output().begin(), p.output().end());
  for (const auto& a : p.attribute()) n.attrs[a.name()] = attribute_from_proto(a, n.describe());
  return n;
}

// The branch an If takes when its condition is a constant (an exporter's test of a dimension,
// folded once --shape fixed it), spliced in place of the If: the branch's nodes and initializers
// with the names they produce prefixed by the If's first output and branch (two inlined
// branches never collide), then an Identity from each branch output to the If's. False, leaving
// the If, where the branch does not fit its outputs or holds graphs of its own.
bool inline_if_branch(const onnx::NodeProto& p, bool cond, onnx::GraphProto* g,
                      google::protobuf::RepeatedPtrField<onnx::NodeProto>& kept) {
  const onnx::GraphProto* branch = nullptr;
  for (const auto& a : p.attribute())
    if (a.name() == (cond ? "then_branch" : "else_branch") && a.has_g()) branch = &a.g();
  if (!branch || branch->output_size() != p.output_size() || p.output_size() == 0) return false;
  for (const auto& n : branch->node())
    for (const auto& a : n.attribute())
      if (a.has_g() || a.graphs_size() > 0) return false;
  const std::string prefix = p.output(0) + (cond ? "::then::" : "::else::");
  std::map<std::string, std::string> renamed;
  for (const auto& t : branch->initializer()) renamed[t.name()] = prefix + t.name();
  for (const auto& n : branch->node())
    for (const auto& o : n.output())
      if (!o.empty()) renamed[o] = prefix + o;
  const auto rename = [&](const std::string& name) {
    const auto it = renamed.find(name);
    return it == renamed.end() ? name : it->second;
  };
  for (const auto& t : branch->initializer()) {
    onnx::TensorProto* c = g->add_initializer();
    *c = t;
    c->set_name(rename(t.name()));
  }
  for (const auto& n : branch->node()) {
    onnx::NodeProto* q = kept.Add();
    *q = n;
    for (auto& name : *q->mutable_input()) name = rename(name);
    for (auto& name : *q->mutable_output()) name = rename(name);
    if (!q->name().empty()) q->set_name(prefix + q->name());
  }
  for (int k = 0; k < p.output_size(); k++) {
    onnx::NodeProto* id = kept.Add();
    id->set_op_type("Identity");
    id->set_name(prefix + "output_" + std::to_string(k));
    id->add_input(rename(branch->output(k).name()));
    id->add_output(p.output(k));
  }
  return true;
}

// Static shape of a ValueInfo, or nullopt when any dim is symbolic/unknown.
std::optional<Shape> static_shape(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return std::nullopt;
  Shape s;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0) return std::nullopt;
    s.push_back(d.dim_value());
  }
  return s;
}

std::string dim_description(const onnx::ValueInfoProto& v) {
  std::string r;
  if (!v.type().tensor_type().has_shape()) return "its rank is unknown";
  int i = 0;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value() || d.dim_value() < 0)
      r += fmt::format("{}dimension {}{}", r.empty() ? "" : ", ", i,
                       d.has_dim_param() ? " ('" + d.dim_param() + "')" : "");
    i++;
  }
  return r + " is dynamic";
}

// Which inputs of an op are parameters (weights) rather than activations: used to tell the
// weights of a graph-only model (weights stored as graph inputs) from its real inputs.
bool is_param_slot(const std::string& op, size_t slot, size_t rank) {
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm") return slot >= 1;
  if (op == "BatchNormalization") return slot >= 1;
  if (op == "LayerNormalization" || op == "InstanceNormalization" || op == "PRelu") return slot >= 1;
  if (op == "MatMul") return slot == 1 && rank == 2;
  return false;
}

// Random weights for a graph-only model, shaped so that a network stays numerically tame:
// uniform(+-1/sqrt(fan_in)) for weights, and positive variances for BatchNormalization.
Tensor generate_weight(const std::string& name, DType t, const Shape& s, const std::string& op,
                       size_t slot, uint64_t seed) {
  uint64_t h = seed;
  for (char c : name) h = h * 1099511628211ULL + static_cast<uint8_t>(c);
  if (op == "BatchNormalization" && slot == 4) return random_tensor(t, s, h, 0.5, 1.5);
  if ((op == "BatchNormalization" || op == "LayerNormalization" || op == "InstanceNormalization") && slot == 1)
    return random_tensor(t, s, h, 0.5, 1.5);
  int64_t fan_in = s.size() >= 2 ? num_elements(s) / s[0] : std::max<int64_t>(num_elements(s), 1);
  if ((op == "MatMul") && s.size() == 2) fan_in = s[0];
  double b = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1)));
  return random_tensor(t, s, h, -b, b);
}

class Importer {
 public:
  Importer(const std::string& path, const ImportOptions& opts) : path_(path), opts_(opts) {}

  // Loads the file and rejects unsupported ops, domains and opsets, without shape work.
  void check() {
    load();
    check_opset_and_ops();
  }

  Graph run() {
    check();
    check_model_structure(model_, path_, opset_);
    apply_input_options();
    // A round's inference gives the shapes its folding turns into constants, and those give the
    // next round's shapes (a Shape of the output of a Reshape whose target was folded): each
    // block of a transformer exported with shape arithmetic takes rounds of its own (Swin-S's 24
    // needed more than 16). A round that goes on folded a node away or completed an Einsum's
    // shape, so the node count bounds them.
    const int most_rounds = model_.graph().node_size() + 2;
    for (int round = 0; round < most_rounds; round++) {
      // The first pass is strict, as ONNX Runtime's graph resolution is: an op whose inputs
      // contradict its attributes (Concat of different ranks, an axis out of range) is refused with
      // ONNX's message, not lowered from a declared output shape it cannot have.
      infer_shapes(/*strict=*/round == 0);
      if (round == 0) check_model_types(model_, path_, opset_);
      const bool folded = fold_once();
      if (!complete_einsum_shapes() && !folded) break;
    }
    for (int i = 0; i < model_.graph().node_size(); i++) {
      const auto& p = model_.graph().node(i);
      if (p.op_type() != "If") continue;
      const std::string where = fmt::format("{}: node '{}'", path_, printable(p.name().empty() ? fmt::format("If_{}", i) : p.name()));
      if (p.input_size() == 1 && constant(p.input(0)))  // folded, but inline_if_branch left it
        throw Unsupported(where + ": an If whose branch holds graphs of its own or does not give its outputs");
      throw Unsupported(where + ": an If whose condition depends on input values (tensorsched compiles one graph; a "
                                "condition computed from shapes folds once they are fixed, e.g. by --shape)");
    }
    return build_graph();
  }

 private:
  void load() {
    std::string bytes = read_regular_file(path_, "an ONNX file");
    if (bytes.empty()) throw Error(fmt::format("{}: file is empty", path_));
    if (!model_.ParseFromString(bytes))
      throw Error(fmt::format("{}: not an ONNX model (protobuf parse failed: truncated or another format)", path_));
    if (model_.ir_version() <= 0 || !model_.has_graph() || model_.opset_import_size() == 0)
      throw Error(fmt::format("{}: not an ONNX model (no IR version, graph or opset import)", path_));
    if (model_.graph().output_size() == 0) throw Error(fmt::format("{}: the graph has no outputs", path_));
    base_dir_ = std::filesystem::path(path_).parent_path().string();
    // Folded constants become initializers that are not graph inputs, which shape inference
    // only honours from IR version 4 on.
    if (model_.ir_version() < 4) model_.set_ir_version(4);
  }

  void check_opset_and_ops() {
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = static_cast<int>(o.version());
    const auto& g = model_.graph();
    // Every unsupported op at once (in order of first use), with the nodes that use it.
    std::vector<std::pair<std::string, std::vector<std::string>>> unsupported;
    for (int i = 0; i < g.node_size(); i++) {
      const auto& p = g.node(i);
      std::string name = printable(p.name().empty() ? fmt::format("{}_{}", p.op_type(), i) : p.name());
      bool default_domain = p.domain().empty() || p.domain() == "ai.onnx";
      bool folded_anyway = p.op_type() == "Constant" || p.op_type() == "Shape" || p.op_type() == "Size" ||
                           p.op_type() == "ConstantOfShape" || p.op_type() == "Range" || p.op_type() == "If";
      if (default_domain && (!opts_.op_supported || folded_anyway || opts_.op_supported(p.op_type()))) continue;
      const std::string op = printable((default_domain ? "" : p.domain() + ".") + p.op_type());
      auto it = std::find_if(unsupported.begin(), unsupported.end(), [&](const auto& u) { return u.first == op; });
      if (it == unsupported.end()) unsupported.push_back({op, {name}});
      else it->second.push_back(name);
    }
    if (unsupported.size() == 1 && unsupported[0].second.size() == 1)
      throw Unsupported(fmt::format("{}: node '{}': op {} (opset {}) is not supported", path_, unsupported[0].second[0],
                                    unsupported[0].first, opset_));
    if (!unsupported.empty()) {
      std::string list;
      for (const auto& [op, nodes] : unsupported)
        list += fmt::format("{}op {} (opset {}) at node '{}'{}", list.empty() ? "" : "; ", op, opset_, nodes[0],
                            nodes.size() > 1 ? fmt::format(" and {} more", nodes.size() - 1) : "");
      throw Unsupported(fmt::format("{}: {} ops are not supported: {}", path_, unsupported.size(), list));
    }
    // Only tensors: sequence, map and optional values are not lowered.
    for (const auto* list : {&g.input(), &g.output()})
      for (const auto& v : *list)
        if (v.has_type() && !v.type().has_tensor_type())
          throw Unsupported(fmt::format("{}: graph {} '{}' is a {}, only tensors are supported", path_,
                                        list == &g.input() ? "input" : "output", v.name(),
                                        v.type().has_sequence_type() ? "sequence"
                                        : v.type().has_optional_type() ? "optional"
                                        : v.type().has_map_type() ? "map" : "non-tensor value"));
    if (opset_ == 0) throw Error(fmt::format("{}: imports no opset of the default ONNX domain", path_));
    if (opset_ < kMinOpset || opset_ > kMaxOpset)
      throw Unsupported(fmt::format("{}: opset {} is not supported (supported: {}-{})", path_, opset_, kMinOpset, kMaxOpset));
  }

  void apply_input_options() {
    auto* g = model_.mutable_graph();
    std::set<std::string> init_names;
    for (const auto& t : g->initializer()) init_names.insert(t.name());
    std::set<std::string> input_names;
    for (const auto& v : g->input()) input_names.insert(v.name());
    for (const auto& [name, shape] : opts_.shape_overrides) {
      if (!input_names.count(name)) {
        bind_symbolic_dimension(name, shape);
        continue;
      }
      for (auto& v : *g->mutable_input()) {
        if (v.name() != name) continue;
        auto* ts = v.mutable_type()->mutable_tensor_type()->mutable_shape();
        ts->clear_dim();
        for (int64_t d : shape) ts->add_dim()->set_dim_value(d);
      }
    }
    for (const auto& [name, value] : opts_.constant_inputs) {
      if (!input_names.count(name) || init_names.count(name)) continue;
      auto* t = g->add_initializer();
      tensor_to_proto(value, t);
      t->set_name(name);
      init_names.insert(name);
    }
    // Graph-only models: no initializer in the file, parameters are graph inputs with shapes.
    if (opts_.generate_weights && model_.graph().initializer_size() == static_cast<int>(opts_.constant_inputs.size()))
      generate_missing_weights(init_names);
  }

  // --shape NAME=D where NAME is a symbolic dimension (dim_param) of the graph inputs.
  void bind_symbolic_dimension(const std::string& name, const Shape& value) {
    int bound = 0;
    for (auto& v : *model_.mutable_graph()->mutable_input())
      for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
        if (d.has_dim_param() && d.dim_param() == name) {
          if (value.size() != 1)
            throw Error(fmt::format("{}: --shape {}=...: '{}' is a symbolic dimension; give one value", path_, name, name));
          d.set_dim_value(value[0]);
          bound++;
        }
    if (bound == 0)
      throw Error(fmt::format("{}: --shape names '{}', which is neither a graph input nor a symbolic dimension of one",
                              path_, name));
  }

  void generate_missing_weights(std::set<std::string>& init_names) {
    auto* g = model_.mutable_graph();
    std::set<std::string> declared;
    for (const auto& p : model_.metadata_props())
      if (p.key() == "tensorsched.weights") {
        std::stringstream ss(p.value());
        for (std::string w; std::getline(ss, w, ',');) declared.insert(w);
      }
    int generated = 0;
    for (const auto& v : g->input()) {
      if (init_names.count(v.name())) continue;
      auto shape = static_shape(v);
      if (!shape) continue;
      // Find the consumers' slots: a weight is used only as a parameter.
      std::string op;
      size_t slot = 0;
      bool only_params = true, used = false;
      for (const auto& n : g->node())
        for (int i = 0; i < n.input_size(); i++)
          if (n.input(i) == v.name()) {
            used = true;
            if (!is_param_slot(n.op_type(), i, shape->size())) only_params = false;
            op = n.op_type();
            slot = i;
          }
      if (!(declared.count(v.name()) || (declared.empty() && used && only_params))) continue;
      DType t = dtype_from_onnx(v.type().tensor_type().elem_type(), fmt::format("{}: input '{}'", path_, v.name()));
      auto* p = g->add_initializer();
      tensor_to_proto(generate_weight(v.name(), t, *shape, op, slot, opts_.weight_seed), p);
      p->set_name(v.name());
      init_names.insert(v.name());
      generated++;
    }
    if (generated && !opts_.quiet)
      spdlog::info("{} has no weights; generated deterministic random values for {} parameter inputs (seed {})", path_,
                   generated, opts_.weight_seed);
  }

  void infer_shapes(bool strict) {
    onnx::ShapeInferenceOptions o(/*check_type=*/false, /*error_mode=*/strict ? 1 : 0, /*data_prop=*/true);
    try {
      // Start from a clean slate so stale value_info of folded nodes cannot linger.
      model_.mutable_graph()->clear_value_info();
      for (const auto& [name, v] : completed_shapes_) *model_.mutable_graph()->add_value_info() = v;
      onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), o);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (auto cut = why.find("\n\n==> Context:"); cut != std::string::npos) why.resize(cut);
      throw Error(fmt::format("{}: ONNX shape inference failed: {}", path_, printable(why)));
    }
  }

  // Why shape inference left a value untyped: ONNX's message for the first node it rejects (the
  // import itself runs inference leniently, so values it cannot type yet can still be folded).
  std::string inference_error() const {
    onnx::ModelProto copy = model_;
    copy.mutable_graph()->clear_value_info();
    try {
      onnx::ShapeInferenceOptions strict(/*check_type=*/false, /*error_mode=*/1, /*data_prop=*/true);
      onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), strict);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (auto cut = why.find("\n\n==> Context:"); cut != std::string::npos) why.resize(cut);
      return printable(why);
    }
    return "";
  }

  const Tensor* constant(const std::string& name) {
    auto it = consts_.find(name);
    if (it != consts_.end()) return &it->second;
    for (const auto& t : model_.graph().initializer())
      if (t.name() == name)
        return &consts_.emplace(name, tensor_from_proto(t, fmt::format("{}: initializer '{}'", path_, name), base_dir_))
                    .first->second;
    return nullptr;
  }

  std::map<std::string, const onnx::ValueInfoProto*> value_infos() const {
    std::map<std::string, const onnx::ValueInfoProto*> m;
    const auto& g = model_.graph();
    for (const auto& v : g.input()) m[v.name()] = &v;
    for (const auto& v : g.value_info()) m[v.name()] = &v;
    for (const auto& v : g.output()) m[v.name()] = &v;
    return m;
  }

  // ONNX infers only the rank of an Einsum's output: once its operands' shapes are known, the
  // dims come from the equation, declared as value_info in every later inference round. True
  // when an output shape was completed.
  bool complete_einsum_shapes() {
    auto infos = value_infos();
    bool completed = false;
    for (int i = 0; i < model_.graph().node_size(); i++) {
      const auto& p = model_.graph().node(i);
      if (p.op_type() != "Einsum" || p.output_size() != 1 || completed_shapes_.count(p.output(0))) continue;
      std::vector<Shape> shapes;
      for (const auto& name : p.input()) {
        std::optional<Shape> s;
        if (const Tensor* t = constant(name)) s = t->shape;
        else if (infos.count(name)) s = static_shape(*infos[name]);
        if (!s) break;
        shapes.push_back(*s);
      }
      if (static_cast<int>(shapes.size()) != p.input_size()) continue;
      const Node n = convert_node(p, i);
      const Shape out = parse_einsum(n.attr_string("equation", ""), shapes, fmt::format("{}: {}", path_, n.describe()))
                            .output_shape();
      onnx::ValueInfoProto v;
      if (infos.count(p.output(0))) v = *infos[p.output(0)];
      else if (infos.count(p.input(0))) *v.mutable_type() = infos[p.input(0)]->type();
      v.set_name(p.output(0));
      auto* dims = v.mutable_type()->mutable_tensor_type()->mutable_shape();
      dims->clear_dim();
      for (int64_t d : out) dims->add_dim()->set_dim_value(d);
      completed_shapes_[p.output(0)] = v;
      for (auto& o : *model_.mutable_graph()->mutable_output())
        if (o.name() == p.output(0)) *o.mutable_type() = v.type();  // outputs are not re-inferred
      completed = true;
    }
    return completed;
  }

  // Folds every node whose result is known at compile time; true when something changed.
  bool fold_once() {
    auto infos = value_infos();
    std::set<std::string> init_names;
    for (const auto& t : model_.graph().initializer()) init_names.insert(t.name());
    std::set<std::string> graph_outputs;
    for (const auto& v : model_.graph().output()) graph_outputs.insert(v.name());
    auto* g = model_.mutable_graph();
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    bool changed = false;
    for (int i = 0; i < g->node_size(); i++) {
      const auto& p = g->node(i);
      if (p.op_type() == "If") {
        const Tensor* cond = p.input_size() == 1 && init_names.count(p.input(0)) ? constant(p.input(0)) : nullptr;
        if (cond && cond->size() == 1 && inline_if_branch(p, cond->get_f64(0) != 0, g, kept)) changed = true;
        else *kept.Add() = p;
        continue;
      }
      Node n = convert_node(p, i);
      std::vector<const Tensor*> ins;
      std::vector<std::optional<Shape>> shapes;
      for (const auto& name : n.inputs) {
        ins.push_back(!name.empty() && init_names.count(name) ? constant(name) : nullptr);
        std::optional<Shape> s;
        if (ins.back()) s = ins.back()->shape;
        else if (infos.count(name)) s = static_shape(*infos[name]);
        shapes.push_back(s);
      }
      auto r = eval_constant_node(n, opset_, ins, shapes);
      if (!r) { *kept.Add() = p; continue; }
      for (size_t k = 0; k < r->size() && k < n.outputs.size(); k++) {
        auto* t = g->add_initializer();
        tensor_to_proto((*r)[k], t);
        t->set_name(n.outputs[k]);
        consts_[n.outputs[k]] = (*r)[k];
        init_names.insert(n.outputs[k]);
      }
      changed = true;
    }
    g->mutable_node()->Swap(&kept);
    return changed;
  }

  Graph build_graph() {
    Graph graph;
    graph.path = path_;
    graph.opset = opset_;
    auto infos = value_infos();
    const auto& g = model_.graph();
    std::set<std::string> init_names;
    for (const auto& t : g.initializer()) {
      init_names.insert(t.name());
      const Tensor* c = constant(t.name());
      graph.tensors[t.name()] = TensorInfo{t.name(), c->dtype, c->shape, *c};
    }
    auto add_from_info = [&](const std::string& name, const std::string& role) {
      if (graph.tensors.count(name)) return;
      auto it = infos.find(name);
      if (it == infos.end() || !it->second->type().has_tensor_type()) {
        const std::string why = inference_error();
        throw Error(fmt::format("{}: {} has no type after shape inference{}", path_, printable(role),
                                why.empty() ? "" : ": " + why));
      }
      const auto& v = *it->second;
      DType t = dtype_from_onnx(v.type().tensor_type().elem_type(), fmt::format("{}: {}", path_, role));
      auto s = static_shape(v);
      if (!s && role.rfind("input", 0) == 0)
        throw Error(fmt::format("{}: {}: {}; fix it with --shape {}=D0,D1,...", path_, role, dim_description(v), name));
      // Inside the graph a shape that stays unknown depends on runtime values (e.g. Range of an
      // input): tensorsched compiles for fixed shapes only.
      if (!s) {
        const std::string why = inference_error();
        if (!why.empty()) throw Error(fmt::format("{}: {}: {}", path_, printable(role), why));
        throw Unsupported(fmt::format("{}: {}: {} after shape inference (a data-dependent shape)", path_,
                                      printable(role), dim_description(v)));
      }
      // Generated code indexes with 32-bit integers (Halide's buffer extents and strides).
      const double elements = std::accumulate(s->begin(), s->end(), 1.0, std::multiplies<double>());
      if (elements * static_cast<double>(dtype_size(t)) >= kMaxTensorBytes)
        throw Unsupported(fmt::format("{}: {}: shape {} ({:.3g} elements of {}) is 2 GiB or more; tensorsched's code "
                                      "addresses less (a --shape too large?)",
                                      path_, printable(role), shape_str(*s), elements, dtype_name(t)));
      graph.tensors[name] = TensorInfo{name, t, *s, std::nullopt};
    };
    for (const auto& v : g.input()) {
      if (init_names.count(v.name())) continue;
      add_from_info(v.name(), fmt::format("input '{}'", v.name()));
      graph.inputs.push_back(v.name());
    }
    for (int i = 0; i < g.node_size(); i++) {
      Node n = convert_node(g.node(i), i);
      for (const auto& in : n.inputs)
        if (!in.empty() && !graph.tensors.count(in))
          throw Error(fmt::format("{}: {} reads tensor '{}', which nothing produces", path_, n.describe(), in));
      for (const auto& out : n.outputs)
        if (!out.empty()) add_from_info(out, fmt::format("tensor '{}' (output of {})", out, n.describe()));
      graph.nodes.push_back(std::move(n));
    }
    for (const auto& v : g.output()) {
      if (!graph.tensors.count(v.name()))
        throw Error(fmt::format("{}: graph output '{}' is not produced by any node", path_, v.name()));
      graph.outputs.push_back(v.name());
    }
    check_memory(graph);
    return graph;
  }

  // A run holds every constant and every activation at once: refused before anything allocates
  // them, when that exceeds the limit.
  void check_memory(const Graph& graph) const {
    double constants = 0, activations = 0;
    for (const auto& [name, t] : graph.tensors)
      (t.value ? constants : activations) += static_cast<double>(num_elements(t.shape)) * dtype_size(t.dtype);
    uint64_t limit = opts_.max_memory_bytes;
    if (limit == 0) {
      const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
      limit = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 4 * 3 : 0;
    }
    if (limit == 0 || constants + activations <= static_cast<double>(limit)) return;
    throw Error(fmt::format("{}: a run needs {:.2f} GiB ({:.2f} GiB of constants, {:.2f} GiB of activations), more "
                            "than the {:.2f} GiB allowed{}; raise it with --max-memory",
                            path_, (constants + activations) / 1073741824.0, constants / 1073741824.0,
                            activations / 1073741824.0, static_cast<double>(limit) / 1073741824.0,
                            opts_.max_memory_bytes ? "" : " (3/4 of this machine's memory)"));
  }

  std::string path_, base_dir_;
  const ImportOptions& opts_;
  onnx::ModelProto model_;
  int opset_ = 0;
  std::map<std::string, Tensor> consts_;  // parsed initializers and folded values
  std::map<std::string, onnx::ValueInfoProto> completed_shapes_;  // Einsum outputs typed from their equations
};

}  // namespace

Attribute attribute_from_proto(const onnx::AttributeProto& a, const std::string& where) {
  using A = onnx::AttributeProto;
  switch (a.type()) {
    case A::INT: return {a.i()};
    case A::FLOAT: return {static_cast<double>(a.f())};
    case A::STRING: return {a.s()};
    case A::INTS: return {std::vector<int64_t>(a.ints().begin(), a.ints().end())};
    case A::FLOATS: return {std::vector<double>(a.floats().begin(), a.floats().end())};
    case A::STRINGS: return {std::vector<std::string>(a.strings().begin(), a.strings().end())};
    case A::TENSOR: return {tensor_from_proto(a.t(), where + " attribute '" + a.name() + "'")};
    default: break;
  }
  throw Unsupported(fmt::format("{}: attribute '{}' has a type tensorsched does not read (graph/sparse)", where, a.name()));
}

Graph import_onnx(const std::string& path, const ImportOptions& opts) {
  try {
    return Importer(path, opts).run();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
}

void check_model_supported(const std::string& path, const ImportOptions& opts) {
  try {
    Importer(path, opts).check();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: {}", path, e.what()));
  }
}

uint64_t parse_memory_size(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  static const std::map<std::string, double> kUnits = {{"", 1.0},          {"K", 1024.0}, {"k", 1024.0},
                                                       {"M", 1048576.0}, {"m", 1048576.0}, {"G", 1073741824.0},
                                                       {"g", 1073741824.0}, {"T", 1099511627776.0}, {"t", 1099511627776.0}};
  auto it = kUnits.find(unit);
  if (used == 0 || it == kUnits.end() || !(v > 0) || v * it->second > 1.8e19)
    throw Error(fmt::format("--max-memory '{}': expected a size such as 8G, 512M or 1000000 (bytes)", text));
  return static_cast<uint64_t>(v * it->second);
}

std::pair<std::string, Shape> parse_shape_override(const std::string& spec) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(fmt::format("--shape '{}': expected NAME=D0,D1,... (e.g. input=1,3,224,224)", spec));
  Shape s;
  std::stringstream ss(spec.substr(eq + 1));
  for (std::string d; std::getline(ss, d, ',');) {
    try {
      size_t used = 0;
      long long v = std::stoll(d, &used);
      if (used != d.size() || v <= 0) throw std::invalid_argument(d);
      s.push_back(v);
    } catch (const std::exception&) {
      throw Error(fmt::format("--shape '{}': '{}' is not a positive integer dimension", spec, d));
    }
  }
  if (s.empty()) throw Error(fmt::format("--shape '{}': no dimensions", spec));
  return {spec.substr(0, eq), s};
}

}  // namespace ts
