#pragma once
// Builds real ONNX files for tests with libonnx's protobuf API, and runs them through the real
// import -> passes -> lowering -> Halide JIT path.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "graph/graph.h"

namespace ts::test {

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Tensor>;

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13);
  OnnxBuilder& input(const std::string& name, DType t, const std::vector<int64_t>& shape);
  // Input with symbolic dims: dims < 0 become dim_param "dyn<k>".
  OnnxBuilder& dynamic_input(const std::string& name, DType t, const std::vector<int64_t>& shape);
  OnnxBuilder& initializer(const std::string& name, const Tensor& value);
  OnnxBuilder& node(const std::string& op, const std::vector<std::string>& inputs,
                    const std::vector<std::string>& outputs, const std::map<std::string, AttrValue>& attrs = {},
                    const std::string& name = "");
  OnnxBuilder& output(const std::string& name, DType t = DType::Float32);
  OnnxBuilder& metadata(const std::string& key, const std::string& value);
  // Writes the model to a fresh file under the test temp dir and returns its path.
  std::string save(const std::string& file_name) const;
  onnx::ModelProto& proto() { return model_; }

 private:
  onnx::ModelProto model_;
};

// A fresh, empty directory for the current test.
std::filesystem::path temp_dir();

// Imports `path` as the CLI would (supported ops only, no notices, no generated weights: tests
// pass every input they declare), with the default passes unless `passes` is false.
Graph import_model(const std::string& path, bool passes = true);

// The node of g that writes tensor t (the layout plan inserts conversion steps, so positions
// move); throws when none does.
const Node& node_writing(const Graph& g, const std::string& t);

// Import (with default passes) and run on `inputs`; returns the outputs.
std::vector<Tensor> run_model(const std::string& path, const std::map<std::string, Tensor>& inputs);

// Float tensor from values.
Tensor make_f32(const Shape& shape, const std::vector<float>& values);
// Deterministic float tensor in [-1, 1).
Tensor rand_f32(const Shape& shape, uint64_t seed);

}  // namespace ts::test
