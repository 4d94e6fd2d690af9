// Measurer on a real lowered MatMul+Add+Relu workload: the reference and valid candidates are
// timed, and every failure of a candidate (invalid, compile timeout, crash, hang, wrong values)
// is a result of its own kind while the candidates after it are still measured.
#include "measure/measurer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "measure/time_stats.h"
#include "measure/workload_compiler.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace fs = std::filesystem;

namespace ts {
namespace {

MeasureOptions test_options() {
  MeasureOptions o;
  o.cache_root = (test::temp_dir() / "cache").string();
  o.compile_jobs = 2;
  return o;
}

TEST(Measurer, SummarizeTimes) {
  MeasureResult r;
  r.times = {3e-3, 1e-3, 2e-3};
  summarize_times(r);
  EXPECT_DOUBLE_EQ(r.median, 2e-3);
  EXPECT_DOUBLE_EQ(r.min, 1e-3);
  EXPECT_DOUBLE_EQ(r.noise, 1.0);  // (3 - 1) / 2
  r.times = {4e-3, 1e-3};
  summarize_times(r);
  EXPECT_DOUBLE_EQ(r.median, 2.5e-3);
  r.times.clear();
  summarize_times(r);
  EXPECT_EQ(r.median, 0);
  EXPECT_EQ(r.noise, 0);
}

TEST(Measurer, SpreadIgnoresASingleOutlier) {
  TimeStats st = time_stats({1.0, 1.0, 1.1, 1.0, 1.1, 1.0, 9.0, 1.0});
  EXPECT_GT(st.noise, 3.0);    // (9 - 1) / mean
  EXPECT_NEAR(st.spread, 0.1, 1e-9);  // quartiles 1.0 and 1.1 around a median of 1.0
  EXPECT_EQ(time_stats({2.0}).spread, 0);
  EXPECT_EQ(time_stats({}).spread, 0);
}

TEST(Measurer, ReferenceValidInvalidAndCompileTimeout) {
  const Workload w = test::matmul_relu_workload();
  MeasureOptions opts = test_options();
  Measurer m(w, opts);
  const MeasureResult& ref = m.reference();
  EXPECT_TRUE(ref.valid()) << ref.error_message;
  EXPECT_EQ(ref.times.size(), 10u);
  EXPECT_GT(ref.median, 0);
  EXPECT_GE(ref.median, ref.min);

  const Schedule good = test::matmul_relu_schedule(w, 8, true);
  Schedule invalid = good;
  invalid.stages.front().vectorize = "no_such_loop";
  auto results = m.measure_batch({good, invalid, good});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].valid()) << results[0].error_kind << ": " << results[0].error_message;
  EXPECT_EQ(results[0].schedule_hash, good.hash());
  EXPECT_EQ(results[0].times.size(), 10u);
  EXPECT_GT(results[0].median, 0);
  EXPECT_GT(results[0].compile_seconds, 0);
  EXPECT_EQ(results[1].error_kind, "invalid_schedule");
  EXPECT_NE(results[1].error_message.find("no_such_loop"), std::string::npos) << results[1].error_message;
  EXPECT_EQ(results[2].schedule_hash, good.hash());  // a repeat in the batch: measured once, reported twice
  EXPECT_EQ(results[2].times, results[0].times);

  // Candidate code is removed after its run; the reference's stays in the cache.
  CodeCache cache = CodeCache::open_default(host_code_target(), opts.cache_root);
  EXPECT_FALSE(fs::exists(cache.object_path(w, good.hash())));
  EXPECT_TRUE(fs::exists(cache.object_path(w, default_schedule_of(w).hash())));

  // A compile past its time limit is a compile_error naming the timeout.
  MeasureOptions hurried = opts;
  hurried.compile_timeout_s = 0.01;
  Measurer limited(w, hurried);  // its reference is in the cache already: only the candidate compiles
  auto timed_out = limited.measure_batch({test::matmul_relu_schedule(w, 4, false)});
  EXPECT_EQ(timed_out[0].error_kind, "compile_error");
  EXPECT_NE(timed_out[0].error_message.find("timed out after 0.01 s"), std::string::npos) << timed_out[0].error_message;
}

TEST(Measurer, RemeasuresACandidateAgainstTheDefaultInRounds) {
  const Workload w = test::matmul_relu_workload();
  MeasureOptions opts = test_options();
  opts.repeats = 3;
  Measurer m(w, opts);
  const Schedule good = test::matmul_relu_schedule(w, 8, false);
  Measurer::Remeasurement r = m.remeasure_against_default(good, 2);
  ASSERT_TRUE(r.candidate.valid()) << r.candidate.error_message;
  ASSERT_TRUE(r.default_result.valid()) << r.default_result.error_message;
  EXPECT_EQ(r.candidate.times.size(), 6u);  // 2 rounds x 3 repeats, pooled
  EXPECT_EQ(r.default_result.times.size(), 6u);
  EXPECT_EQ(r.candidate.schedule_hash, good.hash());
  EXPECT_GT(r.candidate.median, 0);
  EXPECT_FALSE(fs::exists(CodeCache::open_default(host_code_target(), opts.cache_root).object_path(w, good.hash())));

  Schedule broken = good;
  broken.stages.front().vectorize = "no_such_loop";
  Measurer::Remeasurement bad = m.remeasure_against_default(broken, 2);
  EXPECT_EQ(bad.candidate.error_kind, "compile_error");
  EXPECT_TRUE(bad.candidate.times.empty());
}

// A first timed run past the loser time ends a candidate's repeats (confirmation pairs still
// time all of theirs); a batch given a time limit it cannot meet comes back cut, not as errors.
TEST(Measurer, SureLosersAreTimedOnceAndALimitedBatchIsCut) {
  const Workload w = test::matmul_relu_workload();
  MeasureOptions opts = test_options();
  opts.repeats = 3;
  Measurer m(w, opts);
  m.set_loser_time(1e-9);  // every candidate is a sure loser
  const Schedule good = test::matmul_relu_schedule(w, 8, true);
  auto once = m.measure_batch({good});
  ASSERT_TRUE(once[0].valid()) << once[0].error_message;
  EXPECT_EQ(once[0].times.size(), 1u);
  EXPECT_EQ(once[0].median, once[0].times[0]);
  Measurer::Remeasurement r = m.remeasure_against_default(good, 2);
  ASSERT_TRUE(r.candidate.valid()) << r.candidate.error_message;
  EXPECT_EQ(r.candidate.times.size(), 6u);
  EXPECT_EQ(r.default_result.times.size(), 6u);

  auto cut = m.measure_batch({test::matmul_relu_schedule(w, 4, false), test::matmul_relu_schedule(w, 16, false)}, 0.01);
  ASSERT_EQ(cut.size(), 2u);
  for (const auto& c : cut) {
    EXPECT_TRUE(c.cut);
    EXPECT_FALSE(c.valid());
    EXPECT_TRUE(c.error_kind.empty()) << c.error_kind;  // not a fault of the schedule
    EXPECT_TRUE(c.times.empty());
  }
}

TEST(Measurer, FaultsBecomeErrorsAndTuningContinues) {
  const Workload w = test::matmul_relu_workload();
  MeasureOptions opts = test_options();
  opts.repeats = 3;
  opts.run_timeout_s = 2;
  const Schedule segfault = test::matmul_relu_schedule(w, 4, true);
  const Schedule hang = test::matmul_relu_schedule(w, 16, true);
  const Schedule wrong = test::matmul_relu_schedule(w, 8, false);
  const Schedule after = test::matmul_relu_schedule(w, 4, false);
  opts.faults = {{segfault.hash(), InjectedFault::Segfault},
                 {hang.hash(), InjectedFault::Hang},
                 {wrong.hash(), InjectedFault::WrongValues}};
  Measurer m(w, opts);
  EXPECT_EQ(m.reference().times.size(), 3u);

  auto r = m.measure_batch({segfault, hang, wrong, after});
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].error_kind, "crash");
  EXPECT_NE(r[0].error_message.find("Segmentation fault"), std::string::npos) << r[0].error_message;
  EXPECT_EQ(r[1].error_kind, "timeout");
  EXPECT_NE(r[1].error_message.find("timed out after 2 s"), std::string::npos) << r[1].error_message;
  EXPECT_EQ(r[2].error_kind, "wrong_answer");
  EXPECT_NE(r[2].error_message.find("element 0"), std::string::npos) << r[2].error_message;
  for (int i = 0; i < 3; i++) {
    EXPECT_TRUE(r[i].times.empty()) << i;
    EXPECT_EQ(r[i].median, 0) << i;
  }
  EXPECT_TRUE(r[3].valid()) << r[3].error_kind << ": " << r[3].error_message;
  EXPECT_EQ(r[3].times.size(), 3u);
  EXPECT_GT(r[3].min, 0);
}

}  // namespace
}  // namespace ts
