#pragma once
// How well a cost model's predictions match measured times: one set of metrics shared by every
// model, so that models predicting seconds and models predicting scores (rank losses) compare on
// what search needs (order within a workload, finding the best) and, for seconds, on error.
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ts {

struct CostMetrics {
  bool seconds = false;             // the predictions were seconds (else scores, higher = faster)
  size_t samples = 0;               // predictions evaluated
  size_t groups = 0;                // distinct workloads among them
  size_t pairs = 0;                 // same-group pairs with different true times
  double mean_abs_rel_error = 0;    // mean |pred - true| / true; NaN unless seconds
  double max_abs_rel_error = 0;     // max |pred - true| / true; NaN unless seconds
  double r2 = 0;                    // R^2 of ln(pred) against ln(true); NaN unless seconds or when undefined
  double pairwise_accuracy = 0;     // fraction of `pairs` ordered correctly (prediction ties count 1/2); NaN without pairs
  std::vector<std::pair<int, double>> top_k_recall;  // (k, fraction of groups whose true best is among the k best predicted)

  // {"seconds", "samples", "groups", "pairs", "pairwise_accuracy", "top_k_recall": {"1": r, ...},
  //  and when seconds: "mean_abs_rel_error", "max_abs_rel_error", "r2"}; NaN is written as null.
  nlohmann::json to_json() const;
  // One line, e.g. "n=120 groups=3 pairs=4000 pairwise=0.912 top1=0.67 top5=1 r2=0.93 mare=0.21".
  std::string summary() const;
};

// Metrics of `predictions` (seconds when `predicts_seconds`, else scores where higher means
// faster) against measured `seconds` (> 0), `groups[i]` naming the workload of sample i.
// Top-k recall: per group, the true fastest sample (any of them on a tie) counts as found when
// fewer than k others are predicted at least as good (ties count against the model); groups
// with at most k samples always count as found. Throws Error on mismatched lengths, a
// non-finite prediction, a non-positive time, or a non-positive predicted time; deterministic.
CostMetrics evaluate_cost_predictions(const std::vector<double>& predictions, const std::vector<double>& seconds,
                                      const std::vector<std::string>& groups, bool predicts_seconds,
                                      const std::vector<int>& top_k = {1, 5, 10});

}  // namespace ts
