#pragma once
// The tuning loop of `tensorsched tune`: a model's distinct workloads become tasks, each task
// gets a share of the budget, a SearchPolicy proposes schedules, the Measurer measures them in
// worker processes, and every result is committed to the RecordsDB before the next batch is
// proposed. Killing the process loses at most the batch being measured; a rerun with the same
// database and seed resumes (trials already recorded count, schedules already recorded are
// never proposed again).
//
// Budget: `trials` schedules per task (records of earlier runs included) in total, or `seconds`
// of wall time (the re-measurements of winners and the end-to-end comparison included). Which task
// gets the next slot of it is the TaskScheduler's choice (task_scheduler.h): `sequential` gives
// each task its whole share in turn (time in proportion to count x default time, or `trials`
// each), the others hand out slots (slot_seconds / slot_trials). The default schedule of every
// task is measured first (and recorded once, with policy "default"): it is the reference outputs
// are checked against and the baseline of the summary. After the loop every task's winner is
// re-measured against its default (confirm_rounds), then, for what a standalone measurement cannot
// show, the network variants of the workloads with the most weight pages are timed in the whole
// model (network_evals, tune/network_refine.h).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"
#include "graph/graph.h"
#include "graph/workload.h"
#include "measure/measurer.h"
#include "schedule/schedule_space.h"
#include "search/search_policy.h"
#include "tune/network_refine.h"
#include "tune/records_db.h"
#include "tune/task.h"
#include "tune/task_scheduler.h"

namespace ts {

struct TuneOptions {
  int trials = 0;                 // measured schedules per task (0: use `seconds`)
  double seconds = 0;             // total wall-time budget when trials == 0
  uint64_t seed = 0;              // seeds each task's proposal generator (with its key)
  int batch = 0;                  // schedules per measured batch (0 = compile jobs, at least 2)
  double slow_factor = 20;        // a candidate's runs are stopped past this multiple of the default's time
  double loser_factor = 3;        // a candidate whose first timed run exceeds this multiple of the default's is timed once
  MeasureOptions measure;         // repeats, timeouts, jobs, threads, cache, test faults
  int e2e_iters = 20;             // end-to-end runs of each model version for the summary (0 = skip)
  int e2e_threads = 0;            // Halide threads for them (0 = default)
  std::set<std::string> only;     // key hashes of the workloads to tune (empty = all)
  Sampling sampling = Sampling::Sketch;  // how the spaces draw schedules (random proposals, SA chains, mutations)
  int confirm_rounds = 3;         // re-measurement rounds of each task's winner against the default (0 = none)
  int network_evals = 6;          // after them, per thread count: workloads whose network variant is timed in the whole model (tune/network_refine.h; 0 = none)
  int confirm_candidates = 3;     // the task's fastest records re-measured so (the best of them there is kept)
  std::vector<int> confirm_threads;  // thread counts they are re-measured at besides the tuning's (empty: 1)
  std::string scheduler = "sequential";  // the TaskScheduler (task_scheduler.h: scheduler_names())
  double slot_seconds = 0;        // a slot of a slot-based scheduler, time budget (0 = budget / (10 x tasks), >= 2 s)
  int slot_trials = 0;            // a slot with a trial budget (0 = the batch size)
  const std::atomic<bool>* stop = nullptr;  // when it turns true (Ctrl-C): stop, recording nothing measured after it
  // How a task's candidates are measured (null: a Measurer on this host; e.g. one over MPI ranks).
  std::function<std::unique_ptr<Measurer>(const Workload&, const MeasureOptions&)> make_measurer;
};

// What the tuner reports while it works (for a progress line).
struct TuneProgress {
  size_t task = 0, tasks = 0;     // current task index and count
  std::string task_name;          // workload name
  int trials = 0, target = 0;     // measured so far for this task / its target (0 = time budget)
  double best_s = 0;              // best valid median of the task so far (any policy)
  double default_s = 0;           // the task's default median
  double eta_s = 0;               // estimated seconds left in the whole run
};


struct TuneSummary {
  std::string policy;             // policy name
  std::vector<TaskSummary> tasks; // in the model's workload order
  int measured_now = 0;           // schedules measured by this run
  double seconds = 0;             // wall time of the tuning loop
  double e2e_default_s = 0;       // median model latency with default schedules (0 when skipped)
  double e2e_tuned_s = 0;         // with the best record per workload
  int e2e_iters = 0;              // runs of each version behind those medians (a time budget may cut them)
  int tuned_workloads = 0;        // workloads whose best record is not the default
  bool stopped = false;           // TuneOptions::stop ended the run early (nothing after it was recorded)
  std::string scheduler;          // the task scheduler's name
  struct LatencyPoint {
    double seconds = 0;           // since the run started
    double latency_s = 0;         // estimated model latency then: sum over tasks of count x best
  };
  std::vector<LatencyPoint> curve;  // after the defaults, then after every slot
  double scheduler_seconds = 0;   // time the task scheduler itself took (choosing and observing)
  std::vector<NetworkTrial> network;  // the in-network refinement's trials (TuneOptions::network_evals)
};

// The summary as the `tune --json` output and Python's tensorsched.tune return it (docs/cli.md):
// {"policy", "scheduler", "tasks": [...], "measured_now", "seconds", "tuned_workloads",
// "e2e_default_ms", "e2e_tuned_ms", "speedup", "stopped", "scheduler_seconds",
// "curve": [[seconds, estimated model latency ms], ...], "network": network_trials_json}.
nlohmann::json summary_json(const TuneSummary& s);

// The name a model is recorded under: its file's stem, or its folder's name for "model.onnx"
// (the zoo's layout, zoo/resnet18/model.onnx).
std::string model_name(const std::string& path);
// Records in `db` which workloads the model `g` (partitioned as `part`) holds (RecordsDB::set_model).
void record_model(RecordsDB& db, const Graph& g, const Partition& part);

// A record of measurement `m` of schedule `s` of `w`, proposed by `policy`, with the features of
// `s` when `fx` is given (and `s` is not an autoscheduler recipe).
Record make_record(const Workload& w, const Schedule& s, const MeasureResult& m, const std::string& policy,
                   const FeatureExtractor* fx = nullptr);
// The tasks of a partitioned model: per workload its space, its measurer with the default's
// reference measured (and recorded in `db` once), and what `db` holds of it (best time, records
// of `policy`). A workload whose default fails, or not in opts.only, is a task with an error.
std::vector<Task> make_tasks(const Partition& part, RecordsDB& db, const std::string& policy, const TuneOptions& opts);

// Tunes every workload of g with `policy`, recording into db.
TuneSummary tune_model(const Graph& g, RecordsDB& db, SearchPolicy& policy, const TuneOptions& opts,
                       const std::function<void(const TuneProgress&)>& progress = {});

// Whether a record is of the default rule's own schedule (is_rule_default: the rule's data with
// no knob set, or the recipe older records hold). Each workload's default has its own hash.
bool is_default_record(const Record& r);

}  // namespace ts

namespace ts {
// Training samples for transfer (AutoTVM eq. 4): every record of every other workload that has
// features of the current version. Failed records get twice their workload's worst valid time,
// so a rank loss places them last.
std::vector<CostSample> transfer_samples(const RecordsDB& db, const std::string& exclude_key);

// The latest re-measurement of a workload's winner against its default (a pair of records of
// policy kConfirmPolicy or kNetworkConfirmPolicy): the default's record and the candidate's, or
// nothing when none was made.
// With threads > 0 the latest measured with that many threads where there is one (a schedule's
// rank changes with them), else the latest of any.
inline constexpr const char* kConfirmPolicy = "confirm";
// The same pair measured as steps of the whole model: kNetworkConfirmPolicy (records_db.h).
// A re-measurement against the default (either kind): it decides, and it repeats schedules on purpose.
inline bool is_confirmation_policy(const std::string& policy) {
  return policy == kConfirmPolicy || policy == kNetworkConfirmPolicy;
}
// How much faster than the default a re-measured candidate must be, by its median and by its
// fastest run. Wins below it are not told apart from noise: taken with any win, they made a tuned
// model slower than its default (measured: docs/benchmarks.md, "Tuned").
inline constexpr double kConfirmMargin = 1.02;
inline bool faster_by_margin(double base_median, double base_min, double median, double min) {
  return median * kConfirmMargin <= base_median && min * kConfirmMargin <= base_min;
}
struct Confirmation {
  Record default_record;
  Record candidate;
  // The candidate ran faster than the default by kConfirmMargin, by its median and by its
  // fastest run (never when the candidate is the default itself). A default whose median a
  // disturbed round inflated shows it in its fastest run: median "wins" no faster by the minimum
  // together made a tuned model slower than its default.
  bool faster() const {
    return candidate.valid() && default_record.valid() && candidate.schedule_hash != default_record.schedule_hash &&
           faster_by_margin(default_record.median, default_record.min, candidate.median, candidate.min);
  }
};
std::optional<Confirmation> latest_confirmation(const RecordsDB& db, const std::string& exact_key, int threads = 0);
// Re-measures `winner` against the task's default (Measurer::remeasure_against_default, `rounds`
// interleaved rounds) and records the pair with kConfirmPolicy, which decides what run and
// compile use. `winner` may be the default's schedule: a decision to keep the default. False when
// nothing was measured (no rounds or measurer, or `stop` turned true).
bool confirm_schedule(Task& t, RecordsDB& db, const Schedule& winner, int rounds, const std::atomic<bool>* stop);

// The schedule each workload of `part` should run with `threads` Halide threads (0: any): where
// the winner was re-measured against the default (with those threads where it was), the winner
// if it was faster there; else (older databases) the fastest valid record. The default's own
// record is not a tuned schedule. Records whose schedule no longer parses are skipped with a
// warning; so are other machines' (counted in a warning).
std::map<std::string, Schedule> best_schedules(const Partition& part, const RecordsDB& db, std::vector<std::string>& warnings,
                                               int threads = 0);
// The record whose schedule best_schedules picks for one workload; nothing when it runs the default.
std::optional<Record> used_record(const RecordsDB& db, const std::string& exact_key, int threads = 0);
// The model with default schedules and as `run --db --threads N` runs it (best_schedules), run
// alternately in this process, `iters` timed runs each: their median latencies {default, tuned}.
std::pair<double, double> end_to_end(const Graph& g, const Partition& part, const RecordsDB& db,
                                     const std::string& cache_root, int threads, int iters);
}  // namespace ts
