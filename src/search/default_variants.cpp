#include "search/default_variants.h"

#include <cmath>

namespace ts {

std::vector<Schedule> DefaultVariants::draw(const SearchTask& task, size_t n, std::mt19937_64& rng) {
  std::vector<Schedule> out;
  if (!task.default_knobs || task.default_knobs->empty() || n == 0) return out;
  const DefaultKnobSpace& space = *task.default_knobs;
  TaskState& ts = tasks_[task.workload->exact_key];
  std::set<DefaultKnobs> seen;  // canonical knobs give one schedule each: no need to build repeats
  std::set<std::string> drawn;
  // A small knob space is exhausted after a few draws that only repeat.
  for (size_t tries = 0; out.size() < n && tries < 20 * n + 20; tries++) {
    const DefaultKnobs k = (rng() & 1) ? space.mutate(ts.best, rng) : space.draw(rng);
    if (!seen.insert(k).second) continue;
    Schedule s = space.schedule(k);
    const std::string h = s.hash();
    if (ts.proposed.count(h) || drawn.count(h) || (task.measured && task.measured(h))) continue;
    drawn.insert(h);
    out.push_back(std::move(s));
  }
  return out;
}

void DefaultVariants::take(const SearchTask& task, const Schedule& s) {
  tasks_[task.workload->exact_key].proposed.insert(s.hash());
}

std::vector<Schedule> DefaultVariants::propose(const SearchTask& task, size_t n, std::mt19937_64& rng) {
  std::vector<Schedule> out = draw(task, n, rng);
  for (const Schedule& s : out) take(task, s);
  return out;
}

void DefaultVariants::observe(const SearchTask& task, const std::vector<Schedule>& batch,
                              const std::vector<MeasureResult>& results) {
  TaskState& ts = tasks_[task.workload->exact_key];
  for (size_t k = 0; k < batch.size() && k < results.size(); k++) {
    const auto knobs = rule_knobs(batch[k]);
    if (!knobs || !results[k].valid() || results[k].median >= ts.best_s) continue;
    ts.best = *knobs;
    ts.best_s = results[k].median;
  }
}

size_t variant_share(size_t n, double share, std::mt19937_64& rng) {
  const double want = n * share;
  size_t k = static_cast<size_t>(std::floor(want));
  if (std::uniform_real_distribution<double>(0, 1)(rng) < want - k) k++;
  return std::min(k, n);
}

}  // namespace ts
