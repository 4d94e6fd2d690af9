#include "costmodel/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "graph/error.h"

namespace ts {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json CostMetrics::to_json() const {
  nlohmann::json topk = nlohmann::json::object();
  for (const auto& [k, r] : top_k_recall) topk[std::to_string(k)] = number_or_null(r);
  nlohmann::json j = {{"seconds", seconds},   {"samples", samples},
                      {"groups", groups},     {"pairs", pairs},
                      {"pairwise_accuracy", number_or_null(pairwise_accuracy)},
                      {"top_k_recall", topk}};
  if (seconds) {
    j["mean_abs_rel_error"] = number_or_null(mean_abs_rel_error);
    j["max_abs_rel_error"] = number_or_null(max_abs_rel_error);
    j["r2"] = number_or_null(r2);
  }
  return j;
}

std::string CostMetrics::summary() const {
  std::string s = fmt::format("n={} groups={} pairs={} pairwise={:.3f}", samples, groups, pairs, pairwise_accuracy);
  for (const auto& [k, r] : top_k_recall) s += fmt::format(" top{}={:.3f}", k, r);
  if (seconds) s += fmt::format(" r2={:.3f} mare={:.3f} maxre={:.3g}", r2, mean_abs_rel_error, max_abs_rel_error);
  return s;
}

CostMetrics evaluate_cost_predictions(const std::vector<double>& predictions, const std::vector<double>& seconds,
                                      const std::vector<std::string>& groups, bool predicts_seconds,
                                      const std::vector<int>& top_k) {
  const size_t n = predictions.size();
  if (seconds.size() != n || groups.size() != n)
    throw Error(fmt::format("cost metrics: {} predictions, {} times and {} groups: lengths differ", n, seconds.size(),
                            groups.size()));
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(predictions[i]))
      throw Error(fmt::format("cost metrics: prediction {} is not finite ({})", i, predictions[i]));
    if (!(seconds[i] > 0) || !std::isfinite(seconds[i]))
      throw Error(fmt::format("cost metrics: measured time {} is not positive ({})", i, seconds[i]));
    if (predicts_seconds && !(predictions[i] > 0))
      throw Error(fmt::format("cost metrics: predicted time {} is not positive ({})", i, predictions[i]));
  }
  for (int k : top_k)
    if (k < 1) throw Error(fmt::format("cost metrics: top-k needs k >= 1, got {}", k));

  CostMetrics m;
  m.seconds = predicts_seconds;
  m.samples = n;
  // "a better than b" in the prediction's own sense, so scores and seconds share the code below.
  auto better = [&](size_t a, size_t b) {
    return predicts_seconds ? predictions[a] < predictions[b] : predictions[a] > predictions[b];
  };

  // std::map: groups in a fixed order, so sums (and thus results) are deterministic.
  std::map<std::string, std::vector<size_t>> by_group;
  for (size_t i = 0; i < n; ++i) by_group[groups[i]].push_back(i);
  m.groups = by_group.size();

  double correct = 0;
  std::vector<double> found(top_k.size(), 0);
  for (const auto& [g, idx] : by_group) {
    for (size_t a = 0; a < idx.size(); ++a)
      for (size_t b = a + 1; b < idx.size(); ++b) {
        size_t i = idx[a], j = idx[b];
        if (seconds[i] == seconds[j]) continue;
        if (seconds[j] < seconds[i]) std::swap(i, j);  // i is truly faster
        ++m.pairs;
        if (better(i, j)) correct += 1;
        else if (!better(j, i)) correct += 0.5;
      }
    const double best_time = seconds[*std::min_element(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return seconds[a] < seconds[b];
    })];
    // Position of the best-predicted true-fastest sample: how many others are predicted at least as good.
    size_t ahead = idx.size();
    for (size_t i : idx) {
      if (seconds[i] != best_time) continue;
      size_t c = 0;
      for (size_t j : idx)
        if (j != i && !better(i, j)) ++c;
      ahead = std::min(ahead, c);
    }
    for (size_t t = 0; t < top_k.size(); ++t)
      if (ahead < static_cast<size_t>(top_k[t])) found[t] += 1;
  }
  m.pairwise_accuracy = m.pairs > 0 ? correct / static_cast<double>(m.pairs) : kNaN;
  for (size_t t = 0; t < top_k.size(); ++t)
    m.top_k_recall.emplace_back(top_k[t], m.groups > 0 ? found[t] / static_cast<double>(m.groups) : kNaN);

  if (!predicts_seconds) {
    m.mean_abs_rel_error = m.max_abs_rel_error = m.r2 = kNaN;
    return m;
  }
  if (n == 0) {
    m.mean_abs_rel_error = m.max_abs_rel_error = m.r2 = kNaN;
    return m;
  }
  double sum_re = 0, max_re = 0, mean_log = 0;
  for (size_t i = 0; i < n; ++i) {
    const double re = std::abs(predictions[i] - seconds[i]) / seconds[i];
    sum_re += re;
    max_re = std::max(max_re, re);
    mean_log += std::log(seconds[i]);
  }
  mean_log /= static_cast<double>(n);
  double ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < n; ++i) {
    const double y = std::log(seconds[i]), d = y - std::log(predictions[i]);
    ss_res += d * d;
    ss_tot += (y - mean_log) * (y - mean_log);
  }
  m.mean_abs_rel_error = sum_re / static_cast<double>(n);
  m.max_abs_rel_error = max_re;
  m.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : kNaN;  // all times equal: R^2 is undefined
  return m;
}

}  // namespace ts
