// The rule's micro-kernel sketch as part of the schedule space, seen by the searches: its points
// are the rule's schedules of canonical knobs, with features; a mutation of a rule point changes
// its knobs and stays a rule point; draws skip what was measured; the random policy gives the
// rule's sketch part of its batches; a space built from a view alone has no rule sketch. (The
// rule's decision among the listed candidates: space_candidates_test.cpp.)
#include <gtest/gtest.h>

#include <set>

#include "analysis/pipeline_view.h"
#include "features/features.h"
#include "measure/workload_compiler.h"
#include "search/random_search.h"
#include "schedule/rule_sketch.h"
#include "search/schedule_mutation.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

struct Fixture {
  Workload w = test::conv_relu_workload(test::save_conv_chain("rule_points.onnx", 8, 32, 48, 9, 11));
  LoweredWorkload lw = lower_workload(w);
  ScheduleSpace space{lw.outputs, host_code_target(), space_options_for(w)};
  std::set<std::string> measured;
  SearchTask task() {
    return SearchTask{&w, &space, [this](const std::string& h) { return measured.count(h) > 0; }};
  }
};

// Knobs in which two rule points differ.
int knobs_apart(const Schedule& a, const Schedule& b) {
  const auto p = rule_knobs(a)->params(), q = rule_knobs(b)->params();
  int differ = 0;
  for (const auto& [key, value] : p) differ += !q.count(key) || q.at(key) != value;
  for (const auto& [key, value] : q) differ += !p.count(key);
  return differ;
}

TEST(RulePoints, AreCanonicalRuleSchedulesWithFeaturesNeverRepeatedNorMeasured) {
  Fixture f;
  const RuleSketch* rule = f.space.rule_sketch();
  ASSERT_NE(rule, nullptr);
  ASSERT_TRUE(f.space.rule_schedule());
  EXPECT_TRUE(is_rule_default(*f.space.rule_schedule()));
  std::mt19937_64 rng(5);
  std::set<std::string> skip;
  const auto first = draw_rule_points(f.space, 6, skip, {}, nullptr, rng);
  ASSERT_EQ(first.size(), 6u);
  const FeatureExtractor fx(f.space);
  for (const auto& s : first) {
    const auto k = rule_knobs(s);
    ASSERT_TRUE(k) << s.to_json();
    EXPECT_EQ(rule->canonical(*k), *k);
    EXPECT_EQ(s.hash(), rule->schedule(*k).hash());
    EXPECT_FALSE(fx.flat(s).empty()) << s.to_json();
  }
  EXPECT_EQ(skip.size(), 6u);
  // Another run measured some: neither they nor the earlier draws come back.
  for (int i = 0; i < 20; i++) f.measured.insert(f.space.sample_rule(rng)->hash());
  for (const auto& s : draw_rule_points(f.space, 6, skip, f.task().measured, nullptr, rng)) {
    EXPECT_FALSE(f.measured.count(s.hash())) << s.to_json();
    for (const auto& t : first) EXPECT_NE(s.hash(), t.hash());
  }
}

TEST(RulePoints, AMutationChangesKnobsAndStaysARulePoint) {
  Fixture f;
  std::mt19937_64 rng(11);
  const Schedule base = *f.space.sample_rule(rng);
  int near = 0, moved = 0;
  for (int i = 0; i < 12; i++) {
    const Schedule m = mutate(f.space, base, rng);
    ASSERT_TRUE(rule_knobs(m)) << m.to_json();
    moved += m.hash() != base.hash();
    near += knobs_apart(m, base) <= 2;  // one knob redrawn (and canonical() possibly dropping another)
  }
  EXPECT_GT(moved, 0);
  EXPECT_EQ(near, 12);
  // Draws around a point are its mutations half the time: some differ from it in one knob.
  std::set<std::string> skip;
  int around = 0;
  for (const auto& s : draw_rule_points(f.space, 12, skip, {}, &base, rng)) around += knobs_apart(s, base) <= 2;
  EXPECT_GT(around, 0);
}

TEST(RulePoints, RandomSearchGivesThemPartOfItsBatches) {
  Fixture f;
  RandomSearch policy;
  std::mt19937_64 rng(9);
  const auto batch = policy.propose(f.task(), 16, rng);
  ASSERT_EQ(batch.size(), 16u);
  int rule = 0;
  for (const auto& s : batch) rule += rule_knobs(s).has_value();
  EXPECT_GE(rule, 4);
  EXPECT_LE(rule, 12);
  // A space built from the view alone has no rule sketch: none.
  const ScheduleSpace view_only(build_pipeline_view(f.lw.outputs), space_options_for(f.w));
  EXPECT_EQ(view_only.rule_sketch(), nullptr);
  EXPECT_FALSE(view_only.rule_schedule());
  SearchTask plain = f.task();
  plain.space = &view_only;
  for (const auto& s : policy.propose(plain, 8, rng)) EXPECT_FALSE(rule_knobs(s)) << s.to_json();
}

}  // namespace
}  // namespace ts
