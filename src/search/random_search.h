#pragma once
// RandomSearch: random schedules from the task's ScheduleSpace (as its sampling says), skipping
// schedules measured before. Half of each batch are random points of the space's rule sketch
// (ScheduleSpace::sample_rule) where it has one: the space's decisions rarely meet the default's
// micro-kernels, the rule's sketch starts there.
#include "search/search_policy.h"

namespace ts {

class RandomSearch : public SearchPolicy {
 public:
  static constexpr double kRuleShare = 0.5;  // of each batch, to the rule sketch's points

  std::string name() const override { return "random"; }
  std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64& rng) override;
};

}  // namespace ts
