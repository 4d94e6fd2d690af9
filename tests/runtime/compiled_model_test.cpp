// CompiledModel on a real ONNX file: AOT per-workload code equals the whole-graph JIT result,
// and a second compile with the same cache compiles nothing.
#include "runtime/compiled_model.h"

#include <gtest/gtest.h>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Graph small_cnn() {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 12, 12})
      .initializer("w", test::rand_f32({8, 3, 3, 3}, 1))
      .initializer("bias", test::rand_f32({8}, 2))
      .initializer("scale", random_tensor(DType::Float32, {8}, 3, 0.5, 1.5))
      .initializer("beta", test::rand_f32({8}, 4))
      .initializer("mean", test::rand_f32({8}, 5))
      .initializer("var", random_tensor(DType::Float32, {8}, 6, 0.5, 1.5))
      .initializer("fc", test::rand_f32({5, 8 * 6 * 6}, 7))
      .initializer("shape", Tensor::from_i64({1, -1}, {2}))
      .node("Conv", {"x", "w", "bias"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"})
      .node("Relu", {"bn"}, {"r"})
      .node("MaxPool", {"r"}, {"p"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}})
      .node("Reshape", {"p", "shape"}, {"f"})
      .node("Gemm", {"f", "fc"}, {"logits"}, {{"transB", int64_t{1}}})
      .node("Softmax", {"logits"}, {"y"})
      .output("y");
  Graph g = test::import_model(b.save("cnn.onnx"));
  return g;
}

TEST(CompiledModel, MatchesWholeGraphJitAndCachesCode) {
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  Graph g = small_cnn();
  auto in = random_inputs(g, 3);
  auto want = GraphRunner(g).run(in);

  CompiledModel first(g, opts);
  EXPECT_EQ(first.stats().workloads, 5);  // Conv(+BN folded)+Relu, MaxPool, Reshape, Gemm, Softmax
  EXPECT_EQ(first.stats().compiled, 5);
  auto got = first.run(in);
  auto c = compare_tensors(got[0], want[0], 1e-5, 1e-6);
  EXPECT_TRUE(c.ok) << c.message;

  CompiledModel second(g, opts);
  EXPECT_EQ(second.stats().compiled, 0);
  EXPECT_EQ(second.stats().cache_hits, 5);
  second.set_threads(1);
  c = compare_tensors(second.run(in)[0], want[0], 1e-5, 1e-6);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(CompiledModel, RejectsWrongInputs) {
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(small_cnn(), opts);
  EXPECT_THROW(m.run({}), Error);
  EXPECT_THROW(m.run({{"x", test::rand_f32({1, 3, 12, 11}, 1)}}), Error);
  auto in = random_inputs(m.graph(), 1);
  in["fc"] = test::rand_f32({5, 288}, 1);
  EXPECT_THROW(m.run(in), Error);
}

}  // namespace
}  // namespace ts
