// Data set statistics on a real records database: counts by split, method and error, and the
// default against the best sampled schedule.
#include "dataset/dataset_stats.h"

#include <gtest/gtest.h>

#include "dataset/dataset_generate.h"
#include "support/dataset_records.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

TEST(DatasetStats, CountsAndTheDefaultAgainstTheBestSampled) {
  const Workload w = test::matmul_relu_workload();
  RecordsDB db((test::temp_dir() / "stats.db").string());
  test::fill_dataset_records(db, w);
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
