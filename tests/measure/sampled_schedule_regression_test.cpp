// Schedules drawn for random-network workloads that once computed wrong values. Each case is the
// workload's subgraph as a records database keeps it (tests/measure/data/NAME.onnx,
// graph/workload_onnx.h) and the schedule (NAME.schedule.json), measured like any candidate: it
// must compute what the default schedule computes. What each case was and what fixed it is in
// the table.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "graph/workload_onnx.h"
#include "measure/measurer.h"
#include "schedule/schedule.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

std::string read_data(const std::string& name) {
  const std::string path = std::string(TENSORSCHED_SOURCE_DIR) + "/tests/measure/data/" + name;
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot be read");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// BatchNormalization cases: the weights are workload inputs drawn at random, and a negative
// variance made NaNs that Relu / Softplus turned into numbers or not by schedule (graph.h:
// random_inputs now draws a variance positive). Adams2019 cases: its choice stored a Func outside
// its compute loop, and Halide 14's sliding window computed wrong values; the schedule here is
// that choice as the reader now reads it, stored at the compute level (schedule_reader.h).
// Stratified cases: the drawn schedule reordered the storage of Funcs read in vectors along
// another argument, and Halide 14 computed wrong values; the space no longer draws storage
// orders (schedule_space.h), and the schedule here is the drawn one with its storage in
// argument order. Guarded-tail cases: a LogSoftmax over an axis of 1 ([1, 9, 47, 1]) whose sum's
// update was vectorized by 4 over 9 rows with a guarded tail summed some rows twice (and another
// draw crashed), a Min+Max+Add whose Max was vectorized by 8 over 9 strided rows read garbage; the
// space now draws a guarded tail only along a pure definition's innermost storage dim, and the
// schedule here is the drawn one without those vectors.
const char* const kCases[] = {"batchnorm_leakyrelu_add_relu", "batchnorm_softplus", "adams2019_concat_concat",
                              "adams2019_sum_celu_mean_relu", "adams2019_dilated_blocked_conv",
                              "stratified_conv_max_hardswish_min_selu", "stratified_add_add_max_softsign",
                              "stratified_layernorm", "stratified_sum_celu_mean_relu", "stratified_logsoftmax_axis0",
                              "stratified_min_max_add"};

TEST(SampledScheduleRegression, OnceWrongSchedulesComputeTheDefaultsValues) {
  MeasureOptions o;
  o.repeats = 1;
  o.warmup = 0;
  o.compile_jobs = 2;
  o.cache_root = (test::temp_dir() / "cache").string();
  for (const std::string name : kCases) {
    SCOPED_TRACE(name);
    const Workload w = workload_from_subgraph(read_data(name + ".onnx"), name);
    Measurer m(w, o);
    ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
    const Schedule s = Schedule::from_json(read_data(name + ".schedule.json"));
    const MeasureResult r = m.measure_batch({s}).at(0);
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
  }
}

}  // namespace
}  // namespace ts
