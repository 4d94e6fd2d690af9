// The measured data set on real random networks (written as ONNX, loaded as a user's model):
// every distinct workload gets K distinct schedules with every repeat, its subgraph and
// features, policies naming the split and the draw method; a run cut by its budget resumes
// without measuring a schedule twice; a share of ranks measures only its networks.
#include "dataset/dataset_generate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "api/compile_model.h"
#include "dataset/random_network.h"
#include "graph/onnx_export.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

std::vector<DatasetNetwork> small_networks(int count) {
  RandomNetworkOptions o;
  o.max_ops = 6;
  o.max_tensor_elements = 1 << 14;
  std::vector<DatasetNetwork> nets;
  for (int i = 0; i < count; i++) {
    const RandomNetwork net = random_network(network_seed(11, static_cast<uint64_t>(i)), o);
    const std::string name = "random_11_" + std::to_string(i);
    const std::string path = (test::temp_dir() / (name + ".onnx")).string();
    std::ofstream(path, std::ios::binary) << graph_to_onnx(net.graph, name);
    nets.push_back({name, [path] { return load_model(path); }});
  }
  return nets;
}

DatasetOptions small_options(int k) {
  DatasetOptions o;
  o.schedules_per_workload = k;
  o.seed = 5;
  o.batch = 2;
  o.measure.repeats = 3;
  o.measure.compile_jobs = 2;
  o.measure.cache_root = (test::temp_dir() / "cache").string();
  return o;
}

TEST(DatasetGenerate, EveryWorkloadGetsKSchedulesAndARerunResumes) {
  const auto nets = small_networks(2);
  RecordsDB db((test::temp_dir() / "dataset.db").string());
  DatasetOptions o = small_options(4);
  std::atomic<bool> stop{false};
  o.stop = &stop;  // stopped after its first batch, as Ctrl-C would: the rerun goes on
  const DatasetSummary first = generate_dataset(nets, db, o, [&](const std::string&) { stop = true; });
  ASSERT_EQ(first.networks, 2);
  ASSERT_GT(first.workloads, 1);
  EXPECT_TRUE(first.stopped);
  EXPECT_EQ(first.failed_workloads, 0) << (first.failures.empty() ? "" : first.failures[0]);
  o.stop = nullptr;
  std::vector<std::string> lines;
  const DatasetSummary second = generate_dataset(nets, db, o, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(second.workloads, first.workloads);
  EXPECT_FALSE(second.stopped);
  EXPECT_GT(second.measured_now, 0);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("/h"), std::string::npos) << lines.back();

  std::set<std::string> methods;
  for (const WorkloadEntry& w : db.workloads()) {
    std::set<std::string> hashes;
    int defaults = 0;
    for (const Record& r : db.records(w.exact_key)) {
      EXPECT_EQ(dataset_split_of(r.policy), kTrainSplit) << r.policy;
      EXPECT_TRUE(hashes.insert(r.schedule_hash).second) << w.name << ": " << r.schedule_hash << " measured twice";
      methods.insert(r.policy.substr(r.policy.find('/') + 1));
      defaults += r.policy == dataset_policy(kTrainSplit, "default");
      if (r.valid()) EXPECT_EQ(r.times.size(), 3u) << r.policy;  // every repeat kept
      if (r.valid() && r.policy != dataset_policy(kTrainSplit, "adams2019-noise")) EXPECT_FALSE(r.features.empty()) << r.policy;
    }
    EXPECT_EQ(defaults, 1) << w.name;
    EXPECT_LE(hashes.size(), 4u) << w.name;
    EXPECT_GE(hashes.size(), 2u) << w.name;  // a space of one workload may hold few schedules, never only the default
    EXPECT_FALSE(db.subgraph(w.exact_key).empty()) << w.name;
  }
  EXPECT_TRUE(methods.count("default") && methods.count("stratified") && methods.count("uniform"));
  EXPECT_EQ(db.model_workloads("random_11_0").empty(), false);

  const DatasetSummary third = generate_dataset(nets, db, o);  // nothing left
  EXPECT_EQ(third.measured_now, 0);
}

TEST(DatasetGenerate, ARankMeasuresOnlyItsShareAndTheHeldOutSplitIsNamed) {
  const auto nets = small_networks(3);
  RecordsDB db((test::temp_dir() / "rank1.db").string());
  DatasetOptions o = small_options(2);
  o.rank = 1;
  o.ranks = 2;
  o.split = kHeldOutSplit;
  const DatasetSummary s = generate_dataset(nets, db, o);
  EXPECT_EQ(s.networks, 1);  // network 1 of 0, 1, 2
  const auto models = db.model_workloads();
  ASSERT_FALSE(models.empty());
  for (const auto& m : models) EXPECT_EQ(m.model, "random_11_1");
  for (const WorkloadEntry& w : db.workloads())
    for (const Record& r : db.records(w.exact_key)) EXPECT_EQ(dataset_split_of(r.policy), kHeldOutSplit) << r.policy;
  o.split = "validation";
  EXPECT_THROW(generate_dataset(nets, db, o), Error);
}

// A data set resumed by another build of the code generator (or measured on another machine)
// counts the records already held only when the database is told to: by default they are
// another machine's times and the workloads are measured again.
TEST(DatasetGenerate, ForeignRecordsCountAsHeldOnlyWhenAllowed) {
  const auto nets = small_networks(1);
  RecordsDB here((test::temp_dir() / "here.db").string());
  const DatasetOptions o = small_options(2);
  const DatasetSummary first = generate_dataset(nets, here, o);
  ASSERT_GT(first.measured_now, 0);
  std::stringstream exported, foreign;
  here.export_jsonl(exported);
  for (std::string line; std::getline(exported, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    j["machine"]["code_generator"] = "an-older-build";
    foreign << j.dump() << "\n";
  }
  RecordsDB other((test::temp_dir() / "other.db").string());
  ASSERT_EQ(static_cast<int64_t>(other.import_jsonl(foreign, "older build").added), first.measured_now);
  other.set_allow_foreign(true);
  EXPECT_EQ(generate_dataset(nets, other, o).measured_now, 0);  // resumed: nothing measured twice
  other.set_allow_foreign(false);
  EXPECT_GT(generate_dataset(nets, other, o).measured_now, 0);  // this machine has none of its own yet
}

}  // namespace
}  // namespace ts
