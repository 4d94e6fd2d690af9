// The linear task scheduler: tuning effort in proportion to each task's FLOPs x count. The next
// slot goes to the active task that is furthest behind its share (effort spent / share smallest),
// effort being seconds with a time budget and measured schedules with a trial budget.
#include "tune/task_scheduler.h"

namespace ts {

namespace {

class LinearScheduler : public TaskScheduler {
 public:
  explicit LinearScheduler(const SchedulerOptions& o) : o_(o) {}
  std::string name() const override { return "linear"; }

  std::optional<Slot> next(std::vector<Task>& tasks, const BudgetLeft& left) override {
    size_t active = 0;
    std::optional<size_t> pick;
    double pick_ratio = 0;
    for (size_t i = 0; i < tasks.size(); i++) {
      const Task& t = tasks[i];
      if (!t.active()) continue;
      active++;
      const double share = std::max(1.0, t.flops) * t.count;
      const double effort = left.trials > 0 ? t.summary.measured_now : t.summary.seconds;
      const double ratio = effort / share;
      if (!pick || ratio < pick_ratio) {
        pick = i;
        pick_ratio = ratio;
      }
    }
    if (!pick) return std::nullopt;
    return default_slot(*pick, o_, left, active);
  }

 private:
  SchedulerOptions o_;
};

}  // namespace

std::unique_ptr<TaskScheduler> make_linear_scheduler(const SchedulerOptions& o) {
  return std::make_unique<LinearScheduler>(o);
}

}  // namespace ts
