#pragma once
// Halide's autoschedulers as search policies (baselines on the same workloads, measured the
// same way). Each proposal is an AutoschedulerRecipe, replayed at compile time:
//  - adams2019: the first proposal is the plugin's own beam search (beam 32, 5 passes); later
//    ones rerun it with random dropout (HL_RANDOM_DROPOUT 90 %, a new HL_SEED each), as
//    Halide's autotuning loop does to produce distinct candidates.
//  - adams2019-greedy: the same with beam size 1 (one pass).
//  - li2018, mullapudi2016: deterministic, one proposal per task.
#include "search/search_policy.h"

namespace ts {

// The policy names this class implements.
const std::vector<std::string>& halide_policy_names();

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
