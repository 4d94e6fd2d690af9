// db featurize: records whose features are of an older version (here: erased) get back, from the
// workload subgraph the database keeps, the features a fresh extraction gives; the old recipe of
// the default rule is featurized as the rule's data; workloads without a subgraph are skipped.
#include "tune/featurize.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>

#include "analysis/pipeline_view.h"
#include "features/features.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"
#include "search/random_search.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "tune/tuner.h"

namespace ts {
namespace {

TEST(Featurize, RecordsGetTheirFeaturesBackFromTheStoredSubgraph) {
  const auto dir = test::temp_dir() / "featurize";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "records.db").string();
  std::filesystem::remove(path);
  const Graph g = test::import_model(test::save_matmul_relu_model());
  const Workload w = partition_graph(g).workloads.at(0);
  std::map<int64_t, std::vector<float>> fresh;  // record id -> features at measurement
  {
    RecordsDB db(path);
    TuneOptions o;
    o.trials = 4;
    o.measure.repeats = 1;
    o.measure.cache_root = (dir / "cache").string();
    o.e2e_iters = 0;
    o.confirm_rounds = 0;
    RandomSearch random;
    tune_model(g, db, random, o);
    // A record of the rule's old recipe with knobs, as an older tensorsched wrote it.
    db.add(test::measured_record(
        w, Schedule::from_json(R"({"format":1,"stages":[],"autoscheduler":{"name":"TensorschedDefault","params":{"columns":"4"}}})"),
        2e-3));
    std::vector<std::pair<int64_t, std::vector<float>>> erased;
    for (const Record& r : db.records(w.exact_key)) {
      if (!r.features.empty()) fresh[r.id] = r.features;
      erased.emplace_back(r.id, std::vector<float>{});
    }
    ASSERT_GE(fresh.size(), 5u) << "the default and four trials have features";
    db.set_features(erased, 0);  // as if measured by an older features version
  }
  ASSERT_FALSE(RecordsDB(path).subgraph(w.exact_key).empty());
  RecordsDB db(path, RecordsDB::Open::MustExist);
  const FeaturizeSummary s = featurize_records(db, false);
  EXPECT_EQ(s.workloads, 1);
  EXPECT_EQ(s.without_subgraph, 0);
  EXPECT_EQ(s.failed_workloads, 0);
  EXPECT_EQ(s.featurized, static_cast<int64_t>(fresh.size()) + 1) << "the old recipe's record too";
  const LoweredWorkload lw = lower_workload(w);
  SpaceOptions so;
  so.vector_bytes = native_vector_bytes(Halide::get_host_target());
  const ScheduleSpace space(build_pipeline_view(lw.outputs), space_options_for(w, so));
  const FeatureExtractor fx(space);
  DefaultKnobs four;
  four.columns = 4;
  for (const Record& r : db.records(w.exact_key)) {
    EXPECT_EQ(r.features_version, kFeaturesVersion);
    if (auto it = fresh.find(r.id); it != fresh.end()) EXPECT_EQ(r.features, it->second) << r.schedule_json;
    else EXPECT_EQ(r.features, fx.flat(default_schedule(lw.outputs, host_code_target(), four))) << "the converted recipe";
  }
  // Current records are left alone; --force recomputes them.
  EXPECT_EQ(featurize_records(db, false).current, s.featurized);
  EXPECT_EQ(featurize_records(db, true).featurized, s.featurized);
}

TEST(Featurize, WorkloadsWithoutASubgraphAreSkippedAndCounted) {
  const auto dir = test::temp_dir() / "featurize_old";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "records.db").string();
  std::filesystem::remove(path);
  const Workload w = test::matmul_relu_workload();
  {
    RecordsDB db(path);
    db.add(test::measured_record(w, test::matmul_relu_schedule(w, 8, false), 1e-3));
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DELETE FROM subgraphs", nullptr, nullptr, nullptr), SQLITE_OK);  // an older file
  sqlite3_close(raw);
  RecordsDB db(path, RecordsDB::Open::MustExist);
  const FeaturizeSummary s = featurize_records(db, true);
  EXPECT_EQ(s.workloads, 1);
  EXPECT_EQ(s.without_subgraph, 1);
  EXPECT_EQ(s.featurized, 0);
}

}  // namespace
}  // namespace ts
