// `tensorsched costmodel eval` on a real records file: features of real schedules of four
// ResNet-18 workloads (extracted as the tuner stores them), leave-workloads-out folds, metrics
// as JSON, and a saved model that loads. Times come from a stand-in rule (an output run in
// parallel is 4x faster) so that the test runs in seconds; real measurements are the tuner's
// tests.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "analysis/pipeline_view.h"
#include "costmodel/gbt_model.h"
#include "features/features.h"
#include "measure/workload_compiler.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "tune/records_db.h"

namespace ts {
namespace {

std::string run_cli(const std::string& args, int* code) {
  std::string cmd = std::string(TENSORSCHED_BINARY) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = pclose(p);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

TEST(CostmodelCmd, EvaluatesHeldOutWorkloadsAndSavesAModel) {
  const auto dir = test::temp_dir();
  const std::string db_path = (dir / "records.db").string();
  {
    RecordsDB db(db_path);
    const auto ws = test::zoo_workloads("resnet18.onnx");
    SpaceOptions so;
    so.sampling = Sampling::Stratified;
    std::mt19937_64 rng(1);
    for (size_t wi : {1, 2, 5, 6}) {
      const Workload& w = ws.at(wi);
      ScheduleSpace space(build_pipeline_view(lower_workload(w).outputs), so);
      FeatureExtractor fx(space);
      std::vector<Record> batch;
      for (int k = 0; k < 40; k++) {
        const Schedule s = space.sample(rng);
        const StageSchedule* out = s.find(space.schedule_name(0), 0);
        const double t = 1e-3 * (out->parallel.empty() ? 4 : 1);
        Record r = test::measured_record(w, s, t);
        r.features = fx.flat(s);
        r.features_version = kFeaturesVersion;
        batch.push_back(std::move(r));
      }
      db.add(batch);
    }
  }
  const std::string model = (dir / "gbt.json").string();
  int code = 0;
  const std::string out =
      run_cli("costmodel eval --db " + db_path + " --folds 2 --top-k 1,5 --json --save " + model, &code);
  ASSERT_EQ(code, 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.at("folds").size(), 2u);
  const auto& m = j.at("overall");
  EXPECT_EQ(m.at("samples").get<int>(), 160);
  EXPECT_EQ(m.at("groups").get<int>(), 4);
  // Held-out workloads: the rule learned on two others ranks theirs well above chance (pairs of
  // equal times do not count).
  EXPECT_GT(m.at("pairwise_accuracy").get<double>(), 0.8) << m.dump();
  EXPECT_TRUE(m.at("top_k_recall").contains("5"));
  GbtModel loaded;
  loaded.load(model);
  EXPECT_TRUE(loaded.trained());
  EXPECT_EQ(loaded.num_features(), flat_feature_names().size());

  // A database without features is an error that says so, not a crash.
  { RecordsDB empty((dir / "empty.db").string()); }
  run_cli("costmodel eval --db " + (dir / "empty.db").string(), &code);
  EXPECT_EQ(code, 1);
}

}  // namespace
}  // namespace ts
