// The round-robin task scheduler: equal slots to every active task in turn.
#include "tune/task_scheduler.h"

namespace ts {

namespace {

class RoundRobinScheduler : public TaskScheduler {
 public:
  explicit RoundRobinScheduler(const SchedulerOptions& o) : o_(o) {}
  std::string name() const override { return "round-robin"; }

  std::optional<Slot> next(std::vector<Task>& tasks, const BudgetLeft& left) override {
    size_t active = 0;
    for (const auto& t : tasks) active += t.active();
    if (active == 0) return std::nullopt;
    for (size_t step = 0; step < tasks.size(); step++) {
      const size_t i = (cursor_ + step) % tasks.size();
      if (!tasks[i].active()) continue;
      cursor_ = i + 1;
      return default_slot(i, o_, left, active);
    }
    return std::nullopt;
  }

 private:
  SchedulerOptions o_;
  size_t cursor_ = 0;  // where the next turn starts
};

}  // namespace

std::unique_ptr<TaskScheduler> make_round_robin_scheduler(const SchedulerOptions& o) {
  return std::make_unique<RoundRobinScheduler>(o);
}

}  // namespace ts
