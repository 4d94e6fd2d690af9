#include "search/random_search.h"

#include <set>

#include "search/schedule_mutation.h"

namespace ts {

std::vector<Schedule> RandomSearch::propose(const SearchTask& task, size_t n, std::mt19937_64& rng) {
  std::set<std::string> hashes;
  std::vector<Schedule> out = draw_rule_points(*task.space, sketch_share(n, kRuleShare, rng), hashes, task.measured, nullptr, rng);
  // A space of one or a few schedules is exhausted after a few draws that only repeat.
  for (size_t tries = 0; out.size() < n && tries < 50 * n + 50; tries++) {
    Schedule s = task.space->sample(rng);
    const std::string h = s.hash();
    if (hashes.count(h) || (task.measured && task.measured(h))) continue;
    hashes.insert(h);
    out.push_back(std::move(s));
  }
  // The space ran dry: the rule's sketch takes the rest.
  if (out.size() < n)
    for (auto& s : draw_rule_points(*task.space, n - out.size(), hashes, task.measured, nullptr, rng)) out.push_back(std::move(s));
  return out;
}

}  // namespace ts
