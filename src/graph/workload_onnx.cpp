#include "graph/workload_onnx.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "graph/error.h"
#include "graph/onnx_export.h"
#include "graph/onnx_import.h"

namespace ts {

namespace {

constexpr const char* kLayoutsKey = "tensorsched.layouts";          // "name:axis:block;..." of blocked tensors
constexpr const char* kConstantInputsKey = "tensorsched.constant_inputs";  // "in1,in2"
constexpr const char* kKeyHashKey = "tensorsched.key_hash";         // Workload::key_hash()

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
  std::string layouts;
  for (const auto& [name, t] : w.graph.tensors)
    if (t.layout.blocked()) layouts += fmt::format("{}:{}:{};", name, t.layout.axis, t.layout.block);
  return graph_to_onnx(w.graph, w.name,
                       {{kLayoutsKey, layouts},
                        {kConstantInputsKey, fmt::format("{}", fmt::join(w.constant_inputs, ","))},
                        {kKeyHashKey, w.key_hash()}});
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
