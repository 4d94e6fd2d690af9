#include "graph/workload_onnx.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "graph/error.h"
#include "graph/onnx_import.h"

namespace ts {

namespace {

constexpr const char* kLayoutsKey = "tensorsched.layouts";          // "name:axis:block;..." of blocked tensors
constexpr const char* kConstantInputsKey = "tensorsched.constant_inputs";  // "in1,in2"
constexpr const char* kKeyHashKey = "tensorsched.key_hash";         // Workload::key_hash()

void set_value_info(const TensorInfo& t, onnx::ValueInfoProto* v) {
  v->set_name(t.name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t.dtype));
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.shape) shape->add_dim()->set_dim_value(d);
}

void set_attribute(const std::string& name, const Attribute& a, onnx::AttributeProto* p) {
  using A = onnx::AttributeProto;
  p->set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          p->set_type(A::INT);
          p->set_i(v);
        } else if constexpr (std::is_same_v<T, double>) {
          p->set_type(A::FLOAT);
          p->set_f(static_cast<float>(v));  // read from a float: exact
        } else if constexpr (std::is_same_v<T, std::string>) {
          p->set_type(A::STRING);
          p->set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          p->set_type(A::INTS);
          for (int64_t x : v) p->add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          p->set_type(A::FLOATS);
          for (double x : v) p->add_floats(static_cast<float>(x));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          p->set_type(A::STRINGS);
          for (const auto& x : v) p->add_strings(x);
        } else {
          p->set_type(A::TENSOR);
          tensor_to_proto(v, p->mutable_t());
        }
      },
      a.value);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

// The tensors a subgraph declares (inputs, outputs, value_info, initializers), by name.
std::map<std::string, TensorInfo> declared_tensors(const onnx::GraphProto& g, const std::string& where) {
  std::map<std::string, TensorInfo> out;
  auto declare = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
      throw Error(fmt::format("{}: tensor '{}' has no tensor type with a shape", where, v.name()));
    TensorInfo t;
    t.name = v.name();
    t.dtype = dtype_from_onnx(v.type().tensor_type().elem_type(), fmt::format("{}: tensor '{}'", where, v.name()));
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 0)
        throw Error(fmt::format("{}: tensor '{}' has a dimension that is not a fixed size", where, v.name()));
      t.shape.push_back(d.dim_value());
    }
    out[t.name] = t;
  };
  for (const auto& v : g.input()) declare(v);
  for (const auto& v : g.output()) declare(v);
  for (const auto& v : g.value_info()) declare(v);
  for (const auto& init : g.initializer()) {
    Tensor value = tensor_from_proto(init, fmt::format("{}: constant '{}'", where, init.name()));
    TensorInfo& t = out[init.name()];
    if (!t.name.empty() && (t.dtype != value.dtype || t.shape != value.shape))
      throw Error(fmt::format("{}: constant '{}' is not of its declared type", where, init.name()));
    t.name = init.name();
    t.dtype = value.dtype;
    t.shape = value.shape;
    t.value = std::move(value);
  }
  return out;
}

}  // namespace

std::string workload_subgraph(const Workload& w) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("tensorsched");
  m.add_opset_import()->set_version(w.graph.opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name(w.name);
  const std::set<std::string> io = [&] {
    std::set<std::string> s(w.graph.inputs.begin(), w.graph.inputs.end());
    s.insert(w.graph.outputs.begin(), w.graph.outputs.end());
    return s;
  }();
  std::string layouts;
  for (const auto& [name, t] : w.graph.tensors) {
    if (t.value) {
      onnx::TensorProto* init = g->add_initializer();
      tensor_to_proto(*t.value, init);
      init->set_name(name);
    } else if (!io.count(name)) set_value_info(t, g->add_value_info());
    if (t.layout.blocked()) layouts += fmt::format("{}:{}:{};", name, t.layout.axis, t.layout.block);
  }
  for (const auto& name : w.graph.inputs) set_value_info(w.graph.tensor(name), g->add_input());
  for (const auto& name : w.graph.outputs) set_value_info(w.graph.tensor(name), g->add_output());
  for (const Node& n : w.graph.nodes) {
    onnx::NodeProto* p = g->add_node();
    p->set_name(n.name);
    p->set_op_type(n.op);
    for (const auto& i : n.inputs) p->add_input(i);
    for (const auto& o : n.outputs) p->add_output(o);
    for (const auto& [name, a] : n.attrs) set_attribute(name, a, p->add_attribute());
  }
  auto meta = [&](const char* key, const std::string& value) {
    auto* e = m.add_metadata_props();
    e->set_key(key);
    e->set_value(value);
  };
  meta(kLayoutsKey, layouts);
  meta(kConstantInputsKey, fmt::format("{}", fmt::join(w.constant_inputs, ",")));
  meta(kKeyHashKey, w.key_hash());
  return m.SerializeAsString();
}

Workload workload_from_subgraph(const std::string& bytes, const std::string& where) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) throw Error(fmt::format("{}: workload subgraph is not an ONNX model", where));
  std::map<std::string, std::string> meta;
  for (const auto& e : m.metadata_props()) meta[e.key()] = e.value();
  if (!meta.count(kKeyHashKey)) throw Error(fmt::format("{}: workload subgraph has no {}", where, kKeyHashKey));
  const onnx::GraphProto& gp = m.graph();
  Graph g;
  g.path = where;
  g.opset = m.opset_import_size() > 0 ? static_cast<int>(m.opset_import(0).version()) : 0;
  g.tensors = declared_tensors(gp, where);
  for (const auto& spec : split(meta[kLayoutsKey], ';')) {
    const std::vector<std::string> f = split(spec, ':');
    if (f.size() != 3 || !g.tensors.count(f[0]))
      throw Error(fmt::format("{}: layout '{}' does not name a tensor with axis and block", where, spec));
    TensorInfo& t = g.tensors[f[0]];
    try {
      t.layout = Layout{std::stoi(f[1]), std::stoll(f[2])};
    } catch (const std::exception&) {
      throw Error(fmt::format("{}: layout '{}': axis and block must be integers", where, spec));
    }
    if (const std::string why = layout_error(t.layout, t.shape); !why.empty())
      throw Error(fmt::format("{}: tensor '{}': {}", where, f[0], why));
  }
  for (const auto& v : gp.input()) g.inputs.push_back(v.name());
  for (const auto& v : gp.output()) g.outputs.push_back(v.name());
  for (int i = 0; i < gp.node_size(); i++) {
    const onnx::NodeProto& p = gp.node(i);
    Node n;
    n.name = p.name();
    n.op = p.op_type();
    n.inputs.assign(p.input().begin(), p.input().end());
    n.outputs.assign(p.output().begin(), p.output().end());
    for (const auto& a : p.attribute()) n.attrs[a.name()] = attribute_from_proto(a, fmt::format("{}: {}", where, n.describe()));
    for (const auto& t : n.inputs)
      if (!t.empty() && !g.tensors.count(t))
        throw Error(fmt::format("{}: {} reads tensor '{}', which the subgraph does not declare", where, n.describe(), t));
    for (const auto& t : n.outputs)
      if (!t.empty() && !g.tensors.count(t))
        throw Error(fmt::format("{}: {} writes tensor '{}', which the subgraph does not declare", where, n.describe(), t));
    g.nodes.push_back(std::move(n));
  }
  if (g.nodes.empty()) throw Error(fmt::format("{}: workload subgraph has no nodes", where));
  Workload w = whole_graph_workload(g);
  w.constant_inputs = split(meta[kConstantInputsKey], ',');
  for (const auto& c : w.constant_inputs)
    if (std::find(w.graph.inputs.begin(), w.graph.inputs.end(), c) == w.graph.inputs.end())
      throw Error(fmt::format("{}: constant input '{}' is not an input of the subgraph", where, c));
  if (w.key_hash() != meta[kKeyHashKey])
    throw Error(fmt::format("{}: the subgraph's workload key hashes to {}, not the {} it was stored with", where,
                            w.key_hash(), meta[kKeyHashKey]));
  return w;
}

}  // namespace ts
