// Halide's autoschedulers as policies: each proposal is the autoscheduler's choice read back as
// stage schedules (data with features and the recipe as its origin), distinct, and computing
// what the default computes; Adams2019's noise-injected reruns among them.
#include "search/halide_autoscheduler.h"

#include <gtest/gtest.h>

#include <set>

#include "analysis/pipeline_view.h"
#include "features/features.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

struct Fixture {
  Workload w = test::conv_relu_workload(test::save_conv_chain("autoscheduler_policy.onnx", 8, 16, 16, 10, 10));
  LoweredWorkload lw = lower_workload(w);
  ScheduleSpace space{build_pipeline_view(lw.outputs), space_options_for(w)};
  std::set<std::string> measured;
  SearchTask task() {
    return SearchTask{&w, &space, [this](const std::string& h) { return measured.count(h) > 0; }};
  }
};

TEST(HalideAutoschedulerPolicy, ProposesTheChoicesAsDataWithFeatures) {
  Fixture f;
  HalideAutoschedulerPolicy adams("adams2019-greedy");
  std::mt19937_64 rng(1);
  const std::vector<Schedule> batch = adams.propose(f.task(), 3, rng);
  ASSERT_FALSE(batch.empty());
  const FeatureExtractor fx(f.space);
  std::set<std::string> hashes;
  for (size_t k = 0; k < batch.size(); k++) {
    const Schedule& s = batch[k];
    EXPECT_FALSE(s.autoscheduler) << "read back as stage schedules: " << s.to_json();
    ASSERT_TRUE(s.origin.has_value());
    EXPECT_EQ(s.origin->generator, "Adams2019");
    EXPECT_EQ(s.origin->params.count("random_dropout_seed"), k == 0 ? 0u : 1u) << "the first is the plain search";
    EXPECT_EQ(s.validate(f.lw.outputs), std::nullopt);
    EXPECT_EQ(fx.flat(s).size(), flat_feature_names().size());
    EXPECT_TRUE(hashes.insert(s.hash()).second) << "proposed twice";
    EXPECT_EQ(Schedule::from_json(s.to_json()).origin, s.origin);
  }
  // Measured like any schedule: they compute what the default computes.
  Measurer m(f.w, test::check_only_options("autoscheduler_policy_cache"));
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  for (const auto& r : m.measure_batch(batch)) EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
  // What was measured is not proposed again.
  for (const auto& s : batch) f.measured.insert(s.hash());
  for (const auto& s : adams.propose(f.task(), 2, rng)) EXPECT_FALSE(hashes.count(s.hash()));
}

// A task's deadline bounds the searches: past it nothing is started, and a search that would run
// past it is stopped there instead of taking its own timeout.
TEST(HalideAutoschedulerPolicy, ADeadlineEndsTheSearches) {
  Fixture f;
  HalideAutoschedulerPolicy adams("adams2019");
  std::mt19937_64 rng(1);
  SearchTask task = f.task();
  task.deadline = std::chrono::steady_clock::now();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(adams.propose(task, 4, rng).empty());
  task.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  const std::vector<Schedule> some = adams.propose(task, 64, rng);
  EXPECT_LT(some.size(), 64u) << "64 searches do not fit in 1.5 s";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 4.0) << "stopped at the deadline";
}

// A policy whose autoscheduler makes one choice: it proposes it once, as data of that generator,
// and nothing once it was measured.
Schedule the_one_choice(Fixture& f, HalideAutoschedulerPolicy& policy, const std::string& generator) {
  std::mt19937_64 rng(1);
  const std::vector<Schedule> batch = policy.propose(f.task(), 4, rng);
  EXPECT_EQ(batch.size(), 1u);
  if (batch.empty()) return {};
  EXPECT_FALSE(batch[0].autoscheduler) << "read back as stage schedules: " << batch[0].to_json(1);
  EXPECT_TRUE(batch[0].origin && batch[0].origin->generator == generator) << batch[0].to_json(1);
  f.measured.insert(batch[0].hash());
  EXPECT_TRUE(policy.propose(f.task(), 4, rng).empty());
  return batch[0];
}

TEST(HalideAutoschedulerPolicy, Li2018ProposesItsOneChoice) {
  Fixture f;
  HalideAutoschedulerPolicy li("li2018");
  the_one_choice(f, li, "Li2018");
}

// Mullapudi2016's choice (its own tiling and grouping of the stages) is data the checker accepts
// and the features describe. It parallelizes a reduction loop of one iteration, which races with
// nothing: measured, it computes what the default computes.
TEST(HalideAutoschedulerPolicy, Mullapudi2016ProposesItsOneChoice) {
  Fixture f;
  HalideAutoschedulerPolicy m("mullapudi2016");
  const Schedule s = the_one_choice(f, m, "Mullapudi2016");
  ASSERT_FALSE(s.stages.empty());
  EXPECT_EQ(s.validate(f.lw.outputs), std::nullopt) << s.to_json(1);
  EXPECT_FALSE(FeatureExtractor(f.space).flat(s).empty());
  Measurer meas(f.w, test::check_only_options("autoscheduler_mullapudi_cache"));
  ASSERT_TRUE(meas.reference().valid()) << meas.reference().error_message;
  for (const auto& r : meas.measure_batch({s})) EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
}

}  // namespace
}  // namespace ts
