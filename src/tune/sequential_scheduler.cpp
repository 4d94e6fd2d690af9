// The sequential task scheduler: one task at a time, cliffs first (is_cliff: far below peak,
// where tuning pays most), then heaviest first (count x default time), each given its whole share
// before the next. A time share is the time left x the task's weight /
// the weight of the tasks not yet tuned, so time an earlier task did not use (or overran) passes
// on. A trial share is the budget per task less the task's trials recorded by earlier runs.
#include <algorithm>

#include "tune/task_scheduler.h"

namespace ts {

namespace {

class SequentialScheduler : public TaskScheduler {
 public:
  explicit SequentialScheduler(const SchedulerOptions& o) : o_(o) {}
  std::string name() const override { return "sequential"; }

  std::optional<Slot> next(std::vector<Task>& tasks, const BudgetLeft& left) override {
    if (!ordered_) {
      for (size_t i = 0; i < tasks.size(); i++) order_.push_back(i);
      std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
        const bool ca = is_cliff(tasks[a], o_.peak_flops), cb = is_cliff(tasks[b], o_.peak_flops);
        return ca != cb ? ca : weight(tasks[a]) > weight(tasks[b]);
      });
      ordered_ = true;
    }
    for (; pos_ < order_.size(); pos_++) {
      Task& t = tasks[order_[pos_]];
      if (!t.active()) continue;
      Slot s;
      s.task = order_[pos_];
      if (o_.trials_per_task > 0) {
        s.trials = o_.trials_per_task - t.trials;
        if (s.trials <= 0) {
          t.finished = true;
          continue;
        }
        return s;
      }
      double remaining = 0;
      for (size_t k = pos_; k < order_.size(); k++)
        if (tasks[order_[k]].active()) remaining += weight(tasks[order_[k]]);
      s.seconds = left.seconds * weight(t) / std::max(remaining, 1e-12);
      return s;
    }
    return std::nullopt;
  }

  void observe(std::vector<Task>& tasks, const Slot& slot) override {
    tasks[slot.task].finished = true;
    pos_++;
  }

 private:
  static double weight(const Task& t) { return t.count * t.default_s; }
  SchedulerOptions o_;
  std::vector<size_t> order_;  // task indices, cliffs first, then heaviest first
  size_t pos_ = 0;             // the task being tuned
  bool ordered_ = false;
};

}  // namespace

std::unique_ptr<TaskScheduler> make_sequential_scheduler(const SchedulerOptions& o) {
  return std::make_unique<SequentialScheduler>(o);
}

}  // namespace ts
