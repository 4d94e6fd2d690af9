#pragma once
// ONNX import: parse the file with Debian's libonnx, run ONNX shape inference (with data
// propagation), fold constant shape arithmetic until shapes are static, and build a Graph.
#include <functional>
#include <map>
#include <string>

#include "graph/graph.h"

namespace onnx { class AttributeProto; }

namespace ts {

struct ImportOptions {
  std::map<std::string, Shape> shape_overrides;   // --shape NAME=1,3,224,224 for dynamic inputs
  std::map<std::string, Tensor> constant_inputs;  // runtime inputs bound to known values
  std::function<bool(const std::string&)> op_supported;  // when set, other ops are rejected early
  bool generate_weights = true;                   // graph-only models: make up missing weights
  uint64_t weight_seed = 0;                       // seed of generated weights (graph-only models)
  bool quiet = false;                             // no notices on stderr
  uint64_t max_memory_bytes = 0;                  // constants + activations a run may hold; 0 = 3/4 of physical memory
};

// Parses a --max-memory value: bytes, or a number with K, M, G or T (powers of 1024). Throws Error.
uint64_t parse_memory_size(const std::string& text);

// Graph-only models (no initializers) keep their weights as graph inputs; an input counts as a
// weight when the model's metadata "tensorsched.weights" lists it, or (without that list) when
// every use is a parameter slot (Conv/Gemm weights and biases, normalization parameters, PRelu
// slopes, a 2-D MatMul right operand).
// Loads `path`. Throws Error (file, input, tensor or node + reason) or Unsupported (op, node,
// opset; dtype) and never crashes on malformed input.
Graph import_onnx(const std::string& path, const ImportOptions& opts = {});

// Only the first step of import_onnx: the file parses and every op is supported (throws as above).
void check_model_supported(const std::string& path, const ImportOptions& opts);

// An ONNX attribute's value; throws Unsupported naming `where` and the attribute for the types
// tensorsched does not read (graphs, sparse tensors).
Attribute attribute_from_proto(const onnx::AttributeProto& a, const std::string& where);

// Parses "NAME=1,3,224,224" (the --shape flag).
std::pair<std::string, Shape> parse_shape_override(const std::string& spec);

}  // namespace ts
