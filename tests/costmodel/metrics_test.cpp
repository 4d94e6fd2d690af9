// Cost-model metrics on hand-made data whose values are computed by hand.
#include "costmodel/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "graph/error.h"

namespace ts {
namespace {

TEST(Metrics, PairwiseAccuracyOfKnownPermutation) {
  // True order 0 < 1 < 2 < 3; the prediction swaps 1 and 2: 1 of 6 pairs is wrong.
  const std::vector<double> t = {1, 2, 3, 4};
  const std::vector<std::string> g(4, "a");
  CostMetrics m = evaluate_cost_predictions({1, 3, 2, 4}, t, g, true);
  EXPECT_EQ(m.pairs, 6u);
  EXPECT_EQ(m.groups, 1u);
  EXPECT_EQ(m.samples, 4u);
  EXPECT_DOUBLE_EQ(m.pairwise_accuracy, 5.0 / 6.0);
  // The same order as scores (higher = faster).
  CostMetrics s = evaluate_cost_predictions({-1, -3, -2, -4}, t, g, false);
  EXPECT_DOUBLE_EQ(s.pairwise_accuracy, 5.0 / 6.0);
  // A tie in the prediction counts one half; a tie in the truth is not a pair.
  EXPECT_DOUBLE_EQ(evaluate_cost_predictions({1, 1, 2, 3}, t, g, true).pairwise_accuracy, 5.5 / 6.0);
  CostMetrics tie = evaluate_cost_predictions({1, 2, 3}, {1, 1, 2}, {"a", "a", "a"}, true);
  EXPECT_EQ(tie.pairs, 2u);
  EXPECT_DOUBLE_EQ(tie.pairwise_accuracy, 1.0);
}

TEST(Metrics, PairsOnlyWithinGroups) {
  // Across groups the prediction is reversed, within each group it is right.
  CostMetrics m = evaluate_cost_predictions({10, 20, 1, 2}, {1, 2, 10, 20}, {"a", "a", "b", "b"}, true);
  EXPECT_EQ(m.pairs, 2u);
  EXPECT_EQ(m.groups, 2u);
  EXPECT_DOUBLE_EQ(m.pairwise_accuracy, 1.0);
}

TEST(Metrics, TopKRecall) {
  // Group a: the true best (index 0) is predicted worst, 2 others ahead: found only for k >= 3.
  // Group b: the true best is predicted best. Group c: one sample, always found.
  const std::vector<double> pred = {3, 1, 2, 0.5, 0.7, 9};
  const std::vector<double> t = {1, 2, 3, 5, 6, 7};
  const std::vector<std::string> g = {"a", "a", "a", "b", "b", "c"};
  CostMetrics m = evaluate_cost_predictions(pred, t, g, true, {1, 2, 3});
  ASSERT_EQ(m.top_k_recall.size(), 3u);
  EXPECT_EQ(m.top_k_recall[0].first, 1);
  EXPECT_DOUBLE_EQ(m.top_k_recall[0].second, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.top_k_recall[1].second, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.top_k_recall[2].second, 1.0);
  // Ties count against the model: a constant prediction finds nothing at k = 1 in groups of 2+.
  CostMetrics c = evaluate_cost_predictions({1, 1, 1, 1, 1, 1}, t, g, true, {1});
  EXPECT_DOUBLE_EQ(c.top_k_recall[0].second, 1.0 / 3.0);
}

TEST(Metrics, ErrorsAndR2ForSeconds) {
  // ln(true) = 0, 1, 2 (mean 1, SS_tot = 2); ln(pred) = 0, 1, 1: SS_res = 1, R^2 = 0.5.
  const std::vector<double> t = {1, std::exp(1.0), std::exp(2.0)};
  const std::vector<double> p = {1, std::exp(1.0), std::exp(1.0)};
  CostMetrics m = evaluate_cost_predictions(p, t, {"a", "a", "b"}, true);
  EXPECT_NEAR(m.r2, 0.5, 1e-12);
  const double re = 1 - 1 / std::exp(1.0);
  EXPECT_NEAR(m.max_abs_rel_error, re, 1e-12);
  EXPECT_NEAR(m.mean_abs_rel_error, re / 3, 1e-12);
  CostMetrics exact = evaluate_cost_predictions(t, t, {"a", "a", "b"}, true);
  EXPECT_NEAR(exact.r2, 1.0, 1e-12);
  EXPECT_EQ(exact.mean_abs_rel_error, 0.0);
  nlohmann::json j = m.to_json();
  EXPECT_TRUE(j.contains("r2"));
  EXPECT_EQ(j["samples"], 3);
  EXPECT_NEAR(j["top_k_recall"]["1"].get<double>(), 1.0, 0);
}

TEST(Metrics, ScoresHaveNoErrorOrR2) {
  CostMetrics m = evaluate_cost_predictions({3, 2, 1}, {1, 2, 3}, {"a", "a", "a"}, false);
  EXPECT_TRUE(std::isnan(m.r2));
  EXPECT_TRUE(std::isnan(m.mean_abs_rel_error));
  EXPECT_DOUBLE_EQ(m.pairwise_accuracy, 1.0);
  nlohmann::json j = m.to_json();
  EXPECT_FALSE(j.contains("r2"));
  EXPECT_FALSE(j.contains("mean_abs_rel_error"));
  EXPECT_EQ(j["seconds"], false);
  // No pairs at all: accuracy is undefined and written as null.
  CostMetrics one = evaluate_cost_predictions({1}, {1}, {"a"}, false);
  EXPECT_TRUE(std::isnan(one.pairwise_accuracy));
  EXPECT_TRUE(one.to_json()["pairwise_accuracy"].is_null());
  EXPECT_FALSE(one.summary().empty());
}

TEST(Metrics, BadInputThrows) {
  EXPECT_THROW(evaluate_cost_predictions({1, 2}, {1}, {"a", "a"}, true), Error);
  EXPECT_THROW(evaluate_cost_predictions({1}, {0}, {"a"}, true), Error);
  EXPECT_THROW(evaluate_cost_predictions({-1}, {1}, {"a"}, true), Error);
  EXPECT_THROW(evaluate_cost_predictions({NAN}, {1}, {"a"}, false), Error);
  EXPECT_THROW(evaluate_cost_predictions({1}, {1}, {"a"}, false, {0}), Error);
  EXPECT_NO_THROW(evaluate_cost_predictions({-1}, {1}, {"a"}, false));
}

}  // namespace
}  // namespace ts
