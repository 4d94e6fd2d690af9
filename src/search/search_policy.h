#pragma once
// SearchPolicy: proposes the next schedules to measure for one task (a workload), given what
// was measured. See docs/design.md (src/search/). Policies here: `random` (uniform draws from the
// ScheduleSpace), `gbt-sa` (AutoTVM: a learned cost model steering simulated annealing) and
// Halide's own autoschedulers as baselines (`adams2019`,
// `adams2019-greedy`, `li2018`, `mullapudi2016`), whose proposals are AutoschedulerRecipes.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "graph/workload.h"
#include "measure/measurer.h"
#include "schedule/schedule_space.h"

namespace ts {

// What a policy knows of the task it proposes for.
struct SearchTask {
  const Workload* workload = nullptr;     // the workload tuned
  const ScheduleSpace* space = nullptr;   // its schedule space (PipelineView and sketches, the rule's included)
  std::function<bool(const std::string& schedule_hash)> measured;  // whether a schedule was measured already (any run)
  std::optional<std::chrono::steady_clock::time_point> deadline;  // a proposal that searches (Adams2019) ends by then; none: no limit
};

class SearchPolicy {
 public:
  virtual ~SearchPolicy() = default;
  // The name records carry in Record::policy, e.g. "random".
  virtual std::string name() const = 0;
  // Up to n schedules not measured yet; fewer, or none, when the policy has no more to offer.
  virtual std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64& rng) = 0;
  // Results of measured proposals, in proposal order (learning policies use them).
  virtual void observe(const SearchTask& task, const std::vector<Schedule>& batch, const std::vector<MeasureResult>& results) {}
};

struct GbtSaOptions;  // search/gbt_sa_search.h

// Names accepted by make_policy().
const std::vector<std::string>& policy_names();
// A fresh policy; throws Error naming the policy and the known ones when unknown. `gbt` sets
// the options of "gbt-sa" (ignored by the others).
std::unique_ptr<SearchPolicy> make_policy(const std::string& name);
std::unique_ptr<SearchPolicy> make_policy(const std::string& name, const GbtSaOptions& gbt);

}  // namespace ts
