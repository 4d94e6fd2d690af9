#include "tune/belief_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace ts {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double best_of(const std::vector<CurvePoint>& pts) {
  double b = 0;
  for (const auto& p : pts) b = std::max(b, p.y);
  return b;
}

// Parameters of the sampler: (a, b, c, log sigma).
LogPower curve_of(const std::vector<double>& p) { return {p[0], p[1], p[2]}; }

double squared_error(const LogPower& f, const std::vector<CurvePoint>& pts) {
  double e = 0;
  for (const auto& p : pts) {
    const double d = f(p.x) - p.y;
    e += d * d;
  }
  return e;
}

}  // namespace

double LogPower::operator()(double x) const { return a / (1.0 + std::pow(x / std::exp(b), c)); }

std::vector<CurvePoint> last_segment(const std::vector<CurvePoint>& pts, double jump) {
  size_t start = 0;
  for (size_t i = 1; i < pts.size(); i++)
    if (pts[i - 1].y > 0 && pts[i].y > pts[i - 1].y * (1.0 + jump)) start = i;
  return {pts.begin() + static_cast<std::ptrdiff_t>(start), pts.end()};
}

std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> start,
                                const std::vector<double>& step, int iterations) {
  const size_t n = start.size();
  std::vector<std::vector<double>> simplex(n + 1, start);
  for (size_t i = 0; i < n; i++) simplex[i + 1][i] += step[i];
  std::vector<double> value(n + 1);
  for (size_t i = 0; i <= n; i++) value[i] = f(simplex[i]);
  auto point = [&](const std::vector<double>& c, const std::vector<double>& w, double t) {
    std::vector<double> p(n);
    for (size_t k = 0; k < n; k++) p[k] = c[k] + t * (w[k] - c[k]);
    return p;
  };
  for (int it = 0; it < iterations; it++) {
    std::vector<size_t> order(n + 1);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return value[a] < value[b]; });
    const size_t best = order[0], worst = order[n], second = order[n - 1];
    if (std::abs(value[worst] - value[best]) <= 1e-12 * (std::abs(value[best]) + 1e-12)) break;
    std::vector<double> centroid(n, 0.0);
    for (size_t i = 0; i <= n; i++)
      if (i != worst)
        for (size_t k = 0; k < n; k++) centroid[k] += simplex[i][k] / static_cast<double>(n);
    const auto reflected = point(centroid, simplex[worst], -1.0);
    const double fr = f(reflected);
    if (fr < value[best]) {
      const auto expanded = point(centroid, simplex[worst], -2.0);
      const double fe = f(expanded);
      simplex[worst] = fe < fr ? expanded : reflected;
      value[worst] = std::min(fe, fr);
    } else if (fr < value[second]) {
      simplex[worst] = reflected;
      value[worst] = fr;
    } else {
      const auto contracted = point(centroid, simplex[worst], 0.5);
      const double fc = f(contracted);
      if (fc < value[worst]) {
        simplex[worst] = contracted;
        value[worst] = fc;
      } else {  // shrink towards the best
        for (size_t i = 0; i <= n; i++) {
          if (i == best) continue;
          simplex[i] = point(simplex[best], simplex[i], 0.5);
          value[i] = f(simplex[i]);
        }
      }
    }
  }
  return simplex[static_cast<size_t>(std::min_element(value.begin(), value.end()) - value.begin())];
}

LogPower fit_log_power(const std::vector<CurvePoint>& pts) {
  const double best = std::max(best_of(pts), 1e-6);
  const double x_mid = std::max(1.0, pts.empty() ? 1.0 : pts[pts.size() / 2].x);
  auto loss = [&](const std::vector<double>& p) {
    if (p[0] <= 0 || p[0] > 1.0 || p[2] >= 0) return 1e30;
    return squared_error(curve_of(p), pts);
  };
  const std::vector<double> start = {std::min(1.0, best * 1.05), std::log(x_mid) - 1.0, -1.0};
  const auto p = nelder_mead(loss, start, {best * 0.1, 1.0, 0.5});
  return curve_of(p);
}

EnsembleResult ensemble_sample(const std::function<double(const std::vector<double>&)>& log_prob,
                               std::vector<std::vector<double>> walkers, const EnsembleOptions& opts,
                               std::mt19937_64& rng) {
  EnsembleResult r;
  const size_t k = walkers.size(), n = k ? walkers[0].size() : 0;
  if (k < 2) return r;
  std::vector<double> lp(k);
  for (size_t i = 0; i < k; i++) lp[i] = log_prob(walkers[i]);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<size_t> other(0, k - 2);
  size_t accepted = 0, proposed = 0;
  for (int step = 0; step < opts.steps; step++) {
    for (size_t i = 0; i < k; i++) {
      // Stretch move: z ~ g(z) proportional to 1/sqrt(z) on [1/a, a], by inverting its CDF.
      const double a = opts.stretch;
      const double u = unit(rng);
      const double z = std::pow((a - 1.0) * u + 1.0, 2.0) / a;
      size_t j = other(rng);
      if (j >= i) j++;
      std::vector<double> y(n);
      for (size_t d = 0; d < n; d++) y[d] = walkers[j][d] + z * (walkers[i][d] - walkers[j][d]);
      const double lpy = log_prob(y);
      proposed++;
      const double log_accept = static_cast<double>(n - 1) * std::log(z) + lpy - lp[i];
      if (lpy > kNegInf && std::log(std::max(unit(rng), 1e-300)) < log_accept) {
        walkers[i] = std::move(y);
        lp[i] = lpy;
        accepted++;
      }
    }
    if (step >= opts.burn_in)
      for (const auto& w : walkers) r.samples.push_back(w);
  }
  r.acceptance = proposed ? static_cast<double>(accepted) / static_cast<double>(proposed) : 0.0;
  return r;
}

CurvePrediction predict_curve(const std::vector<CurvePoint>& all, double x_next, const EnsembleOptions& opts,
                              std::mt19937_64& rng) {
  CurvePrediction out;
  const double best = best_of(all);
  out.mean = best;
  const std::vector<CurvePoint> pts = last_segment(all);
  if (pts.size() < 3) return out;
  const LogPower fit = fit_log_power(pts);
  const double sigma0 = std::max(std::sqrt(squared_error(fit, pts) / static_cast<double>(pts.size())), 1e-4 * best + 1e-9);
  auto log_prob = [&](const std::vector<double>& p) {
    const LogPower f = curve_of(p);
    // The prior: a within the peak, an increasing curve, a noise level in a sane range, and no
    // prediction below the best already seen.
    if (!(p[0] > 0 && p[0] <= 1.0 && p[2] < 0 && p[2] > -20 && std::abs(p[1]) < 50 && p[3] > -25 && p[3] < 0))
      return kNegInf;
    if (!(f(x_next) >= best)) return kNegInf;
    const double s = std::exp(p[3]);
    return -0.5 * squared_error(f, pts) / (s * s) - static_cast<double>(pts.size()) * p[3];
  };
  // Walkers in a tight ball around the least-squares fit, moved inside the prior if needed.
  std::vector<double> centre = {std::min(fit.a, 1.0), fit.b, std::min(fit.c, -1e-3), std::log(sigma0)};
  if (log_prob(centre) == kNegInf) centre[0] = std::min(1.0, std::max(centre[0], best * 1.02));
  if (log_prob(centre) == kNegInf) centre = {std::min(1.0, best * 1.05), std::log(std::max(x_next, 1.0)), -1.0, std::log(sigma0)};
  std::normal_distribution<double> jitter(0.0, 1e-3);
  std::vector<std::vector<double>> start;
  for (int w = 0; w < opts.walkers; w++) {
    std::vector<double> p = centre;
    for (int tries = 0; tries < 100; tries++) {
      for (size_t d = 0; d < p.size(); d++) p[d] = centre[d] + jitter(rng) * std::max(1.0, std::abs(centre[d]));
      if (log_prob(p) > kNegInf) break;
      p = centre;
    }
    start.push_back(p);
  }
  if (log_prob(centre) == kNegInf) return out;  // nothing fits the prior: no belief beyond the best
  const EnsembleResult r = ensemble_sample(log_prob, start, opts, rng);
  if (r.samples.empty()) return out;
  double sum = 0, sum2 = 0;
  for (const auto& s : r.samples) {
    const double v = curve_of(s)(x_next);
    sum += v;
    sum2 += v * v;
  }
  const double m = sum / static_cast<double>(r.samples.size());
  const double var = std::max(0.0, sum2 / static_cast<double>(r.samples.size()) - m * m);
  out.mean = m;
  out.stddev = std::sqrt(var);
  out.acceptance = r.acceptance;
  // Expected improvement over the best: (mu - best) Phi(z) + sigma phi(z), z = (mu - best) / sigma.
  const double d = m - best;
  if (out.stddev > 0) {
    const double z = d / out.stddev;
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    out.improvement = d * cdf + out.stddev * pdf;
  } else {
    out.improvement = std::max(0.0, d);
  }
  return out;
}

}  // namespace ts
