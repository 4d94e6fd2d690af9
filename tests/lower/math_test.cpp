// The polynomial transcendentals against libm over the ranges networks use.
#include "lower/math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ts {
namespace {

// Evaluates f on n points in [lo, hi] through a real Halide JIT pipeline; returns max rel error.
// `lanes` > 1 vectorizes the pipeline (the instructions networks run: a reciprocal estimate has
// other code in vectors than in scalars).
double max_rel_error(const std::function<Halide::Expr(Halide::Expr)>& f, const std::function<double(double)>& ref,
                     float lo, float hi, double floor = 1e-30, int lanes = 1) {
  const int n = 20001;
  Halide::Buffer<float> in(n);
  for (int k = 0; k < n; k++) in(k) = lo + (hi - lo) * static_cast<float>(k) / (n - 1);
  Halide::Var i;
  Halide::Func g;
  g(i) = f(in(i));
  if (lanes > 1) g.vectorize(i, lanes, Halide::TailStrategy::GuardWithIf);
  Halide::Buffer<float> out = g.realize({n});
  double worst = 0;
  for (int k = 0; k < n; k++) {
    double want = ref(in(k));
    double err = std::fabs(out(k) - want) / std::max(std::fabs(want), floor);
    worst = std::max(worst, err);
  }
  return worst;
}

TEST(Math, ExpPolynomial) {
  EXPECT_LT(max_rel_error(ts_exp, [](double x) { return std::exp(x); }, -80.f, 80.f), 1e-6);
}

// Within one float ulp (2^-23 relative at worst) of exp over every argument whose result is a
// normal float, in vectors too: an exp of an exp in a network amplifies each ulp.
TEST(Math, ExpWithinAnUlpOverItsNormalRange) {
  const auto exp = [](double x) { return std::exp(x); };
  for (int lanes : {1, 16}) {
    EXPECT_LT(max_rel_error(ts_exp, exp, -87.f, 88.7f, 1e-30, lanes), 1.2e-7) << lanes;
    // Near the bottom, 2^k is 2^-126: it once came out as 0.
    EXPECT_LT(max_rel_error(ts_exp, exp, -87.f, -86.5f, 1e-30, lanes), 1.2e-7) << lanes;
  }
}

TEST(Math, ExpSaturatesLikeIeee) {
  Halide::Func g;
  g() = ts_exp(Halide::Expr(100.0f));
  Halide::Buffer<float> big = g.realize();
  EXPECT_TRUE(std::isinf(big()));
  Halide::Func h;
  h() = ts_exp(Halide::Expr(-200.0f));
  Halide::Buffer<float> small = h.realize();
  EXPECT_EQ(small(), 0.0f);
}

TEST(Math, LogPolynomial) {
  EXPECT_LT(max_rel_error(ts_log, [](double x) { return std::log(x); }, 1e-6f, 1e6f, 1e-3), 1e-6);
  EXPECT_LT(max_rel_error(ts_log, [](double x) { return std::log(x); }, 0.5f, 2.0f, 1e-3), 1e-6);
}

TEST(Math, TanhErfSigmoid) {
  EXPECT_LT(max_rel_error(ts_tanh, [](double x) { return std::tanh(x); }, -10.f, 10.f, 1e-4), 1e-5);
  EXPECT_LT(max_rel_error(ts_sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -30.f, 30.f), 1e-5);
}

// Within 2 ulp (2.4e-7 relative) of erf, in vectors too: ONNX Runtime's is within 1, and a Sin of
// a sum of thousands of erf outputs turned 27 ulp into a different third digit. Near 0 (where a
// form with absolute accuracy fails), across the split at 0.875, out to where erf is 1, and
// through Inf and NaN.
TEST(Math, ErfWithinTwoUlp) {
  const auto erf = [](double x) { return std::erf(x); };
  for (int lanes : {1, 16}) {
    EXPECT_LT(max_rel_error(ts_erf, erf, -1e-3f, 1e-3f, 1e-30, lanes), 2.4e-7) << lanes;
    EXPECT_LT(max_rel_error(ts_erf, erf, -1.2f, 1.2f, 1e-30, lanes), 2.4e-7) << lanes;
    EXPECT_LT(max_rel_error(ts_erf, erf, -6.f, 6.f, 1e-30, lanes), 2.4e-7) << lanes;
  }
  Halide::Buffer<float> in(std::vector<int>{4});
  in(0) = std::numeric_limits<float>::infinity();
  in(1) = -std::numeric_limits<float>::infinity();
  in(2) = std::numeric_limits<float>::quiet_NaN();
  in(3) = 1e-40f;  // subnormal: erf(x) = 2x / sqrt(pi) still
  Halide::Var i;
  Halide::Func g;
  g(i) = ts_erf(in(i));
  Halide::Buffer<float> out = g.realize({4});
  EXPECT_EQ(out(0), 1.0f);
  EXPECT_EQ(out(1), -1.0f);
  EXPECT_TRUE(std::isnan(out(2)));
  EXPECT_NEAR(out(3), 1.1283791e-40f, 1e-45f);
}

TEST(Math, SigmoidInVectorsAndAtTheEdges) {
  const auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  for (int lanes : {8, 16}) {
    EXPECT_LT(max_rel_error(ts_sigmoid, sigmoid, -30.f, 30.f, 1e-30, lanes), 1e-5) << lanes;
    // Far out: absolute error (sigmoid underflows to 0 or saturates to 1).
    EXPECT_LT(max_rel_error(ts_sigmoid, sigmoid, -200.f, 200.f, 1.0, lanes), 1e-6) << lanes;
  }
  Halide::Buffer<float> in(4);
  in(0) = std::numeric_limits<float>::infinity();
  in(1) = -std::numeric_limits<float>::infinity();
  in(2) = std::numeric_limits<float>::quiet_NaN();
  in(3) = 0.0f;
  Halide::Var i;
  Halide::Func g;
  g(i) = ts_sigmoid(in(i));
  g.vectorize(i, 4);
  Halide::Buffer<float> out = g.realize({4});
  EXPECT_FLOAT_EQ(out(0), 1.0f);
  EXPECT_NEAR(out(1), 0.0f, 1e-30);
  EXPECT_TRUE(std::isnan(out(2)));
  EXPECT_FLOAT_EQ(out(3), 0.5f);
}

}  // namespace
}  // namespace ts
