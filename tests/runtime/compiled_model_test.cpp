// CompiledModel on a real ONNX file: AOT per-workload code equals the whole-graph JIT result,
// a second compile with the same cache compiles nothing, and a tuned schedule from a records
// database replaces the default for its workload (falling back when it does not compile).
#include "runtime/compiled_model.h"

#include <gtest/gtest.h>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "tune/records_db.h"

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

TEST(CompiledModel, RunsTunedScheduleFromRecordsDb) {
  const Graph g = test::import_model(test::save_matmul_relu_model());
  const Workload w = test::matmul_relu_workload();
  RecordsDB db((test::temp_dir() / "records.db").string());
  db.add(test::measured_record(w, test::matmul_relu_schedule(w, 8, true), 1e-3));
  auto best = db.best(w.exact_key, 1);
  ASSERT_EQ(best.size(), 1u);

  CompileOptions plain_opts;
  plain_opts.cache_root = (test::temp_dir() / "cache").string();
  CompileOptions tuned_opts = plain_opts;
  tuned_opts.schedules[w.exact_key] = Schedule::from_json(best[0].schedule_json);
  CompiledModel plain(g, plain_opts), tuned(g, tuned_opts);
  EXPECT_EQ(plain.stats().tuned, 0);
  EXPECT_EQ(tuned.stats().tuned, 1);
  EXPECT_EQ(tuned.stats().compiled, 1);  // tuned and default code coexist in the cache
  EXPECT_TRUE(tuned.stats().warnings.empty());
  auto in = random_inputs(g, 5);
  auto want = plain.run(in);
  auto c = compare_tensors(tuned.run(in)[0], want[0], 1e-5, 1e-6);
  EXPECT_TRUE(c.ok) << c.message;

  // A schedule that does not apply to the workload: the default runs, with a warning.
  CompileOptions broken_opts = plain_opts;
  Schedule broken = tuned_opts.schedules[w.exact_key];
  broken.stages.front().vectorize = "no_such_loop";
  broken_opts.schedules[w.exact_key] = broken;
  CompiledModel fallback(g, broken_opts);
  EXPECT_EQ(fallback.stats().tuned, 0);
  ASSERT_EQ(fallback.stats().warnings.size(), 1u);
  EXPECT_NE(fallback.stats().warnings[0].find("failed to compile, using the default"), std::string::npos)
      << fallback.stats().warnings[0];
  c = compare_tensors(fallback.run(in)[0], want[0], 0, 0);
  EXPECT_TRUE(c.ok) << c.message;
}

}  // namespace
}  // namespace ts
