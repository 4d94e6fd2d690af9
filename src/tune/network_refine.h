#pragma once
// In-network refinement: knob variants whose effect a workload measured alone cannot judge, timed
// as steps of the whole model. The Measurer times a workload with its weights evicted but its
// page tables warm; in a network the page-table entries are as cold as the weights, so a variant
// such as prefetch=2 (task_prefetch.h: walk a slice's pages ahead) pays in one network and not in
// another on workloads of the same shape, and alone it changes nothing. Per thread count, the
// base model (what `run --db --threads N` runs) and the same model with one default-scheduled
// workload's variant run in turns, that workload's steps timed in each; the variant is kept when
// it beats the base by kConfirmMargin by median and fastest run (recorded as a pair of policy
// kNetworkConfirmPolicy, which `run --db` reads) and stays in the base for the next workload.
// Workloads with the most weight pages per inference go first; outputs must equal the base's.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/workload.h"
#include "runtime/compiled_model.h"
#include "schedule/schedule.h"
#include "tune/records_db.h"

namespace ts {

// Timing in the network, shared with tuning reuse's full evaluations (tune/reuse.h).

// The model compiled with `schedules` (by exact key; the others run the default), on `threads`
// Halide threads (0 = the pool's count as it is).
std::unique_ptr<CompiledModel> compile_model_with(const Graph& g, const std::map<std::string, Schedule>& schedules,
                                                  const std::string& cache_root, int threads);

// Per timed inference of one model: its latency and the sum of some workloads' steps in it.
struct StepTimes {
  std::vector<double> model;  // seconds of each inference
  std::vector<double> steps;  // seconds of the workloads' steps in it, summed
  size_t step_count = 0;      // how many steps those are per inference
};

// The models run in turns (time_alternately: one inference each, alternately, `iters` timed),
// the steps of the workloads `exact_keys` summed per inference. A model may appear twice: it is
// timed once per round and both entries get its times.
std::vector<StepTimes> time_steps_in_models(const std::vector<CompiledModel*>& models,
                                            const std::set<std::string>& exact_keys,
                                            const std::map<std::string, Tensor>& inputs, int iters);

// `trial` beat `base` by kConfirmMargin (tuner.h) by the median and by the fastest of their steps.
bool steps_faster(const StepTimes& base, const StepTimes& trial);

// Records the default's and `variant`'s steps of `w` in the network as one pair (policy
// kNetworkConfirmPolicy), the default's first: the confirmation that decides what `run --db
// --threads N` runs (tuner.h). Each record holds per inference its steps' sum over their count,
// a step's mean (the unit of every other record: one call of the workload).
void record_network_pair(RecordsDB& db, const Workload& w, const Schedule& variant, const StepTimes& default_times,
                         const StepTimes& variant_times, int threads);

// Whether model `m` compiled workload `exact_key` with the schedule `hash` (a schedule that does
// not compile runs the default instead).
bool runs_schedule(const CompiledModel& m, const std::string& exact_key, const std::string& hash);

// A workload the refinement may try, with its variant.
struct NetworkCandidate {
  const Workload* w = nullptr;  // the workload (owned by the partition)
  Schedule variant;             // the rule with the variant's knobs (RuleSketch::schedule)
  double walked_bytes = 0;      // count x its weights' bytes: the pages it walks per inference, what it can save (the most first)
};

struct NetworkRefineOptions {
  int evals = 6;                // candidates tried per thread count (0 = none)
  int iters = 30;               // timed inferences of each model per trial (alternating)
  std::vector<int> threads;     // thread counts, each decided on its own (`run --threads N` reads its own)
  double seconds = 0;           // no trial starts past this many seconds from the start (0 = no limit)
  std::string cache_root;       // code cache root ("" = default)
  const std::atomic<bool>* stop = nullptr;  // when it turns true: stop, recording nothing more
};

// One trial: a workload's variant against the base model, at one thread count.
struct NetworkTrial {
  std::string key_hash;         // workload key hash
  std::string name;             // workload name
  std::string variant;          // the variant's knobs as JSON (e.g. {"prefetch":"2"})
  int threads = 0;              // Halide threads of both models
  double base_s = 0;            // the workload's steps per inference in the base model, summed (median; records hold a step's mean)
  double variant_s = 0;         // the same with the variant (median)
  double base_min_s = 0;        // fastest of the base's
  double variant_min_s = 0;     // fastest of the variant's
  double base_model_s = 0;      // the base model's latency (median of the same runs)
  double variant_model_s = 0;   // the trial model's
  bool kept = false;            // faster by kConfirmMargin by median and fastest run: run uses it
  std::string error;            // why the trial could not be timed ("" if it was)
};

// Progress: one line per trial.
using NetworkProgress = std::function<void(const std::string& line)>;

// Tries the candidates as described at the top, recording each trial in `db`. Leaves Halide's
// process-wide thread pool at its default count when it ran anything.
std::vector<NetworkTrial> refine_in_network(const Graph& g, RecordsDB& db, std::vector<NetworkCandidate> candidates,
                                            const NetworkRefineOptions& opts, const NetworkProgress& say = {});

// Seconds the refinement may take at most: per thread count and candidate tried, two models
// compiled and loaded and (iters + warm-ups) x 2 inferences of `model_s` (slower by tuned / n on
// n threads).
double network_refine_reserve(size_t candidates, const NetworkRefineOptions& opts, double model_s, int tuned_threads);

// [{"key", "name", "variant", "threads", "base_ms", "variant_ms", "base_min_ms", "variant_min_ms",
// "base_model_ms", "variant_model_ms", "kept", "error"}] (docs/cli.md).
nlohmann::json network_trials_json(const std::vector<NetworkTrial>& trials);

}  // namespace ts
