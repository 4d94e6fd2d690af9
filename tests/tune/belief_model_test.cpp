// DynaTune's belief model: the optimizer and the ensemble sampler on known functions, and the
// curve prediction on a known log-power curve with noise.
#include "tune/belief_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ts {
namespace {

TEST(BeliefModel, NelderMeadFindsTheRosenbrockMinimum) {
  auto rosenbrock = [](const std::vector<double>& p) {
    return 100 * std::pow(p[1] - p[0] * p[0], 2) + std::pow(1 - p[0], 2);
  };
  auto p = nelder_mead(rosenbrock, {-1.2, 1.0}, {0.5, 0.5}, 2000);
  EXPECT_NEAR(p[0], 1.0, 1e-3);
  EXPECT_NEAR(p[1], 1.0, 1e-3);
}

// Goodman & Weare's sampler on a correlated 2-D Gaussian: the samples' moments match.
TEST(BeliefModel, EnsembleSamplerRecoversACorrelatedGaussian) {
  // mean (3, -1), variances 4 and 1, correlation 0.8 (the case affine invariance is for)
  const double s1 = 2, s2 = 1, rho = 0.8;
  auto log_prob = [&](const std::vector<double>& p) {
    const double x = (p[0] - 3) / s1, y = (p[1] + 1) / s2;
    return -(x * x - 2 * rho * x * y + y * y) / (2 * (1 - rho * rho));
  };
  std::mt19937_64 rng(7);
  std::vector<std::vector<double>> start;
  for (int w = 0; w < 16; w++) start.push_back({3 + 0.01 * w, -1 - 0.01 * w});
  EnsembleOptions o;
  o.walkers = 16;
  o.steps = 4000;
  o.burn_in = 500;
  EnsembleResult r = ensemble_sample(log_prob, start, o, rng);
  ASSERT_EQ(r.samples.size(), 16u * 3500u);
  double m0 = 0, m1 = 0;
  for (const auto& s : r.samples) m0 += s[0], m1 += s[1];
  m0 /= r.samples.size(), m1 /= r.samples.size();
  double v0 = 0, v1 = 0, c = 0;
  for (const auto& s : r.samples) {
    v0 += (s[0] - m0) * (s[0] - m0);
    v1 += (s[1] - m1) * (s[1] - m1);
    c += (s[0] - m0) * (s[1] - m1);
  }
  v0 /= r.samples.size(), v1 /= r.samples.size(), c /= r.samples.size();
  EXPECT_NEAR(m0, 3.0, 0.2);
  EXPECT_NEAR(m1, -1.0, 0.1);
  EXPECT_NEAR(v0, 4.0, 0.6);
  EXPECT_NEAR(v1, 1.0, 0.15);
  EXPECT_NEAR(c / std::sqrt(v0 * v1), 0.8, 0.05);
  EXPECT_GT(r.acceptance, 0.2);
  EXPECT_LT(r.acceptance, 0.9);
}

TEST(BeliefModel, SegmentsStartAtTheLastJumpOfMoreThanTwentyPercent) {
  std::vector<CurvePoint> pts = {{1, 0.1}, {2, 0.11}, {3, 0.15}, {4, 0.16}, {5, 0.17}, {6, 0.30}, {7, 0.31}};
  auto seg = last_segment(pts);
  ASSERT_EQ(seg.size(), 2u);
  EXPECT_EQ(seg[0].x, 6);
}

// A known curve: a = 0.6, b = 2, c = -1.2, with 1% noise. The fit, the posterior mean at a later
// point and its spread come out right, and the prediction never falls below the best seen.
TEST(BeliefModel, PredictsAKnownLogPowerCurve) {
  const LogPower truth{0.6, 2.0, -1.2};
  std::mt19937_64 noise_rng(3);
  std::normal_distribution<double> noise(0.0, 0.004);
  std::vector<CurvePoint> pts;
  double best = 0;
  for (int x = 1; x <= 40; x++) {
    best = std::max(best, truth(x) + noise(noise_rng));  // a best-so-far curve, as the tuner records
    pts.push_back({static_cast<double>(x), best});
  }
  const LogPower fit = fit_log_power(pts);
  EXPECT_NEAR(fit(60), truth(60), 0.03);
  std::mt19937_64 rng(11);
  CurvePrediction p = predict_curve(pts, 60, EnsembleOptions{}, rng);
  EXPECT_GE(p.mean, best);
  EXPECT_NEAR(p.mean, truth(60), 0.03);
  EXPECT_LT(p.stddev, 0.03);
  EXPECT_GE(p.improvement, 0.0);
  EXPECT_GT(p.acceptance, 0.1);
}

TEST(BeliefModel, FewPointsPredictTheBestWithoutImprovement) {
  std::mt19937_64 rng(1);
  CurvePrediction p = predict_curve({{1, 0.2}, {2, 0.25}}, 5, EnsembleOptions{}, rng);
  EXPECT_EQ(p.mean, 0.25);
  EXPECT_EQ(p.improvement, 0.0);
}

}  // namespace
}  // namespace ts
