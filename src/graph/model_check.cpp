#include "graph/model_check.h"

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "graph/error.h"

namespace ts {

namespace {

// "node 'name' (Op)", as Node::describe() words it, for a node that has no Node yet.
std::string label(const onnx::NodeProto& n, int index) {
  const std::string name = n.name().empty() ? fmt::format("{}_{}", n.op_type(), index) : n.name();
  return fmt::format("node '{}' ({})", printable_name(name), printable_name(n.op_type()));
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<std::vector<int64_t>> ints_attr(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

// An initializer defined twice: ONNX Runtime loads such a model and uses the last definition;
// so does tensorsched, with a warning.
void drop_duplicate_initializers(onnx::GraphProto& g, const std::string& path) {
  std::map<std::string, int> last;
  for (int i = 0; i < g.initializer_size(); i++) last[g.initializer(i).name()] = i;
  if (static_cast<int>(last.size()) == g.initializer_size()) return;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (int i = 0; i < g.initializer_size(); i++) {
    if (last.at(g.initializer(i).name()) == i) *kept.Add() = g.initializer(i);
    else spdlog::warn("{}: initializer '{}' is defined more than once; the last definition is used, as ONNX Runtime does",
                      path, printable_name(g.initializer(i).name()));
  }
  g.mutable_initializer()->Swap(&kept);
}

// Puts the nodes in an order where every input is defined before it is read, as ONNX Runtime
// sorts a graph; a tensor read but never defined, defined twice, or a cycle is an Error.
void sort_nodes(onnx::GraphProto& g, const std::string& path) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) {
    if (v.name().empty()) throw Error(fmt::format("{}: a graph input has an empty name", path));
    if (!defined.insert(v.name()).second)
      throw Error(fmt::format("{}: graph input '{}' is declared twice", path, printable_name(v.name())));
  }
  drop_duplicate_initializers(g, path);
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) throw Error(fmt::format("{}: an initializer has an empty name", path));
    defined.insert(t.name());
  }
  std::map<std::string, int> producer;  // tensor -> node index
  for (int i = 0; i < g.node_size(); i++)
    for (const auto& out : g.node(i).output()) {
      if (out.empty()) continue;
      if (defined.count(out) || producer.count(out))
        throw Error(fmt::format("{}: {} writes '{}', which {} already defines", path, label(g.node(i), i),
                                printable_name(out), defined.count(out) ? "a graph input or initializer" : "another node"));
      producer[out] = i;
    }
  for (int i = 0; i < g.node_size(); i++)
    for (const auto& in : g.node(i).input())
      if (!in.empty() && !defined.count(in) && !producer.count(in))
        throw Error(fmt::format("{}: {} reads '{}', which no node, graph input or initializer defines", path,
                                label(g.node(i), i), printable_name(in)));
  // Kahn's algorithm, stable: among ready nodes the file's order is kept.
  std::vector<int> order, pending(g.node_size());
  std::vector<std::vector<int>> readers(g.node_size());
  for (int i = 0; i < g.node_size(); i++) {
    std::set<int> deps;
    for (const auto& in : g.node(i).input())
      if (!in.empty() && !defined.count(in)) deps.insert(producer.at(in));
    pending[i] = static_cast<int>(deps.size());
    for (int d : deps) readers[d].push_back(i);
  }
  std::set<int> ready;
  for (int i = 0; i < g.node_size(); i++)
    if (pending[i] == 0) ready.insert(i);
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int r : readers[i])
      if (--pending[r] == 0) ready.insert(r);
  }
  if (static_cast<int>(order.size()) != g.node_size()) {
    int stuck = 0;
    while (pending[stuck] == 0) stuck++;
    throw Error(fmt::format("{}: the graph has a cycle through {}", path, label(g.node(stuck), stuck)));
  }
  if (std::is_sorted(order.begin(), order.end())) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int i : order) *sorted.Add() = g.node(i);
  g.mutable_node()->Swap(&sorted);
}

// ONNX's schema checker, as ONNX Runtime runs it on every node: input and output counts, required
// inputs given, required attributes present, no unknown attribute, attribute types.
void check_schema(const onnx::ModelProto& m, const std::string& path) {
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(m.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : m.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
  ctx.set_opset_imports(opsets);
  // The names a node's subgraphs (an If's branches) may read: the graph's inputs and
  // initializers, and the outputs of the nodes before it (the nodes are sorted by now).
  onnx::checker::LexicalScopeContext lex;
  const auto& g = m.graph();
  for (const auto& v : g.input()) lex.add(v.name());
  for (const auto& t : g.initializer()) lex.add(t.name());
  for (int i = 0; i < g.node_size(); i++) {
    try {
      onnx::checker::check_node(g.node(i), ctx, lex);
      for (const auto& o : g.node(i).output()) lex.add(o);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (auto cut = why.find("\n\n==> Context:"); cut != std::string::npos) why.resize(cut);
      throw Error(fmt::format("{}: {} is not valid ONNX: {}", path, label(g.node(i), i), printable_name(why)));
    }
  }
}

// Static dims of every initializer and of graph inputs that declare them (weights of a
// graph-only model).
std::map<std::string, std::vector<int64_t>> known_dims(const onnx::GraphProto& g) {
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& v : g.input()) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
    std::vector<int64_t> d;
    bool all = true;
    for (const auto& x : v.type().tensor_type().shape().dim()) {
      all = all && x.has_dim_value();
      d.push_back(x.dim_value());
    }
    if (all) dims[v.name()] = d;
  }
  for (const auto& t : g.initializer()) dims[t.name()] = std::vector<int64_t>(t.dims().begin(), t.dims().end());
  return dims;
}

// The window attributes of Conv, ConvTranspose and the pools: positive strides, dilations and
// kernel sizes, non-negative pads, one value per spatial axis.
void check_window_attrs(const onnx::NodeProto& n, const std::string& where, std::optional<size_t> spatial) {
  auto check = [&](const char* attr, int64_t min, size_t per_axis) {
    auto v = ints_attr(n, attr);
    if (!v) return;
    for (int64_t x : *v)
      if (x < min)
        throw Error(fmt::format("{}: attribute '{}' holds {}; every value must be at least {}", where, attr, x, min));
    if (!spatial) spatial = v->size() / per_axis;
    if (v->size() != *spatial * per_axis)
      throw Error(fmt::format("{}: attribute '{}' has {} values; {} spatial axes need {}", where, attr, v->size(),
                              *spatial, *spatial * per_axis));
  };
  check("kernel_shape", 1, 1);
  check("strides", 1, 1);
  check("dilations", 1, 1);
  check("pads", 0, 2);
  check("output_padding", 0, 1);
  if (const auto* g = find_attr(n, "group"); g && g->i() < 1)
    throw Error(fmt::format("{}: attribute 'group' is {}; it must be at least 1", where, g->i()));
  if (const auto* p = find_attr(n, "auto_pad")) {
    static const std::set<std::string> kModes = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    if (!kModes.count(p->s()))
      throw Error(fmt::format("{}: attribute 'auto_pad' is '{}'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                              where, printable_name(p->s())));
    if (p->s() != "NOTSET" && find_attr(n, "pads"))  // ONNX Runtime refuses both
      throw Error(fmt::format("{}: attribute 'pads' is given with auto_pad {}; give one of them", where, p->s()));
  }
}

// Attributes of other ops whose values ONNX Runtime checks: keepdims of reductions is 0 or 1;
// Resize's exclude_outside is 0 or 1, and 1 only with cubic interpolation.
void check_other_attrs(const onnx::NodeProto& n, const std::string& where) {
  const std::string& op = n.op_type();
  if (op.rfind("Reduce", 0) == 0 || op == "ArgMax" || op == "ArgMin")
    if (const auto* k = find_attr(n, "keepdims"); k && k->i() != 0 && k->i() != 1)
      throw Error(fmt::format("{}: attribute 'keepdims' is {}; it must be 0 or 1", where, k->i()));
  if (op == "Resize")
    if (const auto* e = find_attr(n, "exclude_outside"); e && e->i() != 0) {
      const auto* mode = find_attr(n, "mode");
      if (e->i() != 1 || !mode || mode->s() != "cubic")
        throw Error(fmt::format("{}: attribute 'exclude_outside' is {}; only 0, or 1 with mode cubic, is valid", where,
                                e->i()));
    }
}

// Attribute values and weight shapes that ONNX's shape inference would divide by or index with.
void check_attribute_values(const onnx::GraphProto& g, const std::string& path) {
  static const std::set<std::string> kWindowOps = {"Conv",    "ConvTranspose", "MaxPool", "AveragePool",
                                                   "LpPool", "MaxUnpool",     "ConvInteger"};
  const auto dims = known_dims(g);
  for (int i = 0; i < g.node_size(); i++) {
    const auto& n = g.node(i);
    const std::string where = fmt::format("{}: {}", path, label(n, i));
    check_other_attrs(n, where);
    if (!kWindowOps.count(n.op_type())) continue;
    std::optional<size_t> spatial;
    const bool conv = n.op_type() == "Conv" || n.op_type() == "ConvTranspose";
    if (conv && n.input_size() >= 2 && dims.count(n.input(1))) {
      const auto& w = dims.at(n.input(1));
      if (w.size() < 3)
        throw Error(fmt::format("{}: weight '{}' has rank {}; a convolution weight has rank 3 or more", where,
                                printable_name(n.input(1)), w.size()));
      for (size_t k = 0; k < w.size(); k++)
        if (w[k] < 1)
          throw Error(fmt::format("{}: weight '{}' has dimension {} of size {}; every dimension must be at least 1",
                                  where, printable_name(n.input(1)), k, w[k]));
      spatial = w.size() - 2;
    }
    check_window_attrs(n, where, spatial);
  }
}

std::string type_name(int elem_type);

// Bytes of one element of an ONNX element type (0 for strings and unknown types).
size_t element_bytes(int elem_type) {
  using T = onnx::TensorProto;
  switch (elem_type) {
    case T::UINT8: case T::INT8: case T::BOOL: return 1;
    case T::UINT16: case T::INT16: case T::FLOAT16: case T::BFLOAT16: return 2;
    case T::FLOAT: case T::INT32: case T::UINT32: return 4;
    case T::INT64: case T::UINT64: case T::DOUBLE: case T::COMPLEX64: return 8;
    case T::COMPLEX128: return 16;
    default: return 0;
  }
}

// A tensor's stored values against its dims, before anything reads them (ONNX's shape inference
// reads shapes, pads and scales from initializers and would overrun a short raw_data). As
// ONNX Runtime does, a length that does not match exactly is an error.
void check_tensor_data(const onnx::TensorProto& t, const std::string& where) {
  double elements = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) throw Error(fmt::format("{}: dimension {} is negative", where, d));
    elements *= static_cast<double>(d);
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return;  // checked when read
  const size_t bytes = element_bytes(t.data_type());
  if (t.has_raw_data()) {
    if (bytes == 0) throw Error(fmt::format("{}: raw_data for a {} tensor", where, type_name(t.data_type())));
    if (static_cast<double>(t.raw_data().size()) != elements * static_cast<double>(bytes))
      throw Error(fmt::format("{}: raw_data holds {} bytes; {} elements of {} need {}", where, t.raw_data().size(),
                              elements, type_name(t.data_type()), elements * static_cast<double>(bytes)));
    return;
  }
  using T = onnx::TensorProto;
  const int type = t.data_type();
  double values = 0;
  if (type == T::FLOAT) values = t.float_data_size();
  else if (type == T::COMPLEX64) values = t.float_data_size() / 2.0;
  else if (type == T::DOUBLE) values = t.double_data_size();
  else if (type == T::COMPLEX128) values = t.double_data_size() / 2.0;
  else if (type == T::INT64) values = t.int64_data_size();
  else if (type == T::UINT32 || type == T::UINT64) values = t.uint64_data_size();
  else if (type == T::STRING) values = t.string_data_size();
  else values = t.int32_data_size();
  if (values != elements)
    throw Error(fmt::format("{}: holds {} values; its dims need {}", where, values, elements));
}

void check_all_tensor_data(const onnx::GraphProto& g, const std::string& path) {
  for (const auto& t : g.initializer())
    check_tensor_data(t, fmt::format("{}: initializer '{}'", path, printable_name(t.name())));
  for (int i = 0; i < g.node_size(); i++)
    for (const auto& a : g.node(i).attribute())
      if (a.has_t())
        check_tensor_data(a.t(), fmt::format("{}: {} attribute '{}'", path, label(g.node(i), i), printable_name(a.name())));
}

std::string type_name(int elem_type) {
  std::string s = onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(elem_type));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Element types of every value whose type is known: inputs, initializers, inferred values.
std::map<std::string, int> known_types(const onnx::GraphProto& g) {
  std::map<std::string, int> types;
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0)
      types[v.name()] = v.type().tensor_type().elem_type();
  };
  for (const auto& v : g.input()) add(v);
  for (const auto& v : g.value_info()) add(v);
  for (const auto& t : g.initializer()) types[t.name()] = t.data_type();
  return types;
}

// One node's inputs against its schema's type constraints (ONNX Runtime's type check).
void check_node_type_constraints(const onnx::NodeProto& n, const onnx::OpSchema& schema,
                                 const std::map<std::string, int>& types, const std::string& where) {
  std::map<std::string, std::pair<int, std::string>> bound;  // type parameter -> (type, input name)
  const auto& formals = schema.inputs();
  if (formals.empty()) return;
  for (int k = 0; k < n.input_size(); k++) {
    const std::string& in = n.input(k);
    auto it = types.find(in);
    if (in.empty() || it == types.end()) continue;
    const auto& formal = formals[std::min<size_t>(k, formals.size() - 1)];
    const std::string& param = formal.GetTypeStr();
    const std::string actual = "tensor(" + type_name(it->second) + ")";
    for (const auto& c : schema.typeConstraintParams()) {
      if (c.type_param_str != param) continue;
      if (std::find(c.allowed_type_strs.begin(), c.allowed_type_strs.end(), actual) == c.allowed_type_strs.end())
        throw Error(fmt::format("{}: input '{}' is {}, which {} does not take as '{}'", where, printable_name(in),
                                type_name(it->second), printable_name(n.op_type()), formal.GetName()));
    }
    if (param.rfind("tensor(", 0) == 0) {
      if (param != actual)
        throw Error(fmt::format("{}: input '{}' is {}; '{}' must be {}", where, printable_name(in),
                                type_name(it->second), formal.GetName(), param));
      continue;
    }
    auto [b, fresh] = bound.emplace(param, std::make_pair(it->second, in));
    if (!fresh && b->second.first != it->second)
      throw Error(fmt::format("{}: input '{}' is {} but input '{}' is {}; both are type {} of {}", where,
                              printable_name(in), type_name(it->second), printable_name(b->second.second),
                              type_name(b->second.first), param, printable_name(n.op_type())));
  }
}

// A convolution's input channels against its weight: C == W[1] * group (W[0] for ConvTranspose).
void check_conv_channels(const onnx::NodeProto& n, const onnx::GraphProto& g, const std::string& where) {
  if ((n.op_type() != "Conv" && n.op_type() != "ConvTranspose") || n.input_size() < 2) return;
  auto channels = [&](const std::string& name) -> std::optional<std::vector<int64_t>> {
    for (const auto* list : {&g.input(), &g.value_info()})
      for (const auto& v : *list)
        if (v.name() == name && v.type().tensor_type().has_shape()) {
          std::vector<int64_t> d;
          for (const auto& x : v.type().tensor_type().shape().dim()) d.push_back(x.has_dim_value() ? x.dim_value() : -1);
          return d;
        }
    for (const auto& t : g.initializer())
      if (t.name() == name) return std::vector<int64_t>(t.dims().begin(), t.dims().end());
    return std::nullopt;
  };
  auto x = channels(n.input(0)), w = channels(n.input(1));
  if (!x || !w || x->size() < 2 || w->size() < 2 || (*x)[1] < 0 || (*w)[0] < 1 || (*w)[1] < 1) return;
  const auto* ga = find_attr(n, "group");
  const int64_t group = ga ? ga->i() : 1;
  const bool transpose = n.op_type() == "ConvTranspose";
  const int64_t expected = transpose ? (*w)[0] : (*w)[1] * group;
  if ((*x)[1] != expected)
    throw Error(fmt::format("{}: input '{}' has {} channels, but its weight '{}' and group {} need {}", where,
                            printable_name(n.input(0)), (*x)[1], printable_name(n.input(1)), group, expected));
  if (!transpose && (*w)[0] % group != 0)
    throw Error(fmt::format("{}: weight '{}' has {} output channels, not a multiple of group {}", where,
                            printable_name(n.input(1)), (*w)[0], group));
}

}  // namespace

void check_model_structure(onnx::ModelProto& model, const std::string& path, int opset) {
  (void)opset;
  if (model.ir_version() > onnx::IR_VERSION)
    throw Error(fmt::format("{}: IR version {} is newer than the {} this build reads", path, model.ir_version(),
                            static_cast<int>(onnx::IR_VERSION)));
  auto& g = *model.mutable_graph();
  for (const auto* list : {&g.input(), &g.output()})
    for (const auto& v : *list) {
      if (v.name().empty()) throw Error(fmt::format("{}: a graph input or output has an empty name", path));
      if (v.type().has_tensor_type() && v.type().tensor_type().elem_type() == 0)
        throw Error(fmt::format("{}: graph {} '{}' has no element type", path, list == &g.input() ? "input" : "output",
                                printable_name(v.name())));
    }
  std::set<std::string> node_names;
  for (int i = 0; i < g.node_size(); i++)
    if (!g.node(i).name().empty() && !node_names.insert(g.node(i).name()).second)
      throw Error(fmt::format("{}: two nodes are named '{}'", path, printable_name(g.node(i).name())));
  check_all_tensor_data(g, path);
  sort_nodes(g, path);
  check_schema(model, path);
  check_attribute_values(g, path);
}

void check_model_types(const onnx::ModelProto& model, const std::string& path, int opset) {
  const auto& g = model.graph();
  const auto types = known_types(g);
  for (int i = 0; i < g.node_size(); i++) {
    const auto& n = g.node(i);
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    const auto* schema = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
    if (!schema) continue;
    const std::string where = fmt::format("{}: {}", path, label(n, i));
    check_node_type_constraints(n, *schema, types, where);
    check_conv_channels(n, g, where);
  }
}

}  // namespace ts
