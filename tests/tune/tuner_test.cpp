// The tuning loop with real measurements and a real SQLite file: injected crashes, hangs and
// wrong answers become records of their kind while tuning goes on; a rerun resumes without
// measuring anything twice; `tensorsched tune` killed with SIGKILL keeps every committed record.
#include "tune/tuner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "analysis/pipeline_view.h"
#include "measure/workload_compiler.h"
#include "features/features.h"
#include "schedule/rule_sketch.h"
#include "search/gbt_sa_search.h"
#include "search/random_search.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

// Proposes a fixed list, in order, skipping what was measured.
class FixedPolicy : public SearchPolicy {
 public:
  explicit FixedPolicy(std::vector<Schedule> s) : schedules_(std::move(s)) {}
  std::string name() const override { return "fixed"; }
  std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64&) override {
    std::vector<Schedule> out;
    for (const auto& s : schedules_)
      if (out.size() < n && !task.measured(s.hash())) out.push_back(s);
    return out;
  }

 private:
  std::vector<Schedule> schedules_;
};

TuneOptions quick_options(const std::string& cache) {
  TuneOptions o;
  o.measure.repeats = 2;
  o.measure.cache_root = cache;
  o.e2e_iters = 2;
  return o;
}

TEST(Tuner, AWinnerIsUsedOnlyWhenARemeasurementAgainstTheDefaultConfirmsIt) {
  const Workload w = test::matmul_relu_workload();
  Partition part;
  part.workloads.push_back(w);
  RecordsDB db((test::temp_dir() / "confirm.db").string());
  const Schedule def = default_schedule_of(w);
  const Schedule lucky = test::matmul_relu_schedule(w, 8, false);
  db.add(test::measured_record(w, def, 2e-3));
  db.add(test::measured_record(w, lucky, 1e-3));  // measured once, under a lucky moment
  std::vector<std::string> warnings;
  EXPECT_EQ(best_schedules(part, db, warnings).count(w.exact_key), 1u);  // nothing re-measured yet: the fastest

  auto confirm = [&](double default_s, double candidate_s) {
    Record d = test::measured_record(w, def, default_s), c = test::measured_record(w, lucky, candidate_s);
    d.policy = c.policy = kConfirmPolicy;
    db.add({d, c});
  };
  confirm(2e-3, 2.5e-3);  // re-measured: slower than the default
  ASSERT_TRUE(latest_confirmation(db, w.exact_key).has_value());
  EXPECT_FALSE(latest_confirmation(db, w.exact_key)->faster());
  EXPECT_TRUE(best_schedules(part, db, warnings).empty());  // the default runs
  confirm(2e-3, 1.5e-3);  // a later re-measurement confirms it
  EXPECT_EQ(best_schedules(part, db, warnings).at(w.exact_key).hash(), lucky.hash());
  EXPECT_TRUE(warnings.empty());
  // A decision to keep the default (tuning reuse's full phase): the default re-measured against
  // itself, even where that copy happened to run faster.
  Record d1 = test::measured_record(w, def, 2e-3), d2 = test::measured_record(w, def, 1.9e-3);
  d1.policy = d2.policy = kConfirmPolicy;
  db.add({d1, d2});
  ASSERT_TRUE(latest_confirmation(db, w.exact_key).has_value());
  EXPECT_EQ(latest_confirmation(db, w.exact_key)->candidate.schedule_hash, def.hash());
  EXPECT_FALSE(latest_confirmation(db, w.exact_key)->faster());
  EXPECT_TRUE(best_schedules(part, db, warnings).empty());
  confirm(2e-3, 1.5e-3);
  EXPECT_EQ(best_schedules(part, db, warnings).count(w.exact_key), 1u);

  // A real tune re-measures its winner, with its own thread count and with 1: the summary and
  // the records say so.
  RecordsDB fresh((test::temp_dir() / "confirm2.db").string());
  FixedPolicy policy({test::matmul_relu_schedule(w, 8, true), lucky});
  TuneOptions o = quick_options((test::temp_dir() / "cache").string());
  o.trials = 2;
  o.confirm_rounds = 2;
  o.measure.threads = 2;
  TuneSummary s = tune_model(test::import_model(test::save_matmul_relu_model()), fresh, policy, o);
  ASSERT_EQ(s.tasks.size(), 1u);
  const TaskSummary& t = s.tasks[0];
  auto c = latest_confirmation(fresh, w.exact_key, 2);
  // The schedules the tuning measured faster than the default (at most confirm_candidates).
  double default_s = 0;
  std::vector<Record> tuned;
  for (const Record& r : fresh.records(w.exact_key)) {
    if (r.policy != kConfirmPolicy) EXPECT_EQ(r.threads, 2) << r.policy;  // the search ran on 2
    if (r.policy == "default") default_s = r.median;
    if (r.policy == "fixed" && r.valid()) tuned.push_back(r);
  }
  const auto faster_than_default =
      std::count_if(tuned.begin(), tuned.end(), [&](const Record& r) { return r.median < default_s; });
  if (t.confirmed) {
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->candidate.times.size(), 4u);  // 2 rounds x 2 repeats
    EXPECT_EQ(c->candidate.threads, 2);
    EXPECT_EQ(t.default_s, c->default_record.median);
    EXPECT_EQ(t.faster, c->faster());
    EXPECT_EQ(s.tuned_workloads, t.faster ? 1 : 0);
    // Per thread count each of them was re-measured, the one that gained the most there last;
    // when it was chosen from several and won by the margin, once more (that pair is used).
    for (int threads : {2, 1}) {
      std::vector<Record> pairs;
      for (const Record& r : fresh.records(w.exact_key))
        if (r.policy == kConfirmPolicy && r.threads == threads) pairs.push_back(r);
      const size_t selection = 2u * faster_than_default;
      ASSERT_GE(pairs.size(), selection) << threads << " threads";
      double best_gain = 0;
      auto gain = [](const Record& d, const Record& c) { return std::min(d.median / c.median, d.min / c.min); };
      for (size_t i = 0; i + 1 < selection; i += 2) best_gain = std::max(best_gain, gain(pairs[i], pairs[i + 1]));
      EXPECT_DOUBLE_EQ(gain(pairs[selection - 2], pairs[selection - 1]), best_gain);
      const bool again = faster_than_default > 1 && best_gain >= kConfirmMargin;
      ASSERT_EQ(pairs.size(), selection + (again ? 2 : 0)) << threads << " threads";
      auto ct = latest_confirmation(fresh, w.exact_key, threads);
      ASSERT_TRUE(ct.has_value());
      EXPECT_EQ(ct->candidate.threads, threads);
      EXPECT_EQ(ct->candidate.schedule_hash, pairs[selection - 1].schedule_hash);
      EXPECT_EQ(ct->candidate.id, pairs.back().id);
      EXPECT_EQ(ct->faster(), gain(ct->default_record, ct->candidate) >= kConfirmMargin);
    }
  } else {
    EXPECT_FALSE(c.has_value());  // only when the default itself measured fastest
    EXPECT_EQ(faster_than_default, 0);
  }
}

// A schedule can beat the default on 2 threads and lose on 1: run and compile read the
// re-measurement made with their thread count; one without it falls back to the latest of any.
TEST(Tuner, EachThreadCountUsesItsOwnConfirmation) {
  const Workload w = test::matmul_relu_workload();
  Partition part;
  part.workloads.push_back(w);
  RecordsDB db((test::temp_dir() / "confirm_threads.db").string());
  const Schedule def = default_schedule_of(w), cand = test::matmul_relu_schedule(w, 8, false);
  auto confirm = [&](int threads, double default_s, double candidate_s) {
    Record d = test::measured_record(w, def, default_s), c = test::measured_record(w, cand, candidate_s);
    d.policy = c.policy = kConfirmPolicy;
    d.threads = c.threads = threads;
    db.add({d, c});
  };
  confirm(2, 1.0e-3, 0.7e-3);  // faster on 2 threads
  confirm(1, 1.8e-3, 2.2e-3);  // slower on 1
  std::vector<std::string> warnings;
  EXPECT_EQ(best_schedules(part, db, warnings, 2).count(w.exact_key), 1u);
  EXPECT_TRUE(best_schedules(part, db, warnings, 1).empty());
  EXPECT_TRUE(used_record(db, w.exact_key, 2).has_value());
  EXPECT_FALSE(used_record(db, w.exact_key, 1).has_value());
  // No re-measurement with 4 threads: the latest (the 1-thread one) decides.
  EXPECT_TRUE(best_schedules(part, db, warnings, 4).empty());
  EXPECT_EQ(latest_confirmation(db, w.exact_key, 4)->candidate.threads, 1);
  EXPECT_TRUE(warnings.empty());
}

// A re-measurement counts as a win only when the candidate's median and fastest run both beat
// the default's by kConfirmMargin: a default whose median a disturbed round inflated is not
// beaten, nor one the candidate beats by less than noise.
TEST(Tuner, AConfirmationNeedsTheMedianAndTheFastestRunFaster) {
  const Workload w = test::matmul_relu_workload();
  RecordsDB db((test::temp_dir() / "confirm_min.db").string());
  const Schedule def = default_schedule_of(w), cand = test::matmul_relu_schedule(w, 8, false);
  auto confirm = [&](std::vector<double> default_times, std::vector<double> candidate_times) {
    Record d = test::measured_record(w, def, 1), c = test::measured_record(w, cand, 1);
    d.times = std::move(default_times);
    c.times = std::move(candidate_times);
    d.policy = c.policy = kConfirmPolicy;
    db.add({d, c});
    return latest_confirmation(db, w.exact_key);
  };
  auto c = confirm({1.0e-3, 3e-3, 3e-3}, {1.2e-3, 2e-3, 2e-3});  // median faster, fastest run slower
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->faster());
  c = confirm({1.3e-3, 3e-3, 3e-3}, {1.2e-3, 2e-3, 2e-3});
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->faster());
  c = confirm({1.01e-3, 2.02e-3, 2.02e-3}, {1e-3, 2e-3, 2e-3});  // 1% faster by both: noise
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->faster());
}

TEST(Tuner, InjectedFaultsAreRecordedAndTuningContinues) {
  const auto dir = test::temp_dir();
  Graph g = test::import_model(test::save_matmul_relu_model());
  Workload w = partition_graph(g).workloads.at(0);
  ScheduleSpace space(build_pipeline_view(lower_workload(w).outputs));
  std::mt19937_64 rng(3);
  std::vector<Schedule> s;
  while (s.size() < 4) {
    Schedule x = space.sample(rng);
    if (std::none_of(s.begin(), s.end(), [&](const Schedule& y) { return y.hash() == x.hash(); })) s.push_back(x);
  }
  TuneOptions o = quick_options((dir / "cache").string());
  o.trials = 4;
  o.measure.faults = {{s[0].hash(), InjectedFault::Segfault},
                      {s[1].hash(), InjectedFault::Hang},
                      {s[2].hash(), InjectedFault::WrongValues}};
  RecordsDB db((dir / "records.db").string());
  FixedPolicy policy(s);
  TuneSummary sum = tune_model(g, db, policy, o);
  ASSERT_EQ(sum.tasks.size(), 1u);
  EXPECT_EQ(sum.measured_now, 4);
  std::map<std::string, std::string> kind;  // hash -> error kind
  for (const auto& r : db.records(w.exact_key)) kind[r.schedule_hash] = r.error_kind;
  EXPECT_EQ(kind.size(), 5u);  // the default and the four
  EXPECT_EQ(kind.at(default_schedule_of(w).hash()), "");
  EXPECT_EQ(kind.at(s[0].hash()), "crash");
  EXPECT_EQ(kind.at(s[1].hash()), "timeout");
  EXPECT_EQ(kind.at(s[2].hash()), "wrong_answer");
  EXPECT_EQ(kind.at(s[3].hash()), "");
  EXPECT_EQ(sum.tasks[0].errors.at("crash"), 1);
  // Every measured schedule carries its features (errors included), the default rule's too.
  for (const auto& r : db.records(w.exact_key)) {
    EXPECT_EQ(r.features_version, kFeaturesVersion) << r.schedule_json;
    EXPECT_EQ(r.features.size(), flat_feature_names().size()) << r.schedule_json;
  }
  EXPECT_GT(sum.tasks[0].default_s, 0);
  EXPECT_GT(sum.e2e_default_s, 0);
  EXPECT_GT(sum.e2e_tuned_s, 0);
}

// AutoTVM's loop with real compiles and runs: distinct valid schedules, records with features
// that transfer_samples() offers to other workloads (and not to their own).
TEST(Tuner, GbtSaTunesWithRealMeasurements) {
  const auto dir = test::temp_dir();
  Graph g = test::import_model(test::save_matmul_relu_model());
  const Workload w = partition_graph(g).workloads.at(0);
  RecordsDB db((dir / "records.db").string());
  TuneOptions o = quick_options((dir / "cache").string());
  o.e2e_iters = 0;
  o.trials = 10;
  GbtSaOptions go;
  go.plan_size = 4;
  go.min_samples = 4;
  go.chains = 16;
  go.steps = 20;
  auto policy = make_policy("gbt-sa", go);
  TuneSummary sum = tune_model(g, db, *policy, o);
  EXPECT_EQ(sum.measured_now, 10);
  EXPECT_EQ(sum.tasks.at(0).trials, 10);
  std::set<std::string> hashes;
  int valid = 0, featured = 0;
  for (const auto& r : db.records(w.exact_key)) {
    if (r.policy == kConfirmPolicy) continue;  // a winner's re-measurement against the default
    EXPECT_TRUE(hashes.insert(r.schedule_hash).second) << "measured twice";
    if (r.policy != "gbt-sa") continue;
    valid += r.valid();
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message << "\n" << r.schedule_json;
    // The default rule's variants (a share of each batch) are data with features like the rest.
    EXPECT_EQ(r.features.size(), flat_feature_names().size()) << r.schedule_json;
    featured++;
  }
  EXPECT_EQ(valid, 10);
  EXPECT_GT(featured, 0);
  const auto own = transfer_samples(db, w.exact_key);
  EXPECT_TRUE(own.empty());
  const auto others = transfer_samples(db, "another workload");
  ASSERT_EQ(others.size(), static_cast<size_t>(featured) + 1) << "and the default's record";
  for (const auto& c : others) {
    EXPECT_EQ(c.group, w.key_hash());
    EXPECT_GT(c.seconds, 0);
  }
}

TEST(Tuner, RerunResumesWithoutMeasuringTwice) {
  const auto dir = test::temp_dir();
  Graph g = test::import_model(test::save_matmul_relu_model());
  const std::string key = partition_graph(g).workloads.at(0).exact_key;
  RecordsDB db((dir / "records.db").string());
  TuneOptions o = quick_options((dir / "cache").string());
  o.e2e_iters = 0;
  o.seed = 5;
  o.trials = 3;
  RandomSearch random;
  EXPECT_EQ(tune_model(g, db, random, o).measured_now, 3);
  // A winner's re-measurements against the default (policy "confirm") repeat two hashes on purpose.
  auto measured = [&] {
    std::vector<Record> out;
    for (auto& r : db.records(key))
      if (r.policy != kConfirmPolicy) out.push_back(r);
    return out;
  };
  const auto first = measured();
  o.trials = 5;
  TuneSummary again = tune_model(g, db, random, o);
  EXPECT_EQ(again.measured_now, 2);
  EXPECT_EQ(again.tasks.at(0).trials, 5);
  const auto all = measured();
  ASSERT_EQ(all.size(), first.size() + 2);
  std::set<std::string> hashes;
  for (const auto& r : all) EXPECT_TRUE(hashes.insert(r.schedule_hash).second) << "measured twice: " << r.schedule_hash;
  for (size_t k = 0; k < first.size(); k++) EXPECT_EQ(all[k].id, first[k].id);
  EXPECT_EQ(tune_model(g, db, random, o).measured_now, 0);  // nothing left to do
}

// A policy with nothing new to propose ends its task early, and the summary says why.
// A time budget holds when candidates are slow: a 43 GFLOP conv whose random candidates take
// seconds to compile and up to seconds a run. Batches that cannot fit are cut (not recorded),
// sure losers are timed once, and the end-to-end comparison runs what the budget still holds.
TEST(Tuner, ATimeBudgetHoldsWhenCandidatesAreSlow) {
  const auto dir = test::temp_dir();
  test::OnnxBuilder m(13);
  m.input("x", DType::Float32, {1, 128, 384, 384})
      .initializer("w", test::rand_f32({128, 128, 3, 3}, 7))
      .node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  Graph g = test::import_model(m.save("slow_conv.onnx"));
  RecordsDB db((dir / "records.db").string());
  TuneOptions o;
  o.measure.cache_root = (dir / "cache").string();
  o.measure.threads = 1;
  o.seconds = 20;
  RandomSearch policy;
  const auto t0 = std::chrono::steady_clock::now();
  TuneSummary s = tune_model(g, db, policy, o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LE(wall, 1.1 * o.seconds) << "measured " << s.measured_now << " schedules";
  EXPECT_GT(s.e2e_iters, 0);
  // Every record is a measurement or an error of the schedule: nothing cut was recorded.
  for (const auto& w : db.workloads())
    for (const Record& r : db.records(w.exact_key)) EXPECT_TRUE(!r.valid() || !r.times.empty()) << r.policy;
}

TEST(Tuner, AnExhaustedSpaceIsReportedNotSilent) {
  const auto dir = test::temp_dir();
  Graph g = test::import_model(test::save_matmul_relu_model());
  RecordsDB db((dir / "records.db").string());
  TuneOptions o = quick_options((dir / "cache").string());
  o.e2e_iters = 0;
  o.trials = 5;
  FixedPolicy nothing({});
  TuneSummary s = tune_model(g, db, nothing, o);
  ASSERT_EQ(s.tasks.size(), 1u);
  EXPECT_TRUE(s.tasks[0].exhausted);
  EXPECT_EQ(s.tasks[0].trials, 0);
  EXPECT_TRUE(summary_json(s)["tasks"][0]["exhausted"].get<bool>());
  EXPECT_EQ(db.count(), 1);  // the default only
}

// A slot-based scheduler over a model's tasks: the trial budget (per task, in total) is spent
// across tasks, the estimated model latency after every slot never rises, and a rerun resumes.
TEST(Tuner, DynaTuneSpendsTheTrialBudgetAcrossTasks) {
  const auto dir = test::temp_dir();
  Graph g = test::small_cnn();
  RecordsDB db((dir / "records.db").string());
  TuneOptions o = quick_options((dir / "cache").string());
  o.e2e_iters = 0;
  o.trials = 2;
  o.scheduler = "dynatune";
  o.seed = 4;
  RandomSearch random;
  TuneSummary s = tune_model(g, db, random, o);
  const size_t tasks = s.tasks.size();
  ASSERT_GE(tasks, 4u);
  EXPECT_LE(s.measured_now, static_cast<int>(2 * tasks));
  EXPECT_GT(s.measured_now, 0);
  int slotted = 0;
  for (const auto& t : s.tasks) slotted += t.slots > 0;
  EXPECT_GE(slotted, 2);
  ASSERT_GE(s.curve.size(), 2u);
  for (size_t k = 1; k < s.curve.size(); k++) {
    EXPECT_LE(s.curve[k].latency_s, s.curve[k - 1].latency_s * (1 + 1e-9));
    EXPECT_GE(s.curve[k].seconds, s.curve[k - 1].seconds);
  }
  auto j = summary_json(s);
  EXPECT_EQ(j["scheduler"], "dynatune");
  EXPECT_EQ(j["curve"].size(), s.curve.size());
  EXPECT_LT(s.scheduler_seconds, 0.02 * s.seconds + 0.5);
  // A rerun with the same budget spends only what is left of it (trials x tasks in total).
  const int left = static_cast<int>(2 * tasks) - s.measured_now;
  EXPECT_LE(tune_model(g, db, random, o).measured_now, std::max(0, left));
}

TEST(Tuner, KilledTuneKeepsEveryCommittedRecordAndResumes) {
  const auto dir = test::temp_dir();
  const std::string model = test::save_matmul_relu_model(), db_path = (dir / "records.db").string();
  auto tune = [&](int trials) {
    pid_t pid = fork();
    if (pid == 0) {
      const std::string t = std::to_string(trials), cache = (dir / "cache").string();
      freopen("/dev/null", "w", stdout);
      execl(TENSORSCHED_BINARY, TENSORSCHED_BINARY, "tune", model.c_str(), "--db", db_path.c_str(), "--trials", t.c_str(),
            "--repeats", "1", "--e2e-iters", "0", "--seed", "9", "--cache-dir", cache.c_str(), "--scheduler", "dynatune",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    return pid;
  };
  pid_t pid = tune(60);
  // Kill it once a few records are committed.
  int64_t seen = 0;
  for (int k = 0; k < 1200 && seen < 4; k++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = RecordsDB(db_path).count();
  }
  ASSERT_GE(seen, 4) << "tune committed too few records in 120 s";
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  std::vector<Record> before;
  {
    RecordsDB db(db_path);
    for (const auto& w : db.workloads())
      for (const auto& r : db.records(w.exact_key)) before.push_back(r);
  }
  ASSERT_GE(before.size(), 4u);
  // Resume with a target the killed run had nearly reached: only the rest is measured.
  const int target = static_cast<int>(before.size()) + 1;  // (records include the default)
  pid = tune(target);
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  RecordsDB db(db_path);
  std::vector<Record> after;
  for (const auto& w : db.workloads())
    for (const auto& r : db.records(w.exact_key)) after.push_back(r);
  ASSERT_GE(after.size(), before.size());
  for (size_t k = 0; k < before.size(); k++) {
    EXPECT_EQ(after[k].id, before[k].id);
    EXPECT_EQ(after[k].schedule_hash, before[k].schedule_hash);
  }
  std::set<std::string> hashes;
  int random_records = 0;
  for (const auto& r : after) {
    if (r.policy == kConfirmPolicy) continue;  // re-measurements of a winner, by design
    EXPECT_TRUE(hashes.insert(r.schedule_hash).second) << "measured twice: " << r.schedule_hash;
    random_records += r.policy == "random";
  }
  EXPECT_EQ(random_records, target);
}

TEST(Tuner, CtrlCStopsAfterTheBatchRecordingNothingInterrupted) {
  const auto dir = test::temp_dir();
  const std::string model = test::save_matmul_relu_model(), db_path = (dir / "stop.db").string();
  const std::string out_path = (dir / "stop.out").string();
  pid_t pid = fork();
  if (pid == 0) {
    const std::string cache = (dir / "cache").string();
    freopen(out_path.c_str(), "w", stdout);
    dup2(fileno(stdout), STDERR_FILENO);
    execl(TENSORSCHED_BINARY, TENSORSCHED_BINARY, "tune", model.c_str(), "--db", db_path.c_str(), "--trials", "200",
          "--repeats", "1", "--e2e-iters", "0", "--cache-dir", cache.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int64_t seen = 0;
  for (int k = 0; k < 1200 && seen < 3; k++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    seen = RecordsDB(db_path).count();
  }
  ASSERT_GE(seen, 3) << "tune committed too few records in 120 s";
  kill(pid, SIGINT);  // as Ctrl-C would (the workers of this process group are not signalled here)
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  std::ifstream f(out_path);
  const std::string out((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(out.find("tune stopped by Ctrl-C after"), std::string::npos) << out;
  EXPECT_NE(out.find("run the same command again to resume"), std::string::npos) << out;
  RecordsDB db(db_path);
  EXPECT_LT(db.count(), 200);
  for (const auto& w : db.workloads())
    for (const auto& r : db.records(w.exact_key)) EXPECT_NE(r.error_kind, "crash") << r.error_message;
}

}  // namespace
}  // namespace ts
