#pragma once
// CompiledModel: a model partitioned into workloads, each compiled once as its own Halide
// pipeline (AOT, cached on disk by workload key, schedule, target and tensorsched version),
// chained at run time over buffers allocated once. A workload runs a tuned Schedule when one is
// given for its exact key, else the default schedule.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "runtime/plan_executor.h"
#include "schedule/schedule.h"

namespace ts {

struct CompileOptions {
  std::string cache_root;  // code cache root ("" = default, see CodeCache::open_default)
  int jobs = 0;            // parallel compiles (worker processes); 0 = hardware threads
  double compile_timeout_s = 600;  // per workload compile; a worker past it is killed and named in the error
  std::map<std::string, Schedule> schedules;  // by Workload::exact_key: tuned schedule (others use the default)
  bool in_place_concat = true;  // concats whose inputs can be written in place run no step (false: copy)
  bool huge_pages = true;       // constants and activations on 2 MiB transparent huge pages (runtime/huge_pages.h)
};

struct CompileStats {
  int workloads = 0;       // distinct workloads
  int steps = 0;           // workload instances executed per inference
  int cache_hits = 0;      // workloads whose code was already in the cache
  int compiled = 0;        // workloads compiled now
  double seconds = 0;      // wall time of compile + load
  int tuned = 0;           // workloads running a tuned schedule (CompileOptions::schedules)
  int in_place = 0;        // concat steps elided: their inputs' producers write into the output
  int views = 0;           // reshape and contiguous slice steps elided: the output views the input's bytes
  uint64_t activation_bytes = 0;  // the activations' arena (buffers of disjoint live ranges share bytes)
  std::vector<std::string> warnings;  // tuned schedules that failed to compile (the default runs instead)
};

class CompiledModel {
 public:
  CompiledModel(Graph g, const CompileOptions& opts = {});
  ~CompiledModel();
  CompiledModel(const CompiledModel&) = delete;
  CompiledModel& operator=(const CompiledModel&) = delete;

  const Graph& graph() const;
  const Partition& partition() const;
  const CompileStats& stats() const;
  // Halide thread pool size for subsequent runs.
  void set_threads(int threads);
  // Runs one inference; inputs by graph input name (shape and dtype must match).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);
  // The same into `outputs` (graph output order), reusing their storage where it already has the
  // output's dtype and shape: a loop of inferences touches no fresh pages, as with ONNX Runtime's
  // arena. Timing loops run this way.
  void run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outputs);
  // Seconds each step took in the last run (same order as partition().steps).
  const std::vector<double>& step_seconds() const;

  // What an artifact needs to run the same code (runtime/artifact.h): the execution plan (its
  // constants laid out with offsets), per plan buffer a constant's bytes (null otherwise), per
  // plan function its relocatable object in the code cache, and the Halide runtime's.
  const plan::Plan& plan() const;
  const std::vector<const void*>& constant_data() const;
  const std::vector<std::string>& object_files() const;
  // Per workload (partition order): the hash of the schedule its code runs (the default rule's
  // or a tuned Schedule's), and of the default rule's schedule.
  const std::vector<std::string>& schedule_hashes() const;
  const std::vector<std::string>& default_schedule_hashes() const;
  const std::string& runtime_object() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Median seconds of each of `models` over `iters` inferences on `inputs`, after `warmup` untimed
// ones: the models take turns, starting one later each round, so that drift on the machine (a
// shared core, the other core's load) hits all of them alike and their ratio means something.
// `after_run(i, seconds)`, when given, is called after each timed run of models[i] (whose
// step_seconds() then hold that run's steps).
std::vector<double> time_alternately(const std::vector<CompiledModel*>& models,
                                     const std::map<std::string, Tensor>& inputs, int iters, int warmup = 2,
                                     const std::function<void(size_t, double)>& after_run = {});

}  // namespace ts
