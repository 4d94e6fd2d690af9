#pragma once
// DynaTune's Bayesian belief model of one task's optimization curve (Zhang et al., ICLR 2021,
// sec. 4.3): how fast will this workload get if it is given another slot?
//
//   observations  best-so-far throughput of the task, normalized by the machine's peak (0..1),
//                 against the task's measured schedules (x >= 1)
//   segments      the curve is cut where the best jumps by more than 20%; the last segment is fitted
//   curve         log power, f(x) = a / (1 + (x / e^b)^c) with c < 0: increasing, saturating at a
//   fit           least squares (Nelder-Mead) as the start of the sampler
//   posterior     Goodman & Weare's affine-invariant ensemble sampler (stretch moves; 10 walkers,
//                 500 steps) over (a, b, c, log sigma) with a Gaussian likelihood and a prior that
//                 keeps 0 < a <= 1 (the peak) and forbids a prediction below the best seen
//   prediction    mean and spread of f(x_next) over the posterior, and the expected improvement
//                 over the best seen
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace ts {

struct CurvePoint {
  double x = 0;  // measured schedules of the task so far (>= 1)
  double y = 0;  // best-so-far throughput / machine peak
};

struct LogPower {
  double a = 0, b = 0, c = -1;  // f(x) = a / (1 + (x / e^b)^c)
  double operator()(double x) const;
};

// The points after the last jump of more than `jump` (relative) between consecutive y.
std::vector<CurvePoint> last_segment(const std::vector<CurvePoint>& pts, double jump = 0.2);

// Least-squares log-power fit (Nelder-Mead from a start that saturates just above the best).
LogPower fit_log_power(const std::vector<CurvePoint>& pts);

// Minimizes f over R^n from `start` (Nelder-Mead simplex, initial steps `step`).
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> start,
                                const std::vector<double>& step, int iterations = 400);

struct EnsembleOptions {
  int walkers = 10;      // at least 2 x the parameters
  int steps = 500;       // stretch moves per walker
  int burn_in = 250;     // steps discarded before samples are kept
  double stretch = 2.0;  // the scale a of the stretch distribution g(z) ~ 1/sqrt(z) on [1/a, a]
};

struct EnsembleResult {
  std::vector<std::vector<double>> samples;  // positions after burn-in, every walker every step
  double acceptance = 0;                     // accepted proposals / proposals
};

// Goodman & Weare's sampler of exp(log_prob) from walkers at `start` (log_prob -inf = outside the
// prior; every start must be inside).
EnsembleResult ensemble_sample(const std::function<double(const std::vector<double>&)>& log_prob,
                               std::vector<std::vector<double>> start, const EnsembleOptions& opts,
                               std::mt19937_64& rng);

struct CurvePrediction {
  double mean = 0;          // posterior mean of f(x_next) (normalized throughput)
  double stddev = 0;        // its posterior standard deviation
  double improvement = 0;   // expected improvement over the best seen, from mean and stddev
  double acceptance = 0;    // the sampler's acceptance fraction (0 when no sampling was done)
};

// The posterior prediction at x_next. With fewer than 3 points in the last segment nothing is
// fitted: the prediction is the best seen, with no improvement.
CurvePrediction predict_curve(const std::vector<CurvePoint>& pts, double x_next, const EnsembleOptions& opts,
                              std::mt19937_64& rng);

}  // namespace ts
