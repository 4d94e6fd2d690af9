// Data set files on a real records database: export writes gzip JSONL of one split or all (each
// workload's subgraph in its first record), import reads it back, a damaged file is an error
// naming it.
#include "dataset/dataset_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "dataset/dataset_generate.h"
#include "graph/error.h"
#include "graph/file_io.h"
#include "support/onnx_builder.h"
#include "support/dataset_records.h"
#include "support/small_workloads.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

TEST(DatasetFile, ExportsASplitAndImportsItBack) {
  const Workload w = test::matmul_relu_workload();
  const auto dir = test::temp_dir();
  RecordsDB db((dir / "src.db").string());
  test::fill_dataset_records(db, w);
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
  EXPECT_TRUE(test::throws_naming<Error>([&] { import_dataset(copy, (dir / "cut.jsonl.gz").string()); }, {"cut.jsonl.gz"}));
}

}  // namespace
}  // namespace ts
