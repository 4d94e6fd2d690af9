#pragma once
// Graph IR: nodes in topological order over named tensors, each with a static shape and dtype.
// Reading guide: onnx_import.h builds a Graph from a file; passes.h simplifies it (constant
// folding of shape arithmetic, Identity/Dropout removal, BatchNorm folding); lower/ turns each
// node into Halide Funcs.
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/layout.h"
#include "graph/tensor.h"

namespace ts {

// One ONNX attribute value.
struct Attribute {
  std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<std::string>, Tensor>
      value;
};

struct Node {
  std::string name;                          // node name, or "<op>_<index>" when the file has none
  std::string op;                            // ONNX op type, e.g. "Conv"
  std::vector<std::string> inputs;           // tensor names; "" marks an absent optional input
  std::vector<std::string> outputs;          // tensor names
  std::map<std::string, Attribute> attrs;    // attributes by name

  bool has(const std::string& a) const { return attrs.count(a) > 0; }
  int64_t attr_int(const std::string& a, int64_t def) const;
  double attr_float(const std::string& a, double def) const;
  std::string attr_string(const std::string& a, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& a, std::vector<int64_t> def = {}) const;
  std::vector<double> attr_floats(const std::string& a, std::vector<double> def = {}) const;
  const Tensor* attr_tensor(const std::string& a) const;
  // "node 'conv1' (Conv)": the prefix of every error about this node.
  std::string describe() const;
};

struct TensorInfo {
  std::string name;                   // unique tensor name
  DType dtype = DType::Float32;       // element type
  Shape shape;                        // static dims, ONNX order
  std::optional<Tensor> value;        // set for initializers and folded constants (always plain)
  Layout layout;                      // how compiled code stores it (layout_plan.h); shape stays logical
};

struct Graph {
  std::string path;                          // file it came from (for messages)
  int opset = 0;                             // default-domain opset version
  std::vector<Node> nodes;                   // topological order
  std::map<std::string, TensorInfo> tensors; // every tensor the nodes, inputs and outputs name
  std::vector<std::string> inputs;           // runtime inputs (not initializers)
  std::vector<std::string> outputs;          // graph outputs

  const TensorInfo& tensor(const std::string& name) const;
  TensorInfo& tensor(const std::string& name);
  bool is_constant(const std::string& name) const;
  // Nodes that read `name` (index into nodes).
  std::vector<size_t> consumers(const std::string& name) const;
  // Sorted distinct op types.
  std::vector<std::string> op_types() const;
};

// Deterministic random inputs for every runtime input of g: floats in [-1, 1), integers in
// {0, 1}; a BatchNormalization's variance in [0.5, 1.5).
std::map<std::string, Tensor> random_inputs(const Graph& g, uint64_t seed);

}  // namespace ts
