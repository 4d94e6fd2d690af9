#include "support/dataset_records.h"

#include "dataset/dataset_generate.h"
#include "support/small_workloads.h"

namespace ts::test {

namespace {

Record dataset_record(const Workload& w, int width, const std::string& policy, std::vector<double> times,
                      const std::string& error = "") {
  const Schedule s = test::matmul_relu_schedule(w, width, width > 4);
  Record r;
  r.workload = workload_entry(w);
  r.schedule_json = s.to_json();
  r.schedule_hash = s.hash();
  r.times = std::move(times);
  r.error_kind = error;
  if (!error.empty()) r.error_message = "it failed";
  r.policy = policy;
  return r;
}

}  // namespace

void fill_dataset_records(RecordsDB& db, const Workload& w) {
  db.add(dataset_record(w, 16, dataset_policy(kTrainSplit, "default"), {4e-3, 4e-3, 4.4e-3}));
  db.add(dataset_record(w, 8, dataset_policy(kTrainSplit, "uniform"), {1e-3, 1.2e-3, 1e-3}));  // 4x faster
  db.add(dataset_record(w, 4, dataset_policy(kTrainSplit, "stratified"), {}, "timeout"));
  db.add(dataset_record(w, 2, dataset_policy(kHeldOutSplit, "stratified"), {2e-3}));
  db.add(dataset_record(w, 1, "random", {9e-3}));  // a tuning record: not the data set's
  db.set_model("random_1_00000", {{"", workload_entry(w), 1}});
}

}  // namespace ts::test
