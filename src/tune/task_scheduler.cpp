#include "tune/task_scheduler.h"

#include <fmt/format.h>

#include <algorithm>

#include "graph/error.h"

namespace ts {

const std::vector<std::string>& scheduler_names() {
  static const std::vector<std::string> names = {"sequential", "round-robin", "linear", "gradient", "dynatune"};
  return names;
}

std::unique_ptr<TaskScheduler> make_task_scheduler(const std::string& name, const SchedulerOptions& o) {
  if (name == "sequential") return make_sequential_scheduler(o);
  if (name == "round-robin") return make_round_robin_scheduler(o);
  if (name == "linear") return make_linear_scheduler(o);
  if (name == "gradient") return make_gradient_scheduler(o);
  if (name == "dynatune") return make_dynatune_scheduler(o);
  std::string list;
  for (const auto& n : scheduler_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error(fmt::format("tune: no task scheduler '{}' (choose one of {})", name, list));
}

Slot default_slot(size_t task, const SchedulerOptions& o, const BudgetLeft& left, size_t active_tasks) {
  Slot s;
  s.task = task;
  if (left.trials > 0) {
    s.trials = std::min(left.trials, o.slot_trials > 0 ? o.slot_trials : 2);
  } else {
    const double fallback = std::max(2.0, left.seconds / (10.0 * static_cast<double>(std::max<size_t>(1, active_tasks))));
    s.seconds = std::min(left.seconds, o.slot_seconds > 0 ? o.slot_seconds : fallback);
  }
  return s;
}

double normalized_throughput(const Task& t, double best_s, double peak_flops) {
  if (best_s <= 0 || peak_flops <= 0) return 0;
  return t.flops / best_s / peak_flops;
}

bool is_cliff(const Task& t, double peak_flops) {
  return t.flops >= kCliffMinFlops && peak_flops > 0 &&
         normalized_throughput(t, t.default_s, peak_flops) < kCliffPeakFraction;
}

bool stopped_improving(const Task& t, int patience) {
  if (patience <= 0 || t.curve.size() <= static_cast<size_t>(patience)) return false;
  const double before = t.curve[t.curve.size() - 1 - static_cast<size_t>(patience)].best_s;
  return !(t.curve.back().best_s < before * 0.995);
}

}  // namespace ts
