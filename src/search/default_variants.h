#pragma once
// DefaultVariants: a policy's share of proposals among the default rule's knob variants
// (schedule/default_knobs.h) for each task: half the draws are uniform, half mutate the fastest
// variant observed so far (the rule itself until one beats it), like a (1+1) evolution strategy
// over the knobs. A variant is Schedule data with features: a learning policy draws more than it
// needs and lets its model pick (draw, then take); the others propose the draws as they come.
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "search/search_policy.h"

namespace ts {

class DefaultVariants {
 public:
  // Up to n distinct variants neither taken from this object nor measured (task.measured); none
  // when the task has no knob space or it is empty. Not marked: take() what is proposed.
  std::vector<Schedule> draw(const SearchTask& task, size_t n, std::mt19937_64& rng);
  // Marks a drawn variant as proposed: later draws skip it.
  void take(const SearchTask& task, const Schedule& s);
  // draw(), every variant taken.
  std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64& rng);
  // Measured schedules of the task (any kind: variants among them are kept track of).
  void observe(const SearchTask& task, const std::vector<Schedule>& batch, const std::vector<MeasureResult>& results);

 private:
  struct TaskState {
    std::set<std::string> proposed;  // hashes taken
    DefaultKnobs best;               // the fastest variant observed (unset knobs: the rule)
    double best_s = std::numeric_limits<double>::infinity();  // its median
  };
  std::map<std::string, TaskState> tasks_;  // by workload exact key
};

// How many of n proposals go to variants when a policy gives them `share` of its batches: the
// rounded share, with a coin deciding a fractional remainder (so a batch of 1 still gets some).
size_t variant_share(size_t n, double share, std::mt19937_64& rng);

}  // namespace ts
