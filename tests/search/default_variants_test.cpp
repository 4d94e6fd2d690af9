// DefaultVariants and the policies that use it: proposals are the rule's schedules of canonical
// knob variants, with features, never repeated nor already measured; observing a faster variant makes it the base
// of later mutations; the random policy gives the variants part of its batches.
#include "search/default_variants.h"

#include <gtest/gtest.h>

#include <set>

#include "analysis/pipeline_view.h"
#include "features/features.h"
#include "measure/workload_compiler.h"
#include "search/random_search.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

struct Fixture {
  Workload w = test::conv_relu_workload(test::save_conv_chain("variants.onnx", 8, 32, 48, 9, 11));
  LoweredWorkload lw = lower_workload(w);
  ScheduleSpace space{build_pipeline_view(lw.outputs), space_options_for(w)};
  DefaultKnobSpace knobs{lw.outputs, host_code_target()};
  std::set<std::string> measured;
  SearchTask task() {
    return SearchTask{&w, &space, [this](const std::string& h) { return measured.count(h) > 0; }, &knobs};
  }
};

TEST(DefaultVariants, ProposesFreshCanonicalVariantsAndFollowsTheFastest) {
  Fixture f;
  DefaultVariants v;
  std::mt19937_64 rng(5);
  const auto first = v.propose(f.task(), 6, rng);
  ASSERT_EQ(first.size(), 6u);
  std::set<std::string> seen;
  for (const auto& s : first) {
    const auto k = rule_knobs(s);
    ASSERT_TRUE(k) << s.to_json();
    EXPECT_EQ(f.knobs.canonical(*k), *k);
    EXPECT_TRUE(seen.insert(s.hash()).second);
  }
  // Another run measured some: neither they nor this object's earlier proposals come back.
  for (int i = 0; i < 20; i++) f.measured.insert(f.knobs.schedule(f.knobs.draw(rng)).hash());
  const auto second = v.propose(f.task(), 6, rng);
  for (const auto& s : second) {
    EXPECT_FALSE(seen.count(s.hash())) << s.to_json();
    EXPECT_FALSE(f.measured.count(s.hash())) << s.to_json();
    seen.insert(s.hash());
  }
  // Drawn but not taken, a variant comes back; taken, it does not.
  const auto drawn = v.draw(f.task(), 3, rng);
  ASSERT_FALSE(drawn.empty());
  v.take(f.task(), drawn[0]);
  for (const auto& s : v.draw(f.task(), 40, rng)) EXPECT_NE(s.hash(), drawn[0].hash());
  // Each is stage data the features describe.
  const FeatureExtractor fx(f.space);
  for (const auto& s : first) EXPECT_FALSE(fx.flat(s).empty()) << s.to_json();
  // The fastest observed variant is what mutations start from: some later proposal differs
  // from it in one knob only.
  MeasureResult fast, slow;
  fast.median = 1e-4;
  fast.times = {1e-4};
  slow.median = 2e-4;
  slow.times = {2e-4};
  v.observe(f.task(), {first[0], first[1]}, {slow, fast});
  const DefaultKnobs best = *rule_knobs(first[1]);
  const auto third = v.propose(f.task(), 12, rng);
  int near = 0;
  for (const auto& s : third) {
    const auto p = rule_knobs(s)->params(), b = best.params();
    int differ = 0;
    for (const auto& [key, value] : p) differ += !b.count(key) || b.at(key) != value;
    for (const auto& [key, value] : b) differ += !p.count(key);
    near += differ <= 2;  // one knob redrawn (and canonical() possibly dropping another)
  }
  EXPECT_GT(near, 0);
}

TEST(DefaultVariants, RandomSearchGivesThemPartOfItsBatches) {
  Fixture f;
  RandomSearch policy;
  std::mt19937_64 rng(9);
  const auto batch = policy.propose(f.task(), 16, rng);
  ASSERT_EQ(batch.size(), 16u);
  int variants = 0;
  for (const auto& s : batch) variants += rule_knobs(s).has_value();
  EXPECT_GE(variants, 4);
  EXPECT_LE(variants, 12);
  // Without a knob space, none.
  SearchTask plain = f.task();
  plain.default_knobs = nullptr;
  for (const auto& s : policy.propose(plain, 8, rng)) EXPECT_FALSE(rule_knobs(s)) << s.to_json();
}

}  // namespace
}  // namespace ts
