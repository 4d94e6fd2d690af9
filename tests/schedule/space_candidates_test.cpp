// ScheduleSpace::candidates: a decision's candidates listed, distinct, the default rule's own
// decision among them at every decision of a walk along the rule (a Winograd conv's stages
// included: their sites beside their consumers), and every listed candidate,
// completed, a valid schedule; the listing is the same on every call.
#include <gtest/gtest.h>

#include <set>

#include "analysis/pipeline_view.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"
#include "schedule/schedule_space.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

std::string key(const DecisionCandidate& c) {
  Schedule s;
  for (const auto& e : c.entries) s.set(e);
  if (c.layout) s.layouts.push_back(*c.layout);
  return s.to_json();
}

struct Walk {
  Workload w;
  LoweredWorkload lw;
  ScheduleSpace space;
  Schedule rule;
  explicit Walk(Workload wl)
      : w(std::move(wl)), lw(lower_workload(w)), space(lw.outputs, host_code_target(), space_options_for(w)),
        rule(default_schedule(lw.outputs, host_code_target())) {}
};

TEST(SpaceCandidates, TheRulesDecisionIsListedAtEveryDecisionOfAWalkAlongIt) {
  const Workload wino = test::winograd_conv_relu_workload("candidates_wino.onnx");
  ASSERT_FALSE(wino.name.empty()) << "the 3x3 conv at 14 x 14 runs as Winograd at 1 thread";
  for (Workload w : {test::conv_relu_workload(test::save_conv_chain("candidates_chain.onnx", 8, 32, 48, 9, 11)),
                     test::matmul_relu_workload(), wino}) {
    Walk walk(std::move(w));
    Schedule partial;
    for (size_t i = 0; i < walk.space.decisions().size(); i++) {
      // The space lists the rule's decision itself (it holds the rule's sketch).
      const std::vector<DecisionCandidate> cands = walk.space.candidates(partial, i);
      ASSERT_FALSE(cands.empty()) << walk.space.schedule_name(i);
      std::set<std::string> keys;
      for (const auto& c : cands) EXPECT_TRUE(keys.insert(key(c)).second) << "listed twice: " << key(c);
      auto rule = std::find_if(cands.begin(), cands.end(), [](const DecisionCandidate& c) { return c.source == "rule"; });
      ASSERT_NE(rule, cands.end()) << walk.w.name << ": " << walk.space.schedule_name(i);
      for (const auto& e : rule->entries) EXPECT_EQ(*walk.rule.find(e.func, e.definition), e);
      walk.space.take(partial, i, *rule);
    }
    // The walk made the rule's decisions (the rule also schedules the Funcs its layouts make).
    for (const auto& e : partial.stages) EXPECT_EQ(*walk.rule.find(e.func, e.definition), e);
    partial.layouts = walk.rule.layouts;
    for (const auto& e : walk.rule.stages)
      if (!partial.find(e.func, e.definition)) partial.set(e);
    EXPECT_EQ(partial.validate(walk.lw.outputs), std::nullopt);
  }
}

TEST(SpaceCandidates, EveryListedCandidateCompletesToAValidSchedule) {
  Walk walk(test::conv_relu_workload(test::save_conv_chain("candidates_valid.onnx", 8, 16, 32, 8, 8)));
  const std::vector<DecisionCandidate> first = walk.space.candidates(Schedule{}, 0);
  ASSERT_GT(first.size(), 4u) << "the output's classes: vector choices, parallel groups, unrolls";
  std::set<bool> vectorized;
  std::mt19937_64 rng(3);
  for (const DecisionCandidate& c : first) {
    Schedule s;
    walk.space.take(s, 0, c);
    for (size_t i = 1; i < walk.space.decisions().size(); i++) walk.space.sample_decision(s, i, rng);
    EXPECT_EQ(s.validate(walk.lw.outputs), std::nullopt) << key(c);
    vectorized.insert(!c.entries.at(0).vectorize.empty());
  }
  EXPECT_EQ(vectorized.size(), 2u) << "vectorized and scalar classes both listed";
  // Deterministic: the same list again.
  const std::vector<DecisionCandidate> again = walk.space.candidates(Schedule{}, 0);
  ASSERT_EQ(again.size(), first.size());
  for (size_t k = 0; k < first.size(); k++) EXPECT_EQ(key(again[k]), key(first[k]));
  // More members per class list more.
  DecisionCandidateOptions more;
  more.per_class = 4;
  EXPECT_GT(walk.space.candidates(Schedule{}, 0, more).size(), first.size());
}

}  // namespace
}  // namespace ts
