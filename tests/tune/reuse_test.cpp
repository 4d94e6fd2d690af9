// Tuning reuse with real models, real measurements and real SQLite files: a donor model tuned
// into one database, a target model of other sizes (same classes) reusing it; the donor table,
// the standalone records, the full evaluations; named, unknown and pre-model-table donors.
#include "tune/reuse.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "analysis/pipeline_view.h"
#include "api/compile_model.h"
#include "measure/workload_compiler.h"
#include "schedule/rule_sketch.h"
#include "schedule/schedule_space.h"
#include "search/random_search.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "tune/network_refine.h"
#include "tune/tuner.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using test::OnnxBuilder;
using test::rand_f32;

// Conv 3x3 + Relu, then a 1x1 conv + Relu (one class: the operation sequence), then global
// average pooling; `c` channels on a `hw` x `hw` image. Saved as <name>/model.onnx.
std::string conv_net(const std::string& name, int64_t c, int64_t hw) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {1, 3, hw, hw})
      .initializer("w0", rand_f32({c, 3, 3, 3}, 1))
      .initializer("w1", rand_f32({c, c, 1, 1}, 2))
      .node("Conv", {"x", "w0"}, {"c0"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c0"}, {"r0"})
      .node("Conv", {"r0", "w1"}, {"c1"})
      .node("Relu", {"c1"}, {"r1"})
      .node("GlobalAveragePool", {"r1"}, {"y"})
      .output("y");
  std::filesystem::create_directories(test::temp_dir() / name);
  return b.save(name + "/model.onnx");
}

std::string cache() { return (test::temp_dir() / "reuse_cache").string(); }

// A donor database: `name` tuned with a few random sketch points per workload.
std::string tuned_donor(const std::string& name, int64_t c, int64_t hw) {
  const std::string path = (test::temp_dir() / (name + ".db")).string();
  RecordsDB db(path);
  RandomSearch policy;
  TuneOptions o;
  o.trials = 3;
  o.measure.repeats = 2;
  o.measure.cache_root = cache();
  o.e2e_iters = 0;
  o.confirm_rounds = 0;
  tune_model(test::import_model(conv_net(name, c, hw)), db, policy, o);
  // Three random trials on a model this small beat the default only by luck, and a donor scores
  // only the workloads its tuning improved. Where no trial won, the fastest valid trial is
  // recorded again as 10% faster than the default: the donor's history, made deterministic (reuse
  // re-measures every schedule it takes, so these times never reach a result).
  for (const auto& w : db.workloads()) {
    const auto best = db.best(w.exact_key, 8);
    if (best.empty() || !is_default_record(best[0])) continue;
    auto trial = std::find_if(best.begin(), best.end(), [&](const Record& r) { return !is_default_record(r); });
    if (trial == best.end()) continue;
    Record faster = *trial;
    faster.id = 0;
    faster.timestamp_us = 0;
    faster.times.assign(trial->times.size(), best[0].median * 0.9);
    db.add(faster);
  }
  return path;
}

ReuseOptions quick(const std::vector<std::string>& donors, int full_evals) {
  ReuseOptions o;
  o.donor_dbs = donors;
  o.full_evals = full_evals;
  o.e2e_iters = 3;
  o.measure.repeats = 2;
  o.measure.cache_root = cache();
  return o;
}

TEST(Reuse, CarriesADonorsSchedulesToAModelOfOtherSizes) {
  const std::string donor = tuned_donor("donor_net", 16, 20);
  {
    RecordsDB d(donor, RecordsDB::Open::MustExist);
    auto held = d.model_workloads("donor_net");
    EXPECT_EQ(held.size(), 3u);  // two convs and the pooling
  }
  const Graph target = test::import_model(conv_net("target_net", 8, 12));
  RecordsDB db((test::temp_dir() / "target.db").string());
  std::vector<std::string> phases;
  ReuseSummary s = reuse_tune(target, db, quick({donor}, 2),
                              [&](const std::string& phase, const std::string&) { phases.push_back(phase); });
  EXPECT_EQ(s.model, "target_net");
  ASSERT_GE(s.classes.size(), 2u);  // conv+relu (one class, or two where the layout plan blocks r0), pooling
  double shares = 0;
  for (const auto& c : s.classes) shares += c.share;
  EXPECT_NEAR(shares, 1.0, 1e-9);
  ASSERT_EQ(s.donors.size(), 1u);
  EXPECT_EQ(s.donors[0].model, "donor_net");
  EXPECT_TRUE(s.donors[0].chosen);
  EXPECT_EQ(s.donors[0].per_class.count("A"), 1u);  // the first conv's class
  EXPECT_GT(s.donors[0].score, 0);
  int measured = 0;
  for (const auto& w : s.workloads) {
    EXPECT_TRUE(w.error.empty()) << w.name << ": " << w.error;
    EXPECT_EQ(w.measured + w.refused <= w.donor_schedules, true);
    measured += w.measured;
  }
  EXPECT_GT(measured, 0);
  {
    // Only what the donor's tuning earned is carried: its records faster than its workload's default.
    RecordsDB d(donor, RecordsDB::Open::MustExist);
    std::map<std::string, int> earned;  // class key -> carriable records over the donor's workloads
    for (const auto& w : d.workloads()) {
      const auto best = d.best(w.exact_key, 100);
      int faster = 0;
      for (const auto& r : best) {
        if (is_default_record(r)) break;
        faster++;
      }
      earned[w.class_key] += std::min(faster, quick({}, 0).per_donor_workload);
    }
    const Partition part = partition_graph(target);
    for (size_t i = 0; i < s.workloads.size(); i++)
      EXPECT_LE(s.workloads[i].donor_schedules, earned[part.workloads[i].class_key]) << s.workloads[i].name;
  }
  int reuse_records = 0;
  for (const auto& w : db.workloads())
    for (const auto& r : db.records(w.exact_key)) reuse_records += r.policy == "reuse";
  EXPECT_GE(reuse_records, measured / 2);  // a schedule carried to both convs is one record per workload
  EXPECT_GT(s.default_latency_s, 0);
  ASSERT_GE(s.evaluations.size(), 1u);
  EXPECT_LE(s.evaluations.size(), 3u);
  for (size_t k = 0; k < s.evaluations.size(); k++) {
    const FullEvaluation& e = s.evaluations[k];
    EXPECT_EQ(e.index, static_cast<int>(k));
    EXPECT_GT(e.latency_s, 0);
    EXPECT_GT(e.default_s, 0);
    if (e.kept) {  // kept only when the changed steps ran faster in the model, by the margin
      EXPECT_EQ(e.best_s, e.latency_s);
      EXPECT_LE(e.steps_s * kConfirmMargin, e.best_steps_s);
    }
    if (k > 0) EXPECT_GT(e.best_steps_s, 0) << "one workload's steps are timed in both models";
  }
  EXPECT_EQ(phases.front(), "standalone");
  EXPECT_NE(std::find(phases.begin(), phases.end(), "full"), phases.end());
  // run and compile use exactly the choices the re-measurement against the default confirmed.
  std::vector<std::string> warnings;
  const auto used = best_schedules(partition_graph(target), db, warnings);
  const Partition part = partition_graph(target);
  for (size_t i = 0; i < s.workloads.size(); i++) {
    auto it = used.find(part.workloads[i].exact_key);
    if (s.workloads[i].confirmed) {
      ASSERT_NE(it, used.end()) << s.workloads[i].name;
      EXPECT_EQ(it->second.hash(), s.workloads[i].chosen);
    } else {  // the default was kept, or the choice was not confirmed
      EXPECT_EQ(it, used.end()) << s.workloads[i].name << " runs an unconfirmed schedule";
    }
  }
  EXPECT_NE(donor_table(s).find("donor_net"), std::string::npos);
  EXPECT_EQ(reuse_json(s)["evaluations"].size(), s.evaluations.size());
  // At its end, the default against what run --db runs now, as tune ends a search.
  EXPECT_GT(s.e2e_default_s, 0);
  EXPECT_GT(s.e2e_reused_s, 0);
  EXPECT_DOUBLE_EQ(reuse_json(s)["speedup"].get<double>(), s.e2e_default_s / s.e2e_reused_s);

  // A rerun measures no carried schedule again (only its choices against the default).
  auto count_reuse = [&] {
    int n = 0;
    for (const auto& w : db.workloads())
      for (const auto& r : db.records(w.exact_key)) n += r.policy != kConfirmPolicy;
    return n;
  };
  const int before = count_reuse();
  reuse_tune(target, db, quick({donor}, 0));
  EXPECT_EQ(count_reuse(), before);
}

// A donor's model kept the network variant of its 2048 -> 512 1x1 conv (a pair written by hand,
// as tune's network phase records it): the target's conv of the class, of other sizes, tries its
// own variant in its model, and the trial, timed there, is the pair that decides what runs.
TEST(Reuse, TriesTheNetworkVariantADonorsModelKeptAndRecordsTheTrialAsThePairThatDecides) {
  LoadOptions lo;
  lo.threads = 1;
  auto chain = [&](const std::string& name, int64_t in, int64_t mid) {
    std::filesystem::create_directories(test::temp_dir() / name);
    return load_model(test::save_conv_chain(name + "/model.onnx", in, mid, 512, 7, 7, 1), lo);
  };
  auto variant_of = [](const Workload& w) {
    return RuleSketch(lower_workload(w).outputs, host_code_target()).network_variant();
  };
  auto walk_of = [](const Workload& w) {  // the rule's schedule with the network variant's knobs
    const RuleSketch space(lower_workload(w).outputs, host_code_target());
    return space.schedule(*space.network_variant());
  };
  const Graph donor_g = chain("walk_donor", 64, 2048), target_g = chain("walk_target", 32, 1024);
  const Partition donor_part = partition_graph(donor_g), target_part = partition_graph(target_g);
  const Workload* donor_w = nullptr;
  const Workload* target_w = nullptr;
  for (const auto& w : donor_part.workloads)
    if (w.name == "Conv+Relu" && variant_of(w)) donor_w = &w;
  for (const auto& w : target_part.workloads)
    if (w.name == "Conv+Relu" && variant_of(w)) target_w = &w;
  if (!donor_w || !target_w) GTEST_SKIP() << "the rule prefetches none of these convs on this host (no variant)";
  ASSERT_EQ(donor_w->class_key, target_w->class_key);
  ASSERT_NE(donor_w->exact_key, target_w->exact_key);

  const std::string donor = (test::temp_dir() / "walk_donor.db").string();
  std::filesystem::remove(donor);
  {
    RecordsDB d(donor);
    record_model(d, donor_g, donor_part);
    Record def = test::measured_record(*donor_w, default_schedule_of(*donor_w), 1.0e-3);
    Record walk = test::measured_record(*donor_w, walk_of(*donor_w), 0.85e-3);
    def.policy = walk.policy = kNetworkConfirmPolicy;
    def.threads = walk.threads = 1;
    d.add({def, walk});
  }
  const std::string target = (test::temp_dir() / "walk_target.db").string();
  std::filesystem::remove(target);
  RecordsDB db(target);
  ReuseOptions o = quick({donor}, 4);
  o.e2e_threads = 1;
  o.measure.threads = 1;
  const ReuseSummary s = reuse_tune(target_g, db, o);
  ASSERT_EQ(s.donors.size(), 1u);
  EXPECT_TRUE(s.donors[0].chosen) << "the model's decision is what the donor earned";
  EXPECT_GT(s.donors[0].score, 0);
  const auto w = std::find_if(s.workloads.begin(), s.workloads.end(),
                              [&](const ReuseWorkload& x) { return x.key_hash == target_w->key_hash(); });
  ASSERT_NE(w, s.workloads.end());
  EXPECT_EQ(w->measured, 0) << "alone the variant measures as its default: not measured";
  const auto e = std::find_if(s.evaluations.begin(), s.evaluations.end(),
                              [&](const FullEvaluation& x) { return x.workload == target_w->name; });
  ASSERT_NE(e, s.evaluations.end()) << "the variant was tried in the model";
  EXPECT_TRUE(e->network_variant);
  EXPECT_GT(e->steps_s, 0);
  std::vector<Record> pair;
  for (const auto& r : db.records(target_w->exact_key))
    if (r.policy == kNetworkConfirmPolicy) pair.push_back(r);
  ASSERT_EQ(pair.size(), 2u);
  const std::string variant = walk_of(*target_w).hash();
  EXPECT_EQ(pair[0].schedule_hash, default_schedule_of(*target_w).hash());
  EXPECT_EQ(pair[1].schedule_hash, variant);
  EXPECT_EQ(pair[1].threads, 1);
  const auto conf = latest_confirmation(db, target_w->exact_key, 1);
  ASSERT_TRUE(conf.has_value());
  EXPECT_EQ(conf->faster(), e->kept);
  EXPECT_EQ(w->chosen, e->kept ? variant : "");
  EXPECT_EQ(w->confirmed, e->kept);
  std::vector<std::string> warnings;
  EXPECT_EQ(best_schedules(target_part, db, warnings, 1).count(target_w->exact_key), e->kept ? 1u : 0u);

  // The model decided for the variant (a pair written by hand): a rerun without evaluations keeps
  // it as what runs and says so; nothing confirms it alone, where it would measure as the default.
  Record def = test::measured_record(*target_w, default_schedule_of(*target_w), 1.0e-3);
  Record walk = test::measured_record(*target_w, walk_of(*target_w), 0.8e-3);
  def.policy = walk.policy = kNetworkConfirmPolicy;
  def.threads = walk.threads = 1;
  db.add({def, walk});
  const ReuseSummary again = reuse_tune(target_g, db, quick({donor}, 0));
  const auto w2 = std::find_if(again.workloads.begin(), again.workloads.end(),
                               [&](const ReuseWorkload& x) { return x.key_hash == target_w->key_hash(); });
  ASSERT_NE(w2, again.workloads.end());
  EXPECT_EQ(w2->chosen, variant);
  EXPECT_TRUE(w2->confirmed);
  EXPECT_EQ(best_schedules(target_part, db, warnings, 1).at(target_w->exact_key).hash(), variant);
  EXPECT_EQ(latest_confirmation(db, target_w->exact_key, 1)->candidate.policy, kNetworkConfirmPolicy);
}

// A 1x1 conv of x (16 channels, hw x hw), then `epilogue`: "relu" (Conv+Relu) or "residual" (Conv
// + Add(x) + Relu), then global average pooling. Saved as <name>/model.onnx.
std::string pointwise_net(const std::string& name, int64_t hw, const std::string& epilogue) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {1, 16, hw, hw})
      .initializer("w", rand_f32({16, 16, 1, 1}, 3))
      .node("Conv", {"x", "w"}, {"c"});
  if (epilogue == "residual") b.node("Add", {"c", "x"}, {"s"}).node("Relu", {"s"}, {"r"});
  else b.node("Relu", {"c"}, {"r"});
  b.node("GlobalAveragePool", {"r"}, {"y"}).output("y");
  std::filesystem::create_directories(test::temp_dir() / name);
  return b.save(name + "/model.onnx");
}

// The weaker across-class reuse: a donor's Conv+Relu earned a knob recipe of the default rule,
// below four faster stage-by-stage schedules; the target's Conv+Add+Relu (another class over the
// same conv) tries the recipe, measured alone and recorded, never the stage schedules, whose
// stages it lacks, nor a recipe slower than the donor's default. The donor shares no tuned class
// with the target, only the anchor: `auto` takes it by its anchor score across classes, and with
// across_classes off takes nothing.
TEST(Reuse, CarriesKnobRecipesAcrossClassesThatShareTheAnchor) {
  const Graph donor_g = test::import_model(pointwise_net("xc_donor", 14, "relu"));
  const Graph target_g = test::import_model(pointwise_net("xc_target", 10, "residual"));
  const Partition donor_part = partition_graph(donor_g), target_part = partition_graph(target_g);
  auto conv_of = [](const Partition& p) {
    auto it = std::find_if(p.workloads.begin(), p.workloads.end(),
                           [](const Workload& w) { return w.name.rfind("Conv", 0) == 0; });
    return it == p.workloads.end() ? nullptr : &*it;
  };
  const Workload* donor_w = conv_of(donor_part);
  const Workload* target_w = conv_of(target_part);
  ASSERT_TRUE(donor_w && target_w);
  ASSERT_EQ(target_w->name, "Conv+Add+Relu");
  ASSERT_NE(donor_w->class_key, target_w->class_key);
  ASSERT_EQ(class_anchor(donor_w->class_key), class_anchor(target_w->class_key));

  const std::string donor = (test::temp_dir() / "xc_donor.db").string();
  std::filesystem::remove(donor);
  DefaultKnobs knobs;
  knobs.columns = 4;
  // The donor's variant is its own rule's data; on the target the knobs make the target's.
  const Schedule recipe = test::rule_variant(*donor_w, knobs);
  const Schedule carried = RuleSketch(lower_workload(*target_w).outputs, host_code_target()).schedule(knobs);
  ASSERT_FALSE(is_rule_default(carried)) << "columns=4 changes the target's tile";
  {
    RecordsDB d(donor);
    record_model(d, donor_g, donor_part);
    // Four stage schedules faster than the recipe (more than the records a class reads), and a
    // recipe slower than the default (not earned).
    std::mt19937_64 rng(7);
    const ScheduleSpace space(build_pipeline_view(lower_workload(*donor_w).outputs));
    std::vector<Record> records{test::measured_record(*donor_w, default_schedule_of(*donor_w), 1.0e-3),
                                test::measured_record(*donor_w, recipe, 0.8e-3)};
    for (int k = 0; k < 4; k++) records.push_back(test::measured_record(*donor_w, space.sample(rng), (0.6 + 0.04 * k) * 1e-3));
    DefaultKnobs slower;
    slower.columns = 2;
    records.push_back(test::measured_record(*donor_w, test::rule_variant(*donor_w, slower), 1.2e-3));
    d.add(records);
  }
  auto target_of = [&](const ReuseSummary& s) {
    return std::find_if(s.workloads.begin(), s.workloads.end(),
                        [&](const ReuseWorkload& w) { return w.key_hash == target_w->key_hash(); });
  };
  for (bool across : {false, true}) {
    const std::string target = (test::temp_dir() / fmt::format("xc_target_{}.db", across)).string();
    std::filesystem::remove(target);
    RecordsDB db(target);
    ReuseOptions o = quick({donor}, 1);
    o.donor = "auto";
    o.across_classes = across;
    const ReuseSummary s = reuse_tune(target_g, db, o);
    ASSERT_EQ(s.donors.size(), 1u);
    EXPECT_EQ(s.donors[0].score, 0) << "no tuned workload of a class the target holds";
    EXPECT_GT(s.donors[0].anchor_score, 0);
    EXPECT_EQ(s.donors[0].chosen, across);
    EXPECT_EQ(s.donors[0].per_anchor.size(), 1u) << "the target's Conv+Add+Relu class only";
    EXPECT_EQ(reuse_json(s)["donors"][0]["anchor_score"], s.donors[0].anchor_score);
    const auto w = target_of(s);
    ASSERT_NE(w, s.workloads.end());
    EXPECT_TRUE(w->error.empty()) << w->error;
    bool recorded = false;
    for (const auto& r : db.records(target_w->exact_key)) recorded |= r.schedule_hash == carried.hash() && r.policy == "reuse";
    if (!across) {
      EXPECT_EQ(w->donor_schedules, 0);
      EXPECT_EQ(w->across_class, 0);
      EXPECT_FALSE(recorded);
      continue;
    }
    EXPECT_EQ(w->donor_schedules, 1) << "the earned recipe only: not the stage schedules, not the slower recipe";
    EXPECT_EQ(w->across_class, 1);
    EXPECT_EQ(w->refused, 0);
    EXPECT_EQ(w->measured, 1);
    EXPECT_TRUE(recorded) << "measured alone on the target and recorded";
    EXPECT_EQ(reuse_json(s)["workloads"][static_cast<size_t>(w - s.workloads.begin())]["across_class"], 1);
  }
}

TEST(Reuse, NamesTheDonorsWhenTheOneAskedForIsMissingAndNeverReusesItself) {
  const std::string donor = tuned_donor("lender_net", 8, 10);
  const Graph target = test::import_model(conv_net("lender_net", 8, 10));  // the same model
  RecordsDB db((test::temp_dir() / "self.db").string());
  ReuseOptions o = quick({donor}, 0);
  o.donor = "no_such_model";
  EXPECT_TRUE(test::throws_naming<Error>([&] { reuse_tune(target, db, o); }, {"no such model"}));
  o.donor = "auto";
  ReuseSummary s = reuse_tune(target, db, o);
  EXPECT_TRUE(s.donors.empty());  // its own records are not a donor
  for (const auto& w : s.workloads) EXPECT_EQ(w.measured, 0);
  EXPECT_THROW(reuse_tune(target, db, quick({(test::temp_dir() / "missing.db").string()}, 0)), Error);
}

}  // namespace
}  // namespace ts
