// LocalRunner on real compiled code of a MatMul+Add+Relu workload: outputs come back without a
// reference, match it with one, and every failure of the worker (wrong values, crash, hang) is a
// result of its own kind.
#include "measure/local_runner.h"

#include <gtest/gtest.h>

#include "graph/graph.h"
#include "measure/local_builder.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

TEST(LocalRunner, TimesChecksAndNamesEveryFailure) {
  const Workload w = test::matmul_relu_workload();
  const CodeCache cache = CodeCache::open_default(host_code_target(), (test::temp_dir() / "cache").string());
  const Schedule s = test::matmul_relu_schedule(w, 8, true);
  LocalBuilder builder(cache, 1);
  ASSERT_EQ(builder.build({{&w, schedule_fn(s), s.hash(), {}}}, 120)[0].error, "");

  LocalRunner runner(cache);
  EXPECT_EQ(runner.name(), "local");
  const std::map<std::string, Tensor> inputs = random_inputs(w.graph, 1);
  MeasureOptions opts;
  opts.repeats = 4;
  opts.run_timeout_s = 5;
  RunRequest request{&w, s.hash(), {}, &inputs, nullptr, InjectedFault::None};
  std::vector<Tensor> outputs;
  const MeasureResult first = runner.run(request, opts, &outputs);
  ASSERT_TRUE(first.valid()) << first.error_kind << ": " << first.error_message;
  EXPECT_EQ(first.times.size(), 4u);
  EXPECT_GT(first.median, 0);
  EXPECT_EQ(first.schedule_hash, s.hash());
  ASSERT_EQ(outputs.size(), w.graph.outputs.size());
  double sum = 0;
  for (int64_t i = 0; i < outputs[0].size(); i++) sum += outputs[0].get_f64(i);
  EXPECT_GT(sum, 0);  // a ReLU of random values: some are positive

  request.reference = &outputs;
  EXPECT_TRUE(runner.run(request, opts, nullptr).valid());
  request.fault = InjectedFault::WrongValues;
  const MeasureResult wrong = runner.run(request, opts, nullptr);
  EXPECT_EQ(wrong.error_kind, "wrong_answer");
  EXPECT_NE(wrong.error_message.find(w.key_hash()), std::string::npos) << wrong.error_message;
  EXPECT_TRUE(wrong.times.empty());
  request.fault = InjectedFault::Segfault;
  EXPECT_EQ(runner.run(request, opts, nullptr).error_kind, "crash");
  request.fault = InjectedFault::Hang;
  opts.run_timeout_s = 1;
  const MeasureResult hung = runner.run(request, opts, nullptr);
  EXPECT_EQ(hung.error_kind, "timeout");
  EXPECT_NE(hung.error_message.find("timed out after 1 s"), std::string::npos) << hung.error_message;

  request.fault = InjectedFault::None;
  request.schedule_hash = "never_built";
  EXPECT_EQ(runner.run(request, opts, nullptr).error_kind, "runtime_error");
}

}  // namespace
}  // namespace ts
