#pragma once
// A Task is one distinct workload of a model being tuned: its schedule space, its measurer (which
// holds the default's reference outputs), what the tuning loop learned of it so far, and its
// weight in the model. Built once by tune_model and shared by the loop, the task schedulers
// (task_scheduler.h) and the summary.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "features/features.h"
#include "graph/workload.h"
#include "measure/measurer.h"
#include "schedule/schedule_space.h"

namespace ts {

struct TaskSummary {
  std::string key_hash;           // workload key hash
  std::string name;               // workload name
  int count = 0;                  // occurrences in the model
  double default_s = 0;           // default schedule's median (this run)
  double best_s = 0;              // best valid median in the database (any policy, default included)
  std::string best_policy;        // policy of that record
  int trials = 0;                 // records of this policy for the task (all runs)
  int measured_now = 0;           // measured by this run
  std::map<std::string, int> errors;  // error kind -> records of this policy
  std::string error;              // why the task could not be tuned ("" if it was)
  bool confirmed = false;         // default_s and best_s come from a re-measurement of the winner against the default
  bool faster = false;            // the winner was faster there (else the default runs: best_s = default_s)
  double default_noise = 0;       // spread (time_stats.h: interquartile range / median) of the times behind default_s
  double best_noise = 0;          // the same for best_s
  bool exhausted = false;         // the policy found no new schedule to propose: the space holds no more
  int slots = 0;                  // slots the task scheduler gave it in this run
  double seconds = 0;             // tuning time those slots took
};

// One point of a task's optimization curve: after `measured` schedules of this run, the best.
struct TaskCurvePoint {
  int measured = 0;   // schedules of this task measured by this run so far
  double best_s = 0;  // best valid median then (seconds)
};

struct Task {
  const Workload* w = nullptr;                 // the workload (owned by the partition)
  std::unique_ptr<ScheduleSpace> space;        // built from the unscheduled pipeline (the rule's sketch included)
  std::unique_ptr<Measurer> measurer;          // holds the reference outputs; null once the task failed
  std::unique_ptr<FeatureExtractor> features;  // stored with each record
  double default_s = 0;                        // default median (this run)
  double best_s = 0;                           // best valid median of this machine's records (any policy)
  double flops = 0;                            // of one occurrence
  int count = 1;                               // occurrences in the model (the weight of its latency)
  int trials = 0;                              // records of the tuning policy (all runs)
  std::vector<TaskCurvePoint> curve;           // after the defaults and after each slot
  bool finished = false;                       // gets no more slots (budget, exhausted, stopped improving, failed)
  TaskSummary summary;                         // filled as the run goes

  // Whether it can be given a slot.
  bool active() const { return summary.error.empty() && !finished; }
  // count x best: its share of the model's latency now.
  double latency_s() const { return count * (best_s > 0 ? best_s : default_s); }
};

}  // namespace ts
