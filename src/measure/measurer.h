#pragma once
// Measurer: compiles (a Builder, measure/builder.h) and benchmarks (a Runner, measure/runner.h)
// candidate schedules of one workload in worker processes, never in the caller's process, so a crash, a hang or a wrong answer in generated code becomes
// a recorded error of its own kind. See docs/design.md (src/measure/).
//
// Protocol per batch:
//  1. Schedules that fail Schedule::validate() are `invalid_schedule` (no process is started).
//  2. The rest are compiled in parallel forked workers (MeasureOptions::compile_jobs), each with a
//     compile timeout; a worker that fails, dies or times out gives `compile_error` (the timeout
//     named in the message).
//  3. Compiled candidates are run one at a time (timings must not disturb each other), each in a
//     fresh forked worker: warm-up runs, then `repeats` timed runs of the whole workload (before
//     each, unless MeasureOptions::cold_weights is off, its weights are evicted from the caches,
//     untimed: measure/cache_flush.h); a first timed run slower than MeasureOptions::loser_s
//     ends the repeats there (a sure loser needs no statistics, and its repeats would eat a
//     tuning budget). A signal
//     is `crash`, exceeding the run timeout is `timeout`, a non-zero Halide return code is
//     `runtime_error` (with Halide's message), outputs differing from the reference beyond
//     rtol/atol are `wrong_answer`.
// The reference is the default schedule's output on the same deterministic random inputs
// (weights included), computed once per Measurer in a worker; its timings are reference().
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/workload.h"
#include "schedule/schedule.h"

namespace ts {

// Faults a test can inject into the run worker of a candidate (by schedule hash).
enum class InjectedFault { None, Segfault, Hang, WrongValues };

struct MeasureOptions {
  int repeats = 10;                  // timed runs per candidate (R)
  int warmup = 1;                    // untimed runs before them
  bool cold_weights = true;          // evict the workload's weights (constant inputs) from the caches before every run, as in a network
  double compile_timeout_s = 120;    // per candidate compile
  double run_timeout_s = 20;         // per candidate: warm-up + repeats + check
  double loser_s = 0;                // a first timed run slower than this ends the repeats: a sure loser is timed once (0 = off)
  int compile_jobs = 0;              // parallel compile workers; 0 = hardware threads
  int threads = 0;                   // Halide threads while running; 0 = Halide's default
  double rtol = 1e-3;                // output check: |a - b| <= atol + stol * max |ref| + rtol * |ref|
  double atol = 1e-4;
  // The check's allowance for summation order: a value near 0 that long sums of large terms
  // cancel to differs between two orders by a few units in the last place of those terms (a
  // 3-D conv's 0.0098 off by 0.0039 where its outputs reach thousands), not of itself.
  double stol = 1e-5;
  uint64_t input_seed = 1;           // seed of the random inputs
  std::string cache_root;            // code cache root for compiled candidates ("" = default)
  bool keep_code = false;            // keep candidate shared objects (else removed after the run)
  std::map<std::string, InjectedFault> faults;  // test hook: schedule hash -> fault in its run worker
};

struct MeasureResult {
  std::string schedule_hash;         // Schedule::hash() of the candidate
  std::vector<double> times;         // seconds of every timed repeat (empty on error)
  double median = 0;                 // median of times
  double min = 0;                    // fastest repeat
  double noise = 0;                  // (max - min) / mean
  double compile_seconds = 0;        // wall time of its compile
  int threads = 0;                   // Halide threads it ran with (MeasureOptions::threads resolved)
  std::string error_kind;            // "" or one of kRecordErrorKinds (records_db.h)
  std::string error_message;         // why, when error_kind is set
  bool cut = false;                  // not measured: its batch's time limit came first (not a record)
  bool valid() const { return error_kind.empty() && !cut; }
};

class Builder;  // measure/builder.h
class Runner;   // measure/runner.h

class Measurer {
 public:
  // Compiles with a LocalBuilder (opts.compile_jobs compilers) and runs with a LocalRunner, over
  // the code cache of opts.cache_root. Throws ts::Error when the workload's default schedule
  // cannot be compiled or run (no reference).
  explicit Measurer(const Workload& w, MeasureOptions opts = {});
  // The same with `builder` and `runner` (either null: the local one).
  Measurer(const Workload& w, MeasureOptions opts, std::unique_ptr<Builder> builder, std::unique_ptr<Runner> runner);
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  const Workload& workload() const { return w_; }
  const MeasureOptions& options() const { return opts_; }
  // Run timeout of later candidates (e.g. a multiple of the reference's time).
  void set_run_timeout(double seconds) { opts_.run_timeout_s = seconds; }
  // Later candidates whose first timed run exceeds `seconds` are timed once (0 = every repeat).
  void set_loser_time(double seconds) { opts_.loser_s = seconds; }
  // Halide threads of later runs (0 = Halide's default): a schedule's rank can change with them.
  void set_threads(int threads) { opts_.threads = threads; }
  // The default schedule measured like a candidate (by the constructor).
  const MeasureResult& reference();
  // The default rule's schedule of the workload, whose code the reference runs.
  const Schedule& default_schedule() const;
  // Measures a batch; results in the batch's order. With `limit_s` > 0 the batch ends within
  // about that many seconds: compiles stop at it, runs do not start past it; what that leaves
  // unmeasured comes back `cut`.
  std::vector<MeasureResult> measure_batch(const std::vector<Schedule>& batch, double limit_s = 0);

  // A winner re-measured against the default before it is reported or used: `rounds` rounds,
  // each running the default and `s` (compiled once) in fresh workers, alternating which goes
  // first, so that both see the same machine state; each result pools the times of its rounds
  // (its noise says how much they agree). A failure of `s` (any error kind) ends the rounds.
  struct Remeasurement {
    MeasureResult default_result;    // the default's pooled times (schedule_hash: default_schedule()'s)
    MeasureResult candidate;         // the candidate's
  };
  Remeasurement remeasure_against_default(const Schedule& s, int rounds);

 private:
  struct Impl;
  Workload w_;
  MeasureOptions opts_;
  Impl* impl_ = nullptr;
};

// The Halide threads code runs with when `threads` are asked for (<= 0: the default,
// HL_NUM_THREADS or the hardware's).
int effective_threads(int threads);

// median / min / noise of a list of times (all 0 for an empty list).
void summarize_times(MeasureResult& r);

}  // namespace ts
