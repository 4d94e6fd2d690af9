// refit(): schedules of one conv workload carried to convs of the same class with other sizes
// (channels, spatial size, kernel size, stride) compile and compute what the target's default
// computes, measured through the Measurer; what cannot be carried is reported, never thrown.
#include "schedule/refit.h"

#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "analysis/pipeline_view.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;
using test::rand_f32;

// The only workload of Conv(k x k, stride, pad k/2) + bias + Relu on x[1, cin, hw, hw].
Workload conv_relu(const std::string& file, int64_t cin, int64_t cout, int64_t hw, int64_t k, int64_t stride) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {1, cin, hw, hw})
      .initializer("w", rand_f32({cout, cin, k, k}, 1))
      .initializer("b", rand_f32({cout}, 2))
      .node("Conv", {"x", "w", "b"}, {"c"},
            {{"pads", std::vector<int64_t>(4, k / 2)}, {"strides", std::vector<int64_t>{stride, stride}}})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  Partition p = partition_graph(test::import_model(b.save(file)));
  EXPECT_EQ(p.workloads.size(), 1u);
  return p.workloads.at(0);
}

struct Target {
  Workload w;
  LoweredWorkload lowered;
  ScheduleSpace space;
  explicit Target(Workload wl)
      : w(std::move(wl)),
        lowered(lower_workload(w)),
        space(build_pipeline_view(lowered.outputs), space_options_for(w, options())) {}
  static SpaceOptions options() {
    SpaceOptions o;
    o.vector_bytes = native_vector_bytes(Halide::get_host_target());
    return o;
  }
};

MeasureOptions quick_measure() {
  MeasureOptions m;
  m.repeats = 1;
  m.warmup = 0;
  m.compile_timeout_s = 600;
  m.cache_root = (test::temp_dir() / "refit_cache").string();
  return m;
}

TEST(Refit, OntoItsOwnWorkloadChangesNothing) {
  Target t(conv_relu("own.onnx", 16, 32, 14, 3, 1));
  ASSERT_NE(t.space.sketch(), nullptr);
  std::mt19937_64 rng(7);
  for (int k = 0; k < 10; k++) {
    const Schedule s = t.space.sketch()->build(t.space, t.space.sketch()->draw(rng));
    RefitResult r = refit(s, t.space, t.lowered.outputs);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_TRUE(r.changes.empty()) << r.changes.front();
    EXPECT_EQ(r.schedule.hash(), s.hash());
  }
}

TEST(Refit, SketchPointsCarryAcrossSizesAndComputeTheRightValues) {
  Target donor(conv_relu("donor.onnx", 16, 32, 28, 3, 1));
  // Fewer channels and rows, a kernel of 1 (no pad stage), a strided 5x5 kernel.
  std::vector<Target> targets;
  targets.emplace_back(conv_relu("narrow.onnx", 8, 8, 7, 3, 1));
  targets.emplace_back(conv_relu("pointwise.onnx", 24, 48, 14, 1, 1));
  targets.emplace_back(conv_relu("strided.onnx", 8, 16, 15, 5, 2));
  for (const auto& t : targets) ASSERT_EQ(t.w.class_key, donor.w.class_key);
  ASSERT_NE(donor.space.sketch(), nullptr);
  std::mt19937_64 rng(11);
  std::vector<Schedule> donors;
  for (int k = 0; k < 4; k++) donors.push_back(donor.space.sketch()->build(donor.space, donor.space.sketch()->draw(rng)));
  donors.push_back(donor.space.sketch()->build(donor.space, donor.space.sketch()->default_knobs()));
  int carried = 0, changed = 0;
  for (const auto& t : targets) {
    std::vector<Schedule> batch;
    for (const auto& s : donors) {
      RefitResult r = refit(s, t.space, t.lowered.outputs);
      ASSERT_TRUE(r.ok()) << t.w.name << ": " << r.error << "\n" << s.to_json(2);
      EXPECT_FALSE(r.schedule.validate(t.lowered.outputs).has_value());
      changed += !r.changes.empty();
      batch.push_back(r.schedule);
    }
    Measurer m(t.w, quick_measure());
    ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
    auto results = m.measure_batch(batch);
    for (size_t k = 0; k < batch.size(); k++) {
      EXPECT_TRUE(results[k].valid()) << results[k].error_kind << ": " << results[k].error_message << "\n"
                                      << batch[k].to_halide_source();
      carried += results[k].valid();
    }
  }
  EXPECT_GT(changed, 0);  // the 7x7 target cannot keep a 28-wide donor's tiles
  std::cout << carried << " re-fitted schedules compiled and matched the default (" << changed << " adjusted)\n";
}

TEST(Refit, UniformDrawsAreCarriedOrRefusedWithAReason) {
  Target donor(conv_relu("donor_u.onnx", 8, 16, 12, 3, 1));
  Target target(conv_relu("target_u.onnx", 4, 8, 5, 3, 2));
  std::mt19937_64 rng(5);
  std::vector<Schedule> batch;
  int refused = 0;
  for (int k = 0; k < 40; k++) {
    RefitResult r = refit(donor.space.sample(rng), target.space, target.lowered.outputs);
    if (!r.ok()) {
      EXPECT_FALSE(r.error.empty());
      refused++;
    } else if (batch.size() < 6) {
      batch.push_back(r.schedule);
    }
  }
  EXPECT_LT(refused, 40);
  Measurer m(target.w, quick_measure());
  auto results = m.measure_batch(batch);
  for (size_t k = 0; k < batch.size(); k++)
    EXPECT_TRUE(results[k].valid()) << results[k].error_kind << ": " << results[k].error_message << "\n"
                                    << batch[k].to_halide_source();
  std::cout << 40 - refused << " of 40 uniform draws carried\n";
}

TEST(Refit, ReportsWhatItChangedAndRefusesUnknownLoops) {
  Target t(conv_relu("small.onnx", 4, 8, 6, 3, 1));
  const std::string out = t.space.schedule_name(0);
  const Stage& st = *t.space.view().stage(t.space.decisions()[0]);
  const std::string x = st.dims.at(0).name;
  Schedule s;
  StageSchedule e;
  e.func = out;
  e.placement = Placement::Root;
  e.tiling.push_back({x, {32}, Tail::Auto});  // the target's row is 6 wide
  e.vectorize = x + "_i";
  e.vector_width = 16;
  s.set(e);
  RefitResult r = refit(s, t.space, t.lowered.outputs);
  ASSERT_TRUE(r.ok()) << r.error;
  const StageSchedule* got = r.schedule.find(out);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->tiling[0].factors, std::vector<int64_t>{4});  // the widest multiple of 4 lanes within 6
  EXPECT_EQ(got->vector_width, 4);
  EXPECT_GE(r.changes.size(), 2u);

  e.tiling[0].loop = "no_such_loop";
  e.vectorize.clear();
  e.vector_width = 0;
  Schedule bad;
  bad.set(e);
  RefitResult refused = refit(bad, t.space, t.lowered.outputs);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.error.find("no_such_loop"), std::string::npos) << refused.error;

  Schedule foreign;
  StageSchedule f;
  f.func = "not_a_stage";
  f.placement = Placement::Root;
  foreign.set(f);
  RefitResult dropped = refit(foreign, t.space, t.lowered.outputs);
  EXPECT_TRUE(dropped.ok()) << dropped.error;
  ASSERT_EQ(dropped.changes.size(), 1u);
  EXPECT_NE(dropped.changes[0].find("not_a_stage"), std::string::npos);
}

}  // namespace
}  // namespace ts
