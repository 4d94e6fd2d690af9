#pragma once
// Halide's autoschedulers as search policies (baselines on the same workloads, measured the
// same way):
//  - adams2019: the first proposal is the plugin's own beam search (beam 32, 5 passes); later
//    ones rerun it with random dropout (HL_RANDOM_DROPOUT 90 %, a new HL_SEED each), as
//    Halide's autotuning loop does to produce distinct candidates: the graph-network paper's
//    noise-injected schedules.
//  - adams2019-greedy: the same with beam size 1 (one pass).
//  - li2018, mullapudi2016: deterministic, one proposal per task.
// Each proposal is what the autoscheduler chose for the task's workload read back as stage
// schedules (schedule/schedule_reader.h), so it is data with features like any schedule, its
// origin the recipe that made it. The autoscheduler runs in a forked worker (the Adams2019
// plugin reads its dropout settings once per process). A choice the reader cannot hold (it
// names the directive, e.g. an rfactor) is proposed as the recipe itself, replayed at compile
// time, without features. A task's deadline bounds the runs: none starts past it, and each is
// stopped by it.
#include <optional>
#include <string>

#include "search/search_policy.h"

namespace ts {

// The policy names this class implements.
const std::vector<std::string>& halide_policy_names();

// Seconds one autoscheduler run may take (Adams2019's beam search on a large conv: seconds).
inline constexpr double kAutoschedulerChoiceTimeoutS = 300;

// What the autoscheduler `recipe` (Schedule::autoscheduler) chooses for workload w on this host,
// as stage schedules whose origin is the recipe; nullopt with the reason in `why` when the
// choice cannot be read as data or the autoscheduler fails or runs past `timeout_s` (it runs in
// a forked worker).
std::optional<Schedule> autoscheduler_choice(const Workload& w, const Schedule& recipe, std::string& why,
                                             double timeout_s = kAutoschedulerChoiceTimeoutS);

class HalideAutoschedulerPolicy : public SearchPolicy {
 public:
  // policy: one of "adams2019", "adams2019-greedy", "li2018", "mullapudi2016".
  explicit HalideAutoschedulerPolicy(std::string policy);
  std::string name() const override { return policy_; }
  std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64& rng) override;

 private:
  Schedule recipe(int64_t seed) const;  // seed < 0: no dropout
  std::string policy_;
};

}  // namespace ts
