#pragma once
// Tuning reuse (Gibson and Cano, ../shared/papers/tuning-reuse-gibson-cano.md): a new model starts
// from the schedules earlier models earned, instead of from zero.
//
// Reading guide
//  1. Classes. Workloads are matched by class (Workload::class_key: the operation sequence,
//     whatever the sizes). Each class of the target model has a share P_c of its untuned time
//     (count x default median, measured now).
//  2. Donors. The records databases given know which workloads each tuned model holds
//     (RecordsDB::model_workloads). A donor model T scores sum_c P_c^2 sqrt(|W_Tc|), W_Tc its
//     workloads of class c that tuning made faster than their default (the paper's equation 1);
//     `auto` takes the best, `all` pools every donor, or a model is named.
//  3. Standalone phase. Per target workload, the best few schedules of every donor workload of
//     its class that beat that donor workload's default (what its tuning earned) are re-fitted
//     to it (schedule/refit.h; what cannot be carried is counted) and measured alone like any
//     candidate, recorded with policy "reuse". What the workload runs already (an earlier winner
//     in `db`) is a candidate too. Where a donor's model kept the network variant of a workload
//     of the class (tune/network_refine.h: a knob only the network can judge), the target's own
//     variant is a candidate that skips this phase. Across classes (the paper's weaker reuse,
//     ReuseOptions::across_classes): donor workloads of other classes over the same anchor op
//     (graph/workload.h class_anchor: Conv+Relu for Conv+Add+Relu) give the knobs of their
//     default-rule variants, with which the rule schedules whatever stages the target fuses. The donor heuristic
//     (2.) ranks by the paper's class score first; the same sum over other-class workloads with
//     each class's anchor (DonorScore::anchor_score) breaks its ties, so `auto` and `all` take a
//     donor that shares only anchors (a held-out network's new activations) when none shares more.
//  4. Full phase. The model is compiled with each workload's fastest standalone schedule (where
//     it beats the default) and timed against the default model: full evaluation 0. Then
//     `full_evals` more evaluations, allocated to workloads by their share of the model's time
//     (a softmax over log times, i.e. proportional), each trying a workload's next most promising
//     schedule in the whole model, timed alternately with the best so far and the default. A
//     change is kept only when the steps it changed ran faster in the model by kConfirmMargin,
//     by their median and their fastest run (a model's latency carries every other step's noise).
//     Compiled code is cached per workload and schedule, so an evaluation compiles only the
//     workload that changed. A network variant's trial is recorded as an in-network pair.
//  5. Confirmation. Each standalone choice is re-measured against the default, interleaved, and
//     recorded as tune records its winners (tuner.h, confirm_schedule), so `run --db` and
//     `compile --db` run what the full phase chose (where the re-measurement confirms it); a
//     network variant's in-network pair decides for it.
//  6. End to end. The default model and the model `run --db` now runs, timed alternately
//     (`e2e_iters` runs each), as `tune` ends: what the user gets, in the unit a search reports.
// Donor databases are only read; their records of other machines and builds are used too (the
// schedules are re-measured here before anything trusts them).
#include <atomic>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "measure/measurer.h"
#include "tune/records_db.h"

namespace ts {

struct ReuseOptions {
  std::vector<std::string> donor_dbs;   // records databases of earlier models (read only)
  std::string donor = "auto";           // a donor model's name, "auto" (the best score) or "all"
  int full_evals = 10;                  // full-model evaluations after the standalone phase
  int per_donor_workload = 3;           // fastest schedules taken from each donor workload of a class (only those faster than its default)
  int e2e_iters = 10;                   // timed runs of each model per full evaluation, and at the end (end to end)
  int e2e_threads = 0;                  // Halide threads of the models (0 = default); in-network pairs are recorded at it
  int confirm_rounds = 3;               // re-measurement rounds of each choice against the default (0 = none)
  bool across_classes = true;           // also carry the default rule's rule variants (by their knobs) of other classes with the same anchor (class_anchor)
  MeasureOptions measure;               // standalone measurements (repeats, cache, jobs)
  const std::atomic<bool>* stop = nullptr;  // when it turns true: stop, keeping what was recorded
};

// A workload class of the target model (the paper's Table 2 rows).
struct ReuseClass {
  std::string label;          // "A", "B", ... in order of first use
  std::string name;           // a workload name of the class, e.g. "Conv+Relu"
  std::string class_key;      // Workload::class_key
  int workloads = 0;          // distinct target workloads of the class
  double share = 0;           // P_c: its share of the untuned model time
};

// A candidate donor model and its score.
struct DonorScore {
  std::string model;                    // the model's name in its database
  std::string db;                       // the database holding it
  std::map<std::string, int> per_class; // class label -> its tuned workloads of that class (faster than their default, alone or in its model)
  double score = 0;                     // sum over classes of P_c^2 sqrt(|W_Tc|)
  std::map<std::string, int> per_anchor;  // class label -> its tuned workloads of other classes with that class's anchor
  double anchor_score = 0;              // the same sum over those (across-class reuse): ranks donors of equal score
  bool chosen = false;                  // its schedules are used
};

// What reuse did for one target workload.
struct ReuseWorkload {
  std::string key_hash;       // workload key hash
  std::string name;           // workload name
  std::string class_label;    // its ReuseClass::label
  int count = 0;              // occurrences in the model
  double default_s = 0;       // default median (this run)
  int donor_schedules = 0;    // donor schedules of its class considered (and, across classes, rule variants of its anchor's)
  int across_class = 0;       // of which rule variants of workloads of other classes with its anchor
  int refused = 0;            // of which could not be carried (refit errors)
  int measured = 0;           // re-fitted schedules measured alone (this run and earlier ones)
  double best_standalone_s = 0;  // fastest valid standalone median (0 when none)
  std::string chosen;         // schedule hash the model runs after the full phase ("" = the default)
  bool confirmed = false;     // `chosen` re-measured faster than the default: run and compile use it
  std::string error;          // why it was skipped ("" if it was not)
};

// One full evaluation: the default model, the best so far and the trial timed alternately.
struct FullEvaluation {
  int index = 0;              // 0 = the standalone choices, then 1..full_evals
  double seconds = 0;         // since reuse started
  double latency_s = 0;       // the trial model's latency (median)
  double best_s = 0;          // the best model latency after it (the same rounds)
  double default_s = 0;       // the default model's latency (the same rounds)
  std::string workload;       // the workload whose schedule changed ("" for evaluation 0)
  bool kept = false;          // the changed steps got faster in the model (kConfirmMargin) and the change was kept
  double steps_s = 0;         // the changed workloads' steps per inference in the trial (median)
  double best_steps_s = 0;    // the same steps in the best model before it (the same rounds)
  bool network_variant = false;  // the trial was the workload's network variant (a donor's model kept one)
};

struct ReuseSummary {
  std::string model;                    // the target's model name
  std::vector<ReuseClass> classes;      // by label
  std::vector<DonorScore> donors;       // best score first
  std::vector<ReuseWorkload> workloads; // in the model's workload order
  double default_latency_s = 0;         // the model with default schedules (median, evaluation 0)
  std::vector<FullEvaluation> evaluations;  // in order
  double e2e_default_s = 0;             // after the confirmations: the default model's latency (median), timed
  double e2e_reused_s = 0;              //   alternately with the model `run --db` runs now (0 when stopped)
  double standalone_seconds = 0;        // the standalone phase's wall time
  double seconds = 0;                   // the whole run's wall time
  bool stopped = false;                 // ReuseOptions::stop ended it early
};

// Progress: a phase ("standalone", "full" or "confirm") and a line saying what was just done.
using ReuseProgress = std::function<void(const std::string& phase, const std::string& line)>;

// Reuses the donors' schedules for `g`, recording standalone measurements in `db`. Throws Error
// when a donor database cannot be opened or a named donor is in none of them.
ReuseSummary reuse_tune(const Graph& g, RecordsDB& db, const ReuseOptions& opts, const ReuseProgress& progress = {});

// {"model", "classes", "donors", "workloads", "default_ms", "evaluations", "e2e_default_ms",
// "e2e_reused_ms", "speedup", "standalone_seconds", "seconds", "stopped"} (docs/cli.md).
nlohmann::json reuse_json(const ReuseSummary& s);
// The donor table (the paper's Table 2-3): one row per donor, one column per class.
std::string donor_table(const ReuseSummary& s);

}  // namespace ts
