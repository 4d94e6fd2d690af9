#pragma once
// Re-featurizing a records database: after the features change (kFeaturesVersion moves on), every
// record's features are recomputed from what the database itself keeps, the workload's subgraph
// (graph/workload_onnx.h) and the schedule, without the model the records came from. Records of
// the default rule's old recipe ("TensorschedDefault" with knobs) are featurized as the rule's
// schedule with those knobs on this host; Halide autoscheduler recipes have no features.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tune/records_db.h"

namespace ts {

struct FeaturizeSummary {
  int workloads = 0;                // workloads the database holds
  int without_subgraph = 0;         // of which no subgraph is stored (records older than subgraphs): skipped
  int failed_workloads = 0;         // of which the subgraph could not be read or lowered (see errors)
  int64_t records = 0;              // records of the other workloads
  int64_t featurized = 0;           // given features of kFeaturesVersion
  int64_t current = 0;              // already of kFeaturesVersion, left as they are (without `force`)
  int64_t without_features = 0;     // cannot have any: autoscheduler recipes, schedules the features refuse
  std::vector<std::string> errors;  // one line per failed workload
};

// Recomputes the features of every record not of kFeaturesVersion (every record with `force`).
// `progress`, when set, gets one line per workload.
FeaturizeSummary featurize_records(RecordsDB& db, bool force, const std::function<void(const std::string&)>& progress = {});

}  // namespace ts
