#pragma once
// GraphRunner: lowers a whole graph into one Halide pipeline and JIT-compiles it. Meant for
// small graphs (ONNX conformance cases, tests); whole networks go through CompiledModel, which
// compiles each workload as its own pipeline.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ts {

class GraphRunner {
 public:
  // Lowers g (every node output computed at root, helpers inlined) and JIT-compiles it.
  explicit GraphRunner(const Graph& g);
  ~GraphRunner();
  // Runs on `inputs` (by graph input name; each must match shape and dtype) and returns the
  // graph outputs in order.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};


}  // namespace ts
