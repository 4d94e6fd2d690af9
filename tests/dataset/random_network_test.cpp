// Random networks: deterministic by seed, within the paper's ranges and the size budget, every
// op legal (the file imports with ONNX's shape inference agreeing with the generator's shapes),
// the common ops exercised; and a few dozen of them compiled with the default
// schedules compute what the whole-graph reference computes.
#include "dataset/random_network.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "api/compile_model.h"
#include "graph/onnx_export.h"
#include "graph/onnx_import.h"
#include "lower/lower.h"
#include "runtime/compiled_model.h"
#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

std::string save(const RandomNetwork& net, const std::string& file) {
  const auto path = (test::temp_dir() / file).string();
  std::ofstream(path, std::ios::binary) << graph_to_onnx(net.graph, file);
  return path;
}

TEST(RandomNetwork, TheSameSeedGivesTheSameNetwork) {
  const RandomNetwork a = random_network(7), b = random_network(7), c = random_network(8);
  EXPECT_EQ(graph_to_onnx(a.graph, "n"), graph_to_onnx(b.graph, "n"));
  EXPECT_NE(graph_to_onnx(a.graph, "n"), graph_to_onnx(c.graph, "n"));
  EXPECT_NE(network_seed(1, 0), network_seed(0, 1));
}

TEST(RandomNetwork, NetworksAreLegalWithinTheirRangesAndCoverTheOps) {
  RandomNetworkOptions o;
  o.max_ops = 60;
  std::map<std::string, int> ops;
  int many_outputs = 0, favoured = 0;
  const int networks = 120;
  for (uint64_t seed = 0; seed < networks; seed++) {
    const RandomNetwork net = random_network(seed, o);
    const Graph& g = net.graph;
    ASSERT_GE(g.inputs.size(), 1u);
    EXPECT_LE(g.inputs.size(), 4u);
    ASSERT_GE(g.outputs.size(), 1u);
    EXPECT_LE(g.outputs.size(), 15u);
    many_outputs += g.outputs.size() > 1;
    EXPECT_GE(net.depth, std::min<int>(5, static_cast<int>(g.nodes.size()))) << seed;
    bool has_favoured = false;
    for (const Node& n : g.nodes) {
      ops[n.op]++;
      EXPECT_TRUE(op_supported(n.op)) << n.op;
      has_favoured |= n.op == "Conv" || n.op == "ConvTranspose" || n.op == "Gemm" || n.op == "MatMul";
    }
    favoured += has_favoured;
    for (const auto& [name, t] : g.tensors) EXPECT_LE(num_elements(t.shape), o.max_tensor_elements) << seed << " " << name;
    // ONNX's shape inference (run by the importer over the file) agrees with every shape the
    // generator declared, or the import names the node that disagrees.
    Graph back;
    ASSERT_NO_THROW(back = import_onnx(save(net, "random_legal.onnx"))) << "seed " << seed;
    for (const auto& out : g.outputs) EXPECT_EQ(back.tensor(out).shape, g.tensor(out).shape) << seed << " " << out;
  }
  // The filters keep mostly single-output networks with a conv or a matmul.
  EXPECT_GT(favoured, networks * 3 / 4);
  EXPECT_LT(many_outputs, networks * 2 / 3);
  std::cout << networks << " networks: " << favoured << " with a favoured op, " << many_outputs << " with several outputs\n";
  for (const char* op : {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "Gemm", "MatMul", "BatchNormalization",
                         "LayerNormalization", "Transpose", "Reshape", "Slice", "Pad", "Resize", "Concat", "Add",
                         "Softmax", "Split", "Where", "Relu"})
    EXPECT_GT(ops[op], 0) << op << " never drawn";
}

TEST(RandomNetwork, OptionsOutOfRangeAreRefusedByName) {
  RandomNetworkOptions o;
  o.min_ops = 10;
  o.max_ops = 5;
  EXPECT_TRUE(test::throws_naming<Error>([&] { random_network(1, o); }, {"min_ops"}));
}

// The end-to-end check: each network imported as a user's model would be, compiled with the
// default schedules (its layouts planned, its workloads partitioned), matches the whole graph
// lowered into one pipeline with every stage at root.
TEST(RandomNetwork, CompiledNetworksComputeWhatTheReferenceComputes) {
  RandomNetworkOptions o;
  o.max_ops = 14;
  CompileOptions co;
  co.cache_root = (test::temp_dir() / "random_networks_cache").string();
  int checked = 0;
  for (uint64_t i = 0; i < 32; i++) {
    const uint64_t seed = network_seed(2026, i);
    const RandomNetwork net = random_network(seed, o);
    const std::string path = save(net, "random_run.onnx");
    SCOPED_TRACE(fmt::format("network seed {} ({} nodes)", seed, net.graph.nodes.size()));
    const Graph reference = import_onnx(path);
    const auto inputs = random_inputs(reference, seed);
    const std::vector<Tensor> want = GraphRunner(reference).run(inputs);
    CompiledModel model(load_model(path), co);
    const std::vector<Tensor> got = model.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); k++) {
      double scale = 0;
      for (int64_t e = 0; e < want[k].size(); e++) scale = std::max(scale, std::abs(want[k].get_f64(e)));
      const Comparison c = compare_tensors(got[k], want[k], 0, 1e-3 * scale + 1e-5);
      EXPECT_TRUE(c.ok) << "output " << reference.outputs[k] << ": " << c.message;
    }
    checked++;
  }
  EXPECT_EQ(checked, 32);
}

}  // namespace
}  // namespace ts
