#pragma once
// Runner: the second half of a measurement. It benchmarks one built candidate (code a Builder
// put in the cache) in an isolated worker: warm-up and timed runs over given inputs, the output
// check against a reference, and the error kinds of a failure (crash, timeout, runtime_error,
// wrong_answer; see measure/measurer.h). One implementation per file: LocalRunner (a forked
// worker on this host), MpiRunner (a rank of an mpirun; runner_lost when it dies).
#include <map>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "graph/workload.h"
#include "measure/measurer.h"
#include "schedule/input_layout.h"

namespace ts {

// One candidate to run.
struct RunRequest {
  const Workload* workload = nullptr;               // what runs (outlives the call)
  std::string schedule_hash;                        // its code in the cache
  std::vector<InputLayout> layouts;                 // how the code expects its inputs packed
  const std::map<std::string, Tensor>* inputs = nullptr;  // every graph input by name (weights included)
  const std::vector<Tensor>* reference = nullptr;   // outputs to compare with; null: send them back
  InjectedFault fault = InjectedFault::None;        // test hook
};

class Runner {
 public:
  virtual ~Runner() = default;
  // "local", ...: what progress lines and errors call it.
  virtual std::string name() const = 0;
  // Times the request under `opts` (repeats, warm-up, timeouts, threads, tolerances). Without a
  // reference, a valid result's outputs go to `outputs` (as the code stores them).
  virtual MeasureResult run(const RunRequest& request, const MeasureOptions& opts, std::vector<Tensor>* outputs) = 0;
};

}  // namespace ts
