#include "graph/onnx_export.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <type_traits>

namespace ts {

namespace {

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

}  // namespace

std::string graph_to_onnx(const Graph& g, const std::string& name, const std::map<std::string, std::string>& metadata) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("tensorsched");
  m.add_opset_import()->set_version(g.opset);
  onnx::GraphProto* gp = m.mutable_graph();
  gp->set_name(name);
  std::set<std::string> io(g.inputs.begin(), g.inputs.end());
  io.insert(g.outputs.begin(), g.outputs.end());
  for (const auto& [tname, t] : g.tensors) {
    if (t.value) {
      onnx::TensorProto* init = gp->add_initializer();
      tensor_to_proto(*t.value, init);
      init->set_name(tname);
    } else if (!io.count(tname)) {
      set_value_info(t, gp->add_value_info());
    }
  }
  for (const auto& in : g.inputs) set_value_info(g.tensor(in), gp->add_input());
  for (const auto& out : g.outputs) set_value_info(g.tensor(out), gp->add_output());
  for (const Node& n : g.nodes) {
    onnx::NodeProto* p = gp->add_node();
    p->set_name(n.name);
    p->set_op_type(n.op);
    for (const auto& i : n.inputs) p->add_input(i);
    for (const auto& o : n.outputs) p->add_output(o);
    for (const auto& [aname, a] : n.attrs) set_attribute(aname, a, p->add_attribute());
  }
  for (const auto& [key, value] : metadata) {
    auto* e = m.add_metadata_props();
    e->set_key(key);
    e->set_value(value);
  }
  return m.SerializeAsString();
}

}  // namespace ts
