// DynaTune's task scheduler (Zhang et al., ICLR 2021, Algorithm 1): tasks are the arms of a
// bandit, and the next slot goes to the task with the largest upper confidence bound
//
//   u_k = r_k + sqrt(C x ln t / n_k),   r_k = count_k x (latency_k now - latency_k predicted) in ms
//
// where n_k is the slots task k had, t the slots so far plus one, and the predicted latency
// comes from the belief model of the task's curve (belief_model.h): its best throughput plus the
// expected improvement of one more slot, predicted at the schedules measured after that slot.
// A task never given a slot has u = infinity (each is tried once). C is 2, or 0.2 when the
// model's initial latency is under 1 ms (the paper's settings). A task whose best did not improve
// in `patience` slots is finished (early termination). Predictions are cached per task until
// its curve changes.
#include <cmath>
#include <limits>
#include <map>

#include "tune/belief_model.h"
#include "tune/task_scheduler.h"

namespace ts {

namespace {

class DynaTuneScheduler : public TaskScheduler {
 public:
  explicit DynaTuneScheduler(const SchedulerOptions& o) : o_(o), rng_(o.seed ^ 0xd1b54a32d192ed03ULL) {}
  std::string name() const override { return "dynatune"; }

  std::optional<Slot> next(std::vector<Task>& tasks, const BudgetLeft& left) override {
    if (c_ < 0) {
      double initial = 0;
      for (const Task& t : tasks) initial += t.count * t.default_s;
      c_ = initial < 1e-3 ? 0.2 : 2.0;
    }
    size_t active = 0, slots = 0;
    for (const Task& t : tasks) {
      active += t.active();
      slots += static_cast<size_t>(t.summary.slots);
    }
    std::optional<size_t> pick;
    double pick_ucb = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < tasks.size(); i++) {
      const Task& t = tasks[i];
      if (!t.active()) continue;
      const double u = t.summary.slots == 0
                           ? std::numeric_limits<double>::infinity()
                           : reward_ms(t, i) + std::sqrt(c_ * std::log(static_cast<double>(slots + 1)) / t.summary.slots);
      if (!pick || u > pick_ucb) {
        pick = i;
        pick_ucb = u;
      }
    }
    if (!pick) return std::nullopt;
    return default_slot(*pick, o_, left, active);
  }

  void observe(std::vector<Task>& tasks, const Slot& slot) override {
    if (stopped_improving(tasks[slot.task], o_.patience)) tasks[slot.task].finished = true;
  }

 private:
  // The expected latency reduction (ms, weighted by count) of one more slot of t.
  double reward_ms(const Task& t, size_t index) {
    auto& cached = predictions_[index];
    if (cached.first != t.curve.size()) {
      cached = {t.curve.size(), predict(t)};
    }
    const double peak = o_.peak_flops;
    const double best_y = normalized_throughput(t, t.best_s > 0 ? t.best_s : t.default_s, peak);
    const double next_y = best_y + cached.second.improvement;
    if (best_y <= 0 || next_y <= 0) return 0;
    return t.count * (t.flops / (best_y * peak) - t.flops / (next_y * peak)) * 1e3;
  }

  CurvePrediction predict(const Task& t) {
    std::vector<CurvePoint> pts;
    for (const auto& p : t.curve)
      if (p.best_s > 0) pts.push_back({static_cast<double>(p.measured + 1), normalized_throughput(t, p.best_s, o_.peak_flops)});
    const int per_slot = t.summary.slots > 0 ? std::max(1, t.summary.measured_now / t.summary.slots) : 1;
    const double x_next = static_cast<double>(t.summary.measured_now + 1 + per_slot);
    EnsembleOptions e;
    e.walkers = 10;
    e.steps = 500;
    e.burn_in = 300;
    return predict_curve(pts, x_next, e, rng_);
  }

  SchedulerOptions o_;
  std::mt19937_64 rng_;
  double c_ = -1;  // the exploration constant, set on the first call
  std::map<size_t, std::pair<size_t, CurvePrediction>> predictions_;  // task -> (curve size, prediction)
};

}  // namespace

std::unique_ptr<TaskScheduler> make_dynatune_scheduler(const SchedulerOptions& o) {
  return std::make_unique<DynaTuneScheduler>(o);
}

}  // namespace ts
