#pragma once
// What a data set holds (`tensorsched dataset stats`): counts by split, method and error, the
// time range, the noise of the repeats, the op histogram of its workloads, and what the data
// says about the default rule: per workload (and machine), the default's median against the
// best sampled schedule's, as a distribution and by workload class.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tune/records_db.h"

namespace ts {

struct DatasetStats {
  int64_t records = 0;                          // data set records (policy "<split>/<method>")
  int64_t valid = 0;                            // of which measured without error
  std::map<std::string, int64_t> by_split;      // split -> records
  std::map<std::string, int64_t> by_method;     // draw method -> records
  std::map<std::string, int64_t> errors;        // error kind -> records
  std::map<std::string, int> workloads_by_split;  // split -> distinct workloads with records of it
  int networks = 0;                             // models the database holds workloads of
  int machines = 0;                             // distinct machine fingerprints among the records
  int64_t first_us = 0, last_us = 0;            // timestamps of the oldest and newest record
  std::vector<double> noise_quantiles;          // (max - min) / mean of valid records with >= 2 repeats: p10, p50, p90, p99
  double mean_repeats = 0;                      // timed repeats per valid record
  std::map<std::string, int> op_histogram;      // op -> workloads whose name holds it
  int compared = 0;                             // workloads (per machine) with a valid default and another valid schedule
  std::vector<double> default_quantiles;        // default median / best median over them: p10, p50, p90, p99
  int default_is_best = 0;                      // of which no sampled schedule beat the default
  int default_over_2x = 0;                      // of which the best sampled ran more than 2x faster
  struct ClassRatio {
    std::string name;                           // workload name (its op pattern, e.g. "Conv+Relu")
    int workloads = 0;                          // compared workloads of that name
    double geomean = 0;                         // geometric mean of their default / best
  };
  std::vector<ClassRatio> worst_classes;        // up to 8 names with the highest geomean, worst first
};

// Every machine's data set records of `db` (any split).
DatasetStats dataset_stats(RecordsDB& db);
// The statistics as the command prints them (several lines).
std::string format_dataset_stats(const DatasetStats& s);

}  // namespace ts
