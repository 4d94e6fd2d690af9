// In-network refinement with a real model (a 2048 -> 512 1x1 conv at 7 x 7 between two others,
// blocked as `run` loads it), real compiles, real runs and a real SQLite file: a trial is timed
// in the model and recorded as a confirmation pair that `run --db` reads; a decided pair is what
// runs, per thread count, until a later confirmation replaces it; tune_model runs the trials
// after its confirmations.
#include "tune/network_refine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "api/compile_model.h"
#include "schedule/rule_sketch.h"
#include "search/random_search.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "tune/tuner.h"
#include "measure/workload_compiler.h"

namespace ts {
namespace {

Graph chain_model() {
  LoadOptions lo;
  lo.threads = 1;
  return load_model(test::save_conv_chain("network_refine.onnx", 64, 2048, 512, 7, 7, 1), lo);
}

std::string cache() { return (test::temp_dir() / "network_refine_cache").string(); }

std::string fresh_db(const std::string& name) {
  const auto path = test::temp_dir() / name;
  std::filesystem::remove(path);
  return path.string();
}

// Each workload whose default has a network variant, as tune_model finds them.
std::vector<NetworkCandidate> candidates_of(const Partition& part) {
  std::vector<NetworkCandidate> out;
  for (const auto& w : part.workloads) {
    const RuleSketch space(lower_workload(w).outputs, host_code_target());
    if (auto k = space.network_variant())
      out.push_back({&w, space.schedule(*k), static_cast<double>(w.count) * space.weight_bytes()});
  }
  return out;
}

NetworkRefineOptions quick(int threads) {
  NetworkRefineOptions o;
  o.evals = 1;
  o.iters = 3;
  o.threads = {threads};
  o.cache_root = cache();
  return o;
}

TEST(NetworkRefine, ATrialIsTimedInTheModelAndRecordedAsAConfirmationPair) {
  const Graph g = chain_model();
  const Partition part = partition_graph(g);
  const std::vector<NetworkCandidate> cands = candidates_of(part);
  if (cands.empty()) GTEST_SKIP() << "the rule prefetches none of these convs on this host (no variant to time)";
  RecordsDB db(fresh_db("network_refine.db"));
  std::vector<std::string> lines;
  const std::vector<NetworkTrial> trials =
      refine_in_network(g, db, cands, quick(1), [&](const std::string& l) { lines.push_back(l); });
  ASSERT_EQ(trials.size(), 1u);  // evals = 1
  const NetworkTrial& t = trials[0];
  ASSERT_EQ(t.error, "");
  EXPECT_EQ(t.variant, R"({"prefetch":"2"})");
  EXPECT_EQ(t.threads, 1);
  EXPECT_GT(t.base_s, 0);
  EXPECT_GT(t.variant_s, 0);
  EXPECT_LE(t.base_min_s, t.base_s);
  EXPECT_GT(t.base_model_s, t.base_min_s) << "the model's latency includes the workload's steps";
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(t.kept ? "kept" : "discarded"), std::string::npos) << lines[0];

  const NetworkCandidate* c = nullptr;
  for (const auto& k : cands)
    if (k.w->key_hash() == t.key_hash) c = &k;
  ASSERT_NE(c, nullptr);
  std::vector<Record> pair;
  for (const auto& r : db.records(c->w->exact_key))
    if (r.policy == kNetworkConfirmPolicy) pair.push_back(r);
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_EQ(pair[0].schedule_hash, default_schedule_of(*c->w).hash());
  EXPECT_TRUE(is_default_record(pair[0]));
  EXPECT_EQ(pair[1].schedule_hash, c->variant.hash());
  for (const auto& r : pair) {
    EXPECT_EQ(r.threads, 1);
    EXPECT_EQ(r.times.size(), 3u);  // iters
  }
  // Records hold a step's mean (the unit of a standalone record); the trial, their sum per inference.
  EXPECT_DOUBLE_EQ(pair[0].median * c->w->count, t.base_s);
  EXPECT_DOUBLE_EQ(pair[1].median * c->w->count, t.variant_s);
  const std::vector<Record> best = db.best(c->w->exact_key, 10);
  EXPECT_TRUE(std::none_of(best.begin(), best.end(), [](const Record& r) { return r.policy == kNetworkConfirmPolicy; }))
      << "best() holds standalone times only";
  const auto conf = latest_confirmation(db, c->w->exact_key, 1);
  ASSERT_TRUE(conf.has_value());
  EXPECT_EQ(conf->faster(), t.kept);
  std::vector<std::string> warnings;
  EXPECT_EQ(best_schedules(part, db, warnings, 1).count(c->w->exact_key), t.kept ? 1u : 0u);
}

// Decisions written by hand: the model's decision on 1 thread runs on 2 as well (no pair of 2)
// until 2 decides anew, against the default; a standalone winner is never tried.
TEST(NetworkRefine, EachThreadCountDecidesAnewAndATunedWinnerIsKept) {
  const Graph g = chain_model();
  const Partition part = partition_graph(g);
  std::vector<NetworkCandidate> cands = candidates_of(part);
  if (cands.empty()) GTEST_SKIP() << "the rule prefetches none of these convs on this host (no variant to time)";
  std::sort(cands.begin(), cands.end(), [](const auto& a, const auto& b) { return a.walked_bytes > b.walked_bytes; });
  const Workload& w = *cands[0].w;
  RecordsDB db(fresh_db("network_threads.db"));
  auto pair = [&](const char* policy, const Schedule& s, double cand_s, int threads) {
    Record d = test::measured_record(w, test::rule_variant(w, {}), 1e-3), c = test::measured_record(w, s, cand_s);
    d.policy = c.policy = policy;
    d.threads = c.threads = threads;
    db.add({d, c});
  };
  pair(kNetworkConfirmPolicy, cands[0].variant, 0.8e-3, 1);
  std::vector<std::string> warnings;
  ASSERT_EQ(best_schedules(part, db, warnings, 2).at(w.exact_key).hash(), cands[0].variant.hash());
  const std::vector<NetworkTrial> two = refine_in_network(g, db, cands, quick(2));
  ASSERT_EQ(two.size(), 1u);
  EXPECT_EQ(two[0].key_hash, w.key_hash()) << "tried anew on 2 threads";
  ASSERT_EQ(two[0].error, "");
  const auto conf2 = latest_confirmation(db, w.exact_key, 2);
  ASSERT_TRUE(conf2.has_value());
  EXPECT_EQ(conf2->candidate.threads, 2);
  EXPECT_EQ(conf2->faster(), two[0].kept);
  EXPECT_EQ(best_schedules(part, db, warnings, 1).at(w.exact_key).hash(), cands[0].variant.hash()) << "1 thread's stands";

  // A standalone winner on 2 threads (a tuned knob set): the model keeps it, the workload is not tried.
  DefaultKnobs tuned;
  tuned.prefetch = 0;
  pair(kConfirmPolicy, test::rule_variant(w, tuned), 0.8e-3, 2);
  for (const auto& t : refine_in_network(g, db, cands, quick(2))) EXPECT_NE(t.key_hash, w.key_hash());
}

// The decision, made deterministic: pairs written by hand with chosen times.
TEST(NetworkRefine, ADecidedPairIsWhatRunsAtItsThreadCountUntilALaterConfirmation) {
  const Graph g = chain_model();
  const Partition part = partition_graph(g);
  const Workload& w = *std::find_if(part.workloads.begin(), part.workloads.end(),
                                    [](const Workload& x) { return x.name == "Conv+Relu"; });
  RecordsDB db(fresh_db("network_decided.db"));
  DefaultKnobs k;
  k.prefetch = 2;
  const Schedule variant = test::rule_variant(w, k);
  auto pair = [&](const char* policy, double def_s, double cand_s, int threads) {
    Record d = test::measured_record(w, test::rule_variant(w, {}), def_s), c = test::measured_record(w, variant, cand_s);
    d.policy = c.policy = policy;
    d.threads = c.threads = threads;
    db.add({d, c});
  };
  std::vector<std::string> warnings;
  pair(kNetworkConfirmPolicy, 1.0e-3, 0.85e-3, 1);  // 15% faster in the network on 1 thread
  EXPECT_EQ(best_schedules(part, db, warnings, 1).at(w.exact_key).hash(), variant.hash());
  EXPECT_EQ(best_schedules(part, db, warnings, 2).at(w.exact_key).hash(), variant.hash())
      << "no pair of 2 threads: the latest of any";
  pair(kNetworkConfirmPolicy, 1.0e-3, 0.99e-3, 2);  // within the margin on 2 threads
  EXPECT_EQ(best_schedules(part, db, warnings, 2).count(w.exact_key), 0u);
  EXPECT_EQ(best_schedules(part, db, warnings, 1).count(w.exact_key), 1u);
  // A later standalone confirmation on 1 thread decides from then on.
  pair(kConfirmPolicy, 1.0e-3, 1.0e-3, 1);
  EXPECT_EQ(best_schedules(part, db, warnings, 1).count(w.exact_key), 0u);
  // A default of one kind and a candidate of the other are no pair: the last pair still decides.
  Record d = test::measured_record(w, test::rule_variant(w, {}), 1.0e-3), c = test::measured_record(w, variant, 0.5e-3);
  d.policy = kNetworkConfirmPolicy;
  c.policy = kConfirmPolicy;
  d.threads = c.threads = 1;
  db.add({d, c});
  EXPECT_EQ(best_schedules(part, db, warnings, 1).count(w.exact_key), 0u);
  EXPECT_TRUE(warnings.empty());
}

TEST(NetworkRefine, TuneModelTimesTheNetworkVariantWithTheMostPagesAfterItsConfirmations) {
  const Graph g = chain_model();
  const Partition part = partition_graph(g);
  const std::vector<NetworkCandidate> cands = candidates_of(part);
  if (cands.empty()) GTEST_SKIP() << "the rule prefetches none of these convs on this host";
  const NetworkCandidate& most = *std::max_element(cands.begin(), cands.end(), [](const auto& a, const auto& b) {
    return a.walked_bytes < b.walked_bytes;
  });
  EXPECT_EQ(most.walked_bytes, 2048.0 * 512 * 4) << "the 2048 -> 512 conv's weights";
  RecordsDB db(fresh_db("network_tune.db"));
  RandomSearch policy;
  TuneOptions o;
  o.trials = 1;
  o.measure.repeats = 2;
  o.measure.threads = 1;
  o.measure.cache_root = cache();
  o.e2e_iters = 0;
  o.confirm_rounds = 1;
  o.network_evals = 1;
  const TuneSummary s = tune_model(g, db, policy, o);
  ASSERT_LE(s.network.size(), 1u);  // one thread count (the tuning's, which is 1), one evaluation
  const std::optional<Record> used = used_record(db, most.w->exact_key, 1);
  if (used && used->policy == kConfirmPolicy) {  // a trial of the search beat the default alone: it stays
    for (const auto& t : s.network) EXPECT_NE(t.key_hash, most.w->key_hash());
    return;
  }
  ASSERT_EQ(s.network.size(), 1u);
  EXPECT_EQ(s.network[0].key_hash, most.w->key_hash()) << "the most weight pages first";
  EXPECT_EQ(s.network[0].threads, 1);
  EXPECT_EQ(s.network[0].error, "");
  const nlohmann::json j = summary_json(s);
  ASSERT_EQ(j["network"].size(), 1u);
  EXPECT_EQ(j["network"][0]["key"], s.network[0].key_hash);
  EXPECT_EQ(j["network"][0]["kept"], s.network[0].kept);

  o.network_evals = 0;
  EXPECT_TRUE(tune_model(g, db, policy, o).network.empty());
}

}  // namespace
}  // namespace ts
