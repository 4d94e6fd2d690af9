#pragma once
// RandomSearch: uniform random schedules from the task's ScheduleSpace (each decision uniform
// among its candidates), skipping schedules measured before.
#include "search/search_policy.h"

namespace ts {

class RandomSearch : public SearchPolicy {
 public:
  std::string name() const override { return "random"; }
  std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64& rng) override;
};

}  // namespace ts
