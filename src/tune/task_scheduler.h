#pragma once
// Which task gets the next tuning slot, and when is a task finished? The tuning loop
// (tuner.cpp) asks its TaskScheduler for a Slot, runs the task's search policy for that slot
// (batches of proposals, measured and committed), updates the task's best and curve, and tells
// the scheduler. One file per implementation:
//
//   sequential   today's order: tasks by count x default time, each given its whole share
//                (time in proportion to that weight, or `trials` schedules) before the next
//   round-robin  equal slots in turn
//   linear       time in proportion to FLOPs x count (the task furthest behind its share next)
//   gradient     Ansor's task scheduler: the task whose allocation most reduces the model's
//                latency, by the gradient of end-to-end latency to each task's slots (a backward
//                window of its own curve, an optimistic forward term from FLOPs and similar tasks)
//   dynatune     DynaTune's UCB bandit: reward = count x (latency now - latency predicted by the
//                Bayesian belief model of its curve, belief_model.h), exploration sqrt(C log t / n)
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/task.h"

namespace ts {

// What one slot may spend; the loop runs batches until either limit (0 = none) is reached.
struct Slot {
  size_t task = 0;     // index into the tasks
  double seconds = 0;  // wall time of the slot
  int trials = 0;      // measured schedules of the slot
};

// What is left of the run's budget when a slot is asked for.
struct BudgetLeft {
  double seconds = 0;  // tuning time left (time budgets; 0 with a trial budget)
  int trials = 0;      // measured schedules left in the whole run (trial budgets)
};

struct SchedulerOptions {
  double slot_seconds = 0;     // a slot's time with a time budget (0 = budget / (10 x tasks), at least 2 s)
  int slot_trials = 0;         // a slot's schedules with a trial budget (0 = the loop's batch size)
  int trials_per_task = 0;     // the trial budget per task (sequential gives each exactly this)
  double peak_flops = 0;       // the machine's peak FLOP/s (normalizes curves; dynatune)
  uint64_t seed = 0;           // for schedulers that draw (gradient's epsilon-greedy, dynatune's MCMC)
  int patience = 4;            // slots without improvement after which a task stops (gradient, dynatune)
};

class TaskScheduler {
 public:
  virtual ~TaskScheduler() = default;
  virtual std::string name() const = 0;
  // The next slot, or nullopt when no task should get one. Called with every task (inactive
  // ones included: they keep their index); `left` is what remains of the budget.
  virtual std::optional<Slot> next(std::vector<Task>& tasks, const BudgetLeft& left) = 0;
  // After tasks[slot.task] ran the slot (its best, curve, trials and summary are current).
  // May mark tasks finished.
  virtual void observe(std::vector<Task>& tasks, const Slot& slot) { (void)tasks, (void)slot; }
};

std::unique_ptr<TaskScheduler> make_sequential_scheduler(const SchedulerOptions& o);
std::unique_ptr<TaskScheduler> make_round_robin_scheduler(const SchedulerOptions& o);
std::unique_ptr<TaskScheduler> make_linear_scheduler(const SchedulerOptions& o);
std::unique_ptr<TaskScheduler> make_gradient_scheduler(const SchedulerOptions& o);
std::unique_ptr<TaskScheduler> make_dynatune_scheduler(const SchedulerOptions& o);

// By name (scheduler_names()); throws Error for another name.
std::unique_ptr<TaskScheduler> make_task_scheduler(const std::string& name, const SchedulerOptions& o);
const std::vector<std::string>& scheduler_names();

// The slot a slot-based scheduler gives: o.slot_seconds / o.slot_trials, or their defaults.
Slot default_slot(size_t task, const SchedulerOptions& o, const BudgetLeft& left, size_t active_tasks);

// A task's throughput normalized by the peak (its best, else its default): the y of its curve.
double normalized_throughput(const Task& t, double best_s, double peak_flops);

// A cliff: a task of at least kCliffMinFlops whose default runs below kCliffPeakFraction of the
// peak, where tuning pays most (the sequential scheduler tunes cliffs first).
inline constexpr double kCliffMinFlops = 20e6;
inline constexpr double kCliffPeakFraction = 0.25;
bool is_cliff(const Task& t, double peak_flops);

// Whether a task improved its best by more than 0.5% over its last `patience` slots.
bool stopped_improving(const Task& t, int patience);

}  // namespace ts
