// Data set files and statistics on a real records database: export writes gzip JSONL of one
// split or all (each workload's subgraph in its first record), import reads it back (and plain
// JSONL), a damaged file is an error naming it; the statistics count what the records hold and
// compare the default with the best sampled schedule.
#include "dataset/dataset_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "dataset/dataset_generate.h"
#include "dataset/dataset_stats.h"
#include "graph/error.h"
#include "graph/file_io.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
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

void fill(RecordsDB& db, const Workload& w) {
  db.add(dataset_record(w, 16, dataset_policy(kTrainSplit, "default"), {4e-3, 4e-3, 4.4e-3}));
  db.add(dataset_record(w, 8, dataset_policy(kTrainSplit, "uniform"), {1e-3, 1.2e-3, 1e-3}));  // 4x faster
  db.add(dataset_record(w, 4, dataset_policy(kTrainSplit, "stratified"), {}, "timeout"));
  db.add(dataset_record(w, 2, dataset_policy(kHeldOutSplit, "stratified"), {2e-3}));
  db.add(dataset_record(w, 1, "random", {9e-3}));  // a tuning record: not the data set's
  db.set_model("random_1_00000", {{"", workload_entry(w), 1}});
}

TEST(DatasetFile, ExportsASplitAndImportsItBack) {
  const Workload w = test::matmul_relu_workload();
  const auto dir = test::temp_dir();
  RecordsDB db((dir / "src.db").string());
  fill(db, w);
  const std::string all = (dir / "all.jsonl.gz").string(), train = (dir / "train.jsonl.gz").string();
  EXPECT_EQ(export_dataset(db, all), 4);
  EXPECT_EQ(export_dataset(db, train, kTrainSplit), 3);
  const std::string bytes = read_regular_file(all, "test");
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);  // gzip

  RecordsDB heldout_only((dir / "h.db").string());
  const std::string held = (dir / "held.jsonl.gz").string();
  EXPECT_EQ(export_dataset(db, held, kHeldOutSplit), 1);
  EXPECT_EQ(import_dataset(heldout_only, held).added, 1u);
  EXPECT_FALSE(heldout_only.subgraph(w.exact_key).empty());  // carried by the split's first record

  RecordsDB copy((dir / "copy.db").string());
  const auto r = import_dataset(copy, train);
  EXPECT_EQ(r.added, 3u);
  EXPECT_TRUE(r.rejected.empty());
  EXPECT_EQ(import_dataset(copy, train).present, 3u);
  EXPECT_EQ(copy.subgraph(w.exact_key), db.subgraph(w.exact_key));

  std::ofstream(dir / "cut.jsonl.gz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  try {
    import_dataset(copy, (dir / "cut.jsonl.gz").string());
    FAIL() << "a truncated file imported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cut.jsonl.gz"), std::string::npos) << e.what();
  }
}

TEST(DatasetStats, CountsAndTheDefaultAgainstTheBestSampled) {
  const Workload w = test::matmul_relu_workload();
  RecordsDB db((test::temp_dir() / "stats.db").string());
  fill(db, w);
  const DatasetStats s = dataset_stats(db);
  EXPECT_EQ(s.records, 4);
  EXPECT_EQ(s.valid, 3);
  EXPECT_EQ(s.by_split.at(kTrainSplit), 3);
  EXPECT_EQ(s.by_split.at(kHeldOutSplit), 1);
  EXPECT_EQ(s.by_method.at("stratified"), 2);
  EXPECT_EQ(s.errors.at("timeout"), 1);
  EXPECT_EQ(s.networks, 1);
  EXPECT_EQ(s.machines, 1);
  EXPECT_EQ(s.op_histogram.at("MatMul"), 1);
  ASSERT_EQ(s.compared, 1);
  ASSERT_EQ(s.default_quantiles.size(), 4u);
  EXPECT_NEAR(s.default_quantiles[1], 4.0, 1e-9);  // default 4 ms, best sampled 1 ms (median)
  EXPECT_EQ(s.default_over_2x, 1);
  ASSERT_EQ(s.worst_classes.size(), 1u);
  EXPECT_EQ(s.worst_classes[0].name, w.name);
  const std::string text = format_dataset_stats(s);
  EXPECT_NE(text.find("4 records (3 valid"), std::string::npos) << text;
  EXPECT_NE(text.find("p50 4x"), std::string::npos) << text;
}

}  // namespace
}  // namespace ts
