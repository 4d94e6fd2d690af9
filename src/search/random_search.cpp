#include "search/random_search.h"

#include <set>

namespace ts {

std::vector<Schedule> RandomSearch::propose(const SearchTask& task, size_t n, std::mt19937_64& rng) {
  std::vector<Schedule> out = variants_.propose(task, variant_share(n, kVariantShare, rng), rng);
  std::set<std::string> hashes;
  for (const auto& s : out) hashes.insert(s.hash());
  // A space of one or a few schedules is exhausted after a few draws that only repeat.
  for (size_t tries = 0; out.size() < n && tries < 50 * n + 50; tries++) {
    Schedule s = task.space->sample(rng);
    const std::string h = s.hash();
    if (hashes.count(h) || (task.measured && task.measured(h))) continue;
    hashes.insert(h);
    out.push_back(std::move(s));
  }
  // The space ran dry: the variants take the rest.
  if (out.size() < n) {
    std::vector<Schedule> more = variants_.propose(task, n - out.size(), rng);
    for (auto& s : more) out.push_back(std::move(s));
  }
  return out;
}

void RandomSearch::observe(const SearchTask& task, const std::vector<Schedule>& batch,
                           const std::vector<MeasureResult>& results) {
  variants_.observe(task, batch, results);
}

}  // namespace ts
