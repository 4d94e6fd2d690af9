#pragma once
// The measured data set: networks partitioned into workloads, and per distinct workload K
// schedules measured and recorded in a records database (tune/records_db.h) with every repeat,
// the workload's subgraph and the schedule's features, so that a cost model can be trained
// offline (value-learning paper section 6.1-6.2, graph-network paper section III.A).
//
// Schedules are drawn the ways the papers draw them, in turn until a workload has K: the default
// rule's own schedule (the reference every other one is checked against), points of the rule's
// micro-kernel sketch (its variants), stratified and uniform rollouts of the schedule space,
// points of the loop-nest sketch, and Adams2019's choices with random dropout (the graph-network
// paper's noise-injected schedules). Each record's policy is "<split>/<method>": the split tells
// random networks ("train") from the model zoo's ("heldout": the test set, never trained on).
//
// Every draw comes from a generator seeded by the data set's seed and the workload's key, so a
// rerun draws the same schedules (but for Adams2019's, whose searches stop at a time budget per
// workload: a rerun may get more or fewer of them) and skips those already recorded: a run
// killed at any point resumes losing at most the batch it was measuring. A run with `ranks` > 1 measures only the
// networks whose index is `rank` modulo `ranks` (one share per MPI rank).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "measure/measurer.h"
#include "tune/records_db.h"

namespace ts {

// Splits of the data set (Record::policy is "<split>/<method>").
inline constexpr const char* kTrainSplit = "train";
inline constexpr const char* kHeldOutSplit = "heldout";
// Draw methods, in the order they take turns.
const std::vector<std::string>& dataset_methods();
// "<split>/<method>".
std::string dataset_policy(const std::string& split, const std::string& method);
// The split of a data set record's policy ("" when the policy is not a data set's).
std::string dataset_split_of(const std::string& policy);

struct DatasetOptions {
  int schedules_per_workload = 16;  // K: distinct schedules measured per workload, the default's included
  double seconds = 0;               // wall-time budget (0 = none); a run cut by it resumes where it stopped
  std::string split = kTrainSplit;  // kTrainSplit or kHeldOutSplit
  uint64_t seed = 0;                // with each workload's key, seeds its draws
  int batch = 4;                    // schedules compiled and run per batch
  int rank = 0;                     // this process measures networks i with i % ranks == rank
  int ranks = 1;
  double slow_factor = 50;          // a candidate's runs stop past this multiple of the default's whole run (a timeout record)
  double adams_seconds = 10;        // the most Adams2019's searches may take per workload (on a large one a search takes seconds to minutes)
  MeasureOptions measure;           // repeats (10, as both papers), timeouts, compile jobs, threads, cache
  const std::atomic<bool>* stop = nullptr;  // when it turns true: stop after the batch in flight
};

// One network of the data set: its name (the records' model name) and how to load it.
struct DatasetNetwork {
  std::string name;
  std::function<Graph()> load;
};

struct DatasetSummary {
  int networks = 0;                  // networks of this rank's share
  int workloads = 0;                 // distinct workloads among them
  int complete_before = 0;           // of which the database already held K schedules
  int failed_workloads = 0;          // whose default could not be compiled or run (see failures)
  int64_t measured_now = 0;          // records this run added
  std::map<std::string, int64_t> errors;  // error kind -> records of this run with it
  std::map<std::string, int64_t> methods;  // draw method -> records of this run
  std::vector<std::string> failures; // one line per network or workload that failed, naming it
  double seconds = 0;                // wall time
  bool stopped = false;              // the budget or `stop` ended the run before every workload had K
};

// Measures the share of `networks` that options.rank owns into `db` (see top). `progress`, when
// set, gets one line per batch: counts, rate and ETA.
DatasetSummary generate_dataset(const std::vector<DatasetNetwork>& networks, RecordsDB& db, const DatasetOptions& options,
                                const std::function<void(const std::string&)>& progress = {});

}  // namespace ts
