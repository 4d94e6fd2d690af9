#include "graph/graph.h"

#include <fmt/format.h>

#include <set>

namespace ts {

template <typename T>
static const T* get_attr(const Node& n, const std::string& a) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second.value);
  if (!v) throw Error(fmt::format("{}: attribute '{}' has an unexpected type", n.describe(), a));
  return v;
}

int64_t Node::attr_int(const std::string& a, int64_t def) const {
  const int64_t* v = get_attr<int64_t>(*this, a);
  return v ? *v : def;
}
double Node::attr_float(const std::string& a, double def) const {
  auto it = attrs.find(a);
  if (it != attrs.end())
    if (const int64_t* i = std::get_if<int64_t>(&it->second.value)) return static_cast<double>(*i);
  const double* v = get_attr<double>(*this, a);
  return v ? *v : def;
}
std::string Node::attr_string(const std::string& a, const std::string& def) const {
  const std::string* v = get_attr<std::string>(*this, a);
  return v ? *v : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& a, std::vector<int64_t> def) const {
  const auto* v = get_attr<std::vector<int64_t>>(*this, a);
  return v ? *v : def;
}
std::vector<double> Node::attr_floats(const std::string& a, std::vector<double> def) const {
  const auto* v = get_attr<std::vector<double>>(*this, a);
  return v ? *v : def;
}
const Tensor* Node::attr_tensor(const std::string& a) const { return get_attr<Tensor>(*this, a); }

std::string Node::describe() const { return fmt::format("node '{}' ({})", name, op); }

const TensorInfo& Graph::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error(fmt::format("{}: tensor '{}' is not defined", path, name));
  return it->second;
}
TensorInfo& Graph::tensor(const std::string& name) {
  return const_cast<TensorInfo&>(static_cast<const Graph*>(this)->tensor(name));
}
bool Graph::is_constant(const std::string& name) const {
  auto it = tensors.find(name);
  return it != tensors.end() && it->second.value.has_value();
}
std::vector<size_t> Graph::consumers(const std::string& name) const {
  std::vector<size_t> r;
  for (size_t i = 0; i < nodes.size(); i++)
    for (const auto& in : nodes[i].inputs)
      if (in == name) { r.push_back(i); break; }
  return r;
}
std::vector<std::string> Graph::op_types() const {
  std::set<std::string> s;
  for (const auto& n : nodes) s.insert(n.op);
  return {s.begin(), s.end()};
}

namespace {

// Whether `name` is read as a BatchNormalization's variance (its fifth input): a workload takes
// the weights as inputs, and a negative variance would make its output NaN, which Max and Min
// (Relu, Clip) turn into a number or not depending on the operand order a schedule compiles to.
bool read_as_variance(const Graph& g, const std::string& name) {
  for (size_t i : g.consumers(name)) {
    const Node& n = g.nodes[i];
    if (n.op == "BatchNormalization" && n.inputs.size() > 4 && n.inputs[4] == name) return true;
  }
  return false;
}

}  // namespace

std::map<std::string, Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::map<std::string, Tensor> r;
  uint64_t k = 0;
  for (const auto& name : g.inputs) {
    const auto& info = g.tensor(name);
    const bool is_float = dtype_is_float(info.dtype);
    double lo = is_float ? -1.0 : 0.0, hi = is_float ? 1.0 : 2.0;
    if (is_float && read_as_variance(g, name)) lo = 0.5, hi = 1.5;
    r[name] = random_tensor(info.dtype, info.shape, seed + 7919 * ++k, lo, hi);
  }
  return r;
}

}  // namespace ts
