// Ansor's task scheduler (Zheng et al., OSDI 2020, sec. 6): the next slot goes to the task whose
// allocation most reduces the model's latency f = sum of count_i x g_i, by the gradient
//
//   df/dt_i ~ count_i x ( alpha x (g_i(t_i) - g_i(t_i - w)) / w
//                       + (1 - alpha) x (min(g_i - g_i / t_i, beta x C_i / max_{k similar} V_k) - g_i) )
//
// t_i: slots given to task i, g_i its best latency after each (its curve), w the backward window,
// C_i its FLOPs, V_k the throughput (FLOPs / best latency) of tasks of the same class. Every task
// gets one slot first; then the most negative gradient wins, or with probability epsilon a random
// active task. A task that stopped improving for `patience` slots is finished.
#include <algorithm>
#include <limits>
#include <map>
#include <random>

#include "tune/task_scheduler.h"

namespace ts {

namespace {

constexpr double kAlpha = 0.2, kBeta = 2.0, kEpsilon = 0.05;
constexpr int kBackwardWindow = 3;

class GradientScheduler : public TaskScheduler {
 public:
  explicit GradientScheduler(const SchedulerOptions& o) : o_(o), rng_(o.seed ^ 0x9e3779b97f4a7c15ULL) {}
  std::string name() const override { return "gradient"; }

  std::optional<Slot> next(std::vector<Task>& tasks, const BudgetLeft& left) override {
    std::vector<size_t> active;
    for (size_t i = 0; i < tasks.size(); i++)
      if (tasks[i].active()) active.push_back(i);
    if (active.empty()) return std::nullopt;
    for (size_t i : active)  // warm-up: one slot each
      if (tasks[i].summary.slots == 0) return default_slot(i, o_, left, active.size());
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < kEpsilon) {
      const size_t i = active[std::uniform_int_distribution<size_t>(0, active.size() - 1)(rng_)];
      return default_slot(i, o_, left, active.size());
    }
    std::map<std::string, double> best_throughput;  // per class: max FLOPs / best latency
    for (const Task& t : tasks)
      if (t.best_s > 0) {
        double& v = best_throughput[t.w->class_key];
        v = std::max(v, t.flops / t.best_s);
      }
    std::map<std::string, int> class_size;
    for (const Task& t : tasks) class_size[t.w->class_key]++;
    size_t pick = active[0];
    double pick_grad = std::numeric_limits<double>::infinity();
    for (size_t i : active) {
      const double g = gradient(tasks[i], class_size[tasks[i].w->class_key] > 1 ? best_throughput[tasks[i].w->class_key] : 0);
      if (g < pick_grad) {
        pick_grad = g;
        pick = i;
      }
    }
    return default_slot(pick, o_, left, active.size());
  }

  void observe(std::vector<Task>& tasks, const Slot& slot) override {
    if (stopped_improving(tasks[slot.task], o_.patience)) tasks[slot.task].finished = true;
  }

 private:
  // The estimated change of the model's latency per slot given to t (negative: it gets faster).
  static double gradient(const Task& t, double similar_throughput) {
    const size_t slots = static_cast<size_t>(t.summary.slots);
    const double g = t.best_s > 0 ? t.best_s : t.default_s;
    double backward = 0;
    if (slots >= static_cast<size_t>(kBackwardWindow) && t.curve.size() > slots)
      backward = (t.curve[slots].best_s - t.curve[slots - kBackwardWindow].best_s) / kBackwardWindow;
    double next = g - g / std::max<size_t>(1, slots);
    if (similar_throughput > 0) next = std::min(next, kBeta * t.flops / similar_throughput);
    const double forward = next - g;
    return t.count * (kAlpha * backward + (1 - kAlpha) * forward);
  }

  SchedulerOptions o_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<TaskScheduler> make_gradient_scheduler(const SchedulerOptions& o) {
  return std::make_unique<GradientScheduler>(o);
}

}  // namespace ts
