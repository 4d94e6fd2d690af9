#pragma once
// RandomSearch: random schedules from the task's ScheduleSpace (as its sampling says), skipping
// schedules measured before. Half of each batch goes to the default rule's knob variants
// (search/default_variants.h) where the task has them: the space's draws rarely match the
// default's micro-kernels, its variants start there.
#include "search/default_variants.h"
#include "search/search_policy.h"

namespace ts {

class RandomSearch : public SearchPolicy {
 public:
  static constexpr double kVariantShare = 0.5;  // of each batch, to the default's variants

  std::string name() const override { return "random"; }
  std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64& rng) override;
  void observe(const SearchTask& task, const std::vector<Schedule>& batch, const std::vector<MeasureResult>& results) override;

 private:
  DefaultVariants variants_;
};

}  // namespace ts
