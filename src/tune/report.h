#pragma once
// The tuning report: one self-contained HTML page (inline SVG, no scripts, no external files)
// about a records database, optionally restricted to one model's workloads: per workload the
// default vs the schedule run/compile would use, the tuning curve (best time so far by
// measurement), noise and errors; for a model, its estimated latency over tuning time.
#include <string>

#include "graph/workload.h"
#include "tune/records_db.h"

namespace ts {

struct ReportOptions {
  std::string title = "tensorsched tuning report";
  const Partition* model = nullptr;  // restrict to (and weight by) this model's workloads; null = every workload
  std::string model_name;            // shown in the title when `model` is set
};

// The page's HTML. Uses the records `db` lets through (this machine's unless it allows foreign).
std::string tuning_report_html(const RecordsDB& db, const ReportOptions& opts);

}  // namespace ts
