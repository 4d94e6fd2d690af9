#include "tune/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "analysis/pipeline_view.h"
#include "features/features.h"
#include "graph/error.h"
#include "graph/workload.h"
#include "measure/time_stats.h"
#include "runtime/compiled_model.h"
#include "measure/workload_compiler.h"
#include "schedule/autoscheduler.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Record make_record(const Workload& w, const Schedule& s, const MeasureResult& m, const std::string& policy,
                   const FeatureExtractor* fx = nullptr) {
  Record r;
  // Features let later runs (transfer, `costmodel eval`) learn from this record without the
  // workload's pipeline. A recipe has no stage decisions, hence no features.
  if (fx && !s.autoscheduler) {
    try {
      r.features = fx->flat(s);
      r.features_version = kFeaturesVersion;
    } catch (const Error&) {
      r.features.clear();
    }
  }
  r.workload = workload_entry(w);
  r.schedule_json = s.to_json();
  r.schedule_hash = s.hash();
  r.times = m.times;
  r.error_kind = m.error_kind;
  r.error_message = m.error_message;
  r.policy = policy;
  return r;
}

// One workload being tuned.
struct Task {
  const Workload* w = nullptr;
  std::unique_ptr<ScheduleSpace> space;   // built from the unscheduled pipeline
  std::unique_ptr<Measurer> measurer;     // holds the reference outputs
  std::unique_ptr<FeatureExtractor> features;  // stored with each record
  double default_s = 0;                   // default median
  double weight = 0;                      // count x default time
  TaskSummary summary;
};


// Re-measures the task's fastest record against the default (Measurer::remeasure_against_default)
// and records both as kConfirmPolicy, unless the default is the fastest already. True when it
// re-measured.
bool confirm_winner(Task& t, RecordsDB& db, const Schedule& def, int rounds, const std::atomic<bool>* stop) {
  if (rounds <= 0 || !t.measurer) return false;
  auto best = db.best(t.w->exact_key, 1);
  if (best.empty() || best[0].schedule_hash == def.hash()) return false;
  Schedule winner;
  try {
    winner = Schedule::from_json(best[0].schedule_json);
  } catch (const Error&) {
    return false;  // best_schedules skips it with a warning
  }
  Measurer::Remeasurement rm = t.measurer->remeasure_against_default(winner, rounds);
  if (stop && stop->load()) return false;
  db.add({make_record(*t.w, def, rm.default_result, kConfirmPolicy),
          make_record(*t.w, winner, rm.candidate, kConfirmPolicy, t.features.get())});
  return true;
}

}  // namespace

nlohmann::json summary_json(const TuneSummary& s) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const auto& t : s.tasks)
    tasks.push_back({{"key", t.key_hash}, {"name", t.name}, {"count", t.count}, {"default_ms", t.default_s * 1e3},
                     {"best_ms", t.best_s * 1e3}, {"best_policy", t.best_policy}, {"trials", t.trials},
                     {"measured_now", t.measured_now}, {"errors", t.errors}, {"error", t.error},
                     {"confirmed", t.confirmed}, {"faster", t.faster}, {"default_noise", t.default_noise},
                     {"best_noise", t.best_noise}, {"exhausted", t.exhausted}});
  return {{"policy", s.policy},
          {"tasks", tasks},
          {"measured_now", s.measured_now},
          {"seconds", s.seconds},
          {"tuned_workloads", s.tuned_workloads},
          {"e2e_default_ms", s.e2e_default_s * 1e3},
          {"e2e_tuned_ms", s.e2e_tuned_s * 1e3},
          {"speedup", s.e2e_tuned_s > 0 ? s.e2e_default_s / s.e2e_tuned_s : 0},
          {"stopped", s.stopped}};
}

std::optional<Confirmation> latest_confirmation(const RecordsDB& db, const std::string& exact_key) {
  const std::string def = default_schedule_recipe().hash();
  std::optional<Record> d, c;
  for (const auto& r : db.records(exact_key)) {  // oldest first: the last pair wins
    if (r.policy != kConfirmPolicy) continue;
    if (r.schedule_hash == def) d = r;
    else c = r;
  }
  if (!d || !c) return std::nullopt;
  return Confirmation{*d, *c};
}

Schedule default_schedule_recipe() {
  Schedule s;
  s.autoscheduler = AutoschedulerRecipe{kDefaultRecipeName, {}};
  return s;
}

TuneSummary tune_model(const Graph& g, RecordsDB& db, SearchPolicy& policy, const TuneOptions& opts,
                       const std::function<void(const TuneProgress&)>& progress) {
  const auto t0 = Clock::now();
  if (opts.trials <= 0 && opts.seconds <= 0) throw Error("tune: give a budget (trials per task or seconds)");
  TuneSummary sum;
  sum.policy = policy.name();
  const Partition part = partition_graph(g);
  for (const auto& key : opts.only) {
    const bool known = std::any_of(part.workloads.begin(), part.workloads.end(),
                                   [&](const Workload& w) { return w.key_hash() == key; });
    if (!known)
      throw Error(fmt::format("{}: tune: no workload has key '{}' (`tensorsched workloads` lists them)", g.path, key));
  }
  const Schedule def = default_schedule_recipe();
  SpaceOptions sopts;
  sopts.vector_bytes = native_vector_bytes(Halide::get_host_target());
  sopts.sampling = opts.sampling;
  const int jobs = opts.measure.compile_jobs > 0 ? opts.measure.compile_jobs
                                                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t batch = opts.batch > 0 ? opts.batch : std::max(2, jobs);

  // Every task's default first: the reference of its checks and the weights of a time budget.
  std::vector<Task> tasks(part.workloads.size());
  auto stopped = [&] { return opts.stop && opts.stop->load(); };
  for (size_t i = 0; i < tasks.size(); i++) {
    Task& t = tasks[i];
    t.w = &part.workloads[i];
    t.summary.key_hash = t.w->key_hash();
    t.summary.name = t.w->name;
    t.summary.count = t.w->count;
    if (!opts.only.empty() && !opts.only.count(t.w->key_hash())) {
      t.summary.error = "not selected";
      continue;
    }
    if (stopped()) {
      t.summary.error = "stopped";
      continue;
    }
    try {
      LoweredWorkload lw = lower_workload(*t.w);
      t.space = std::make_unique<ScheduleSpace>(build_pipeline_view(lw.outputs), space_options_for(*t.w, sopts));
      t.features = std::make_unique<FeatureExtractor>(*t.space);
      t.measurer = std::make_unique<Measurer>(*t.w, opts.measure);
      if (stopped()) throw Error("stopped");  // its reference may have been cut short
      const MeasureResult& ref = t.measurer->reference();
      if (!ref.valid()) throw Error(fmt::format("default schedule: {}: {}", ref.error_kind, ref.error_message));
      t.default_s = ref.median;
      db.add_if_absent(make_record(*t.w, def, ref, "default"));
      // Candidates much slower than the default are not worth their run time.
      t.measurer->set_run_timeout(std::max(2.0,
                                           opts.slow_factor * ref.median * (opts.measure.repeats + opts.measure.warmup) + 1.0));
    } catch (const Error& e) {
      t.summary.error = e.what();
      t.measurer.reset();
    }
    t.weight = t.w->count * t.default_s;
  }
  double total_weight = 0;
  for (const auto& t : tasks) total_weight += t.weight;
  // The end-to-end comparison after the loop is inside a time budget too: 2 models x (warm-ups +
  // iterations) at the default's latency, plus loading their cached code.
  const double e2e_reserve = opts.e2e_iters > 0 ? 2.0 * (opts.e2e_iters + 2) * total_weight + 1.0 : 0.0;

  // Tasks in order of weight: with a time budget the heaviest get theirs first.
  std::vector<size_t> order(tasks.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tasks[a].weight > tasks[b].weight; });
  const double setup_s = since(t0);
  double carry = 0;  // unused time of earlier tasks
  double confirm_s = 0;  // how long the last confirmation took: reserved at the end of each share
  size_t done_tasks = 0;
  for (size_t i : order) {
    Task& t = tasks[i];
    done_tasks++;
    if (!t.measurer) continue;
    const std::string& key = t.w->exact_key;
    SearchTask st{t.w, t.space.get(), [&](const std::string& h) { return db.has(key, h); }};
    std::mt19937_64 rng(opts.seed ^ std::hash<std::string>{}(key));
    auto count_trials = [&] {
      int n = 0;
      for (const auto& r : db.records(key)) n += r.policy == policy.name();
      return n;
    };
    int trials = count_trials();
    {
      // Earlier measurements of the workload (any run, any policy) teach a learning policy.
      std::vector<Schedule> seen;
      std::vector<MeasureResult> seen_results;
      for (const auto& r : db.records(key)) {
        try {
          seen.push_back(Schedule::from_json(r.schedule_json));
        } catch (const Error&) {
          continue;
        }
        MeasureResult m;
        m.times = r.times;
        m.median = r.median;
        m.min = r.min;
        m.noise = r.noise;
        m.error_kind = r.error_kind;
        m.error_message = r.error_message;
        seen_results.push_back(std::move(m));
      }
      if (!seen.empty()) policy.observe(st, seen, seen_results);
    }
    const auto task_t0 = Clock::now();
    const double share =
        opts.trials > 0 ? 0 : (opts.seconds - setup_s - e2e_reserve) * t.weight / std::max(1e-12, total_weight) + carry;
    double batch_s = 0;  // the last batch's duration: a batch that would end past the share is not started
    auto report = [&] {
      if (!progress) return;
      TuneProgress p;
      p.task = done_tasks;
      p.tasks = tasks.size();
      p.task_name = t.w->name;
      p.trials = trials;
      p.target = opts.trials;
      auto best = db.best(key, 1);
      p.best_s = best.empty() ? 0 : best[0].median;
      p.default_s = t.default_s;
      const double elapsed = since(t0);
      if (opts.trials > 0) {
        // Remaining trials of this and later tasks at this run's pace.
        const double per_trial = sum.measured_now > 0 ? (elapsed - setup_s) / sum.measured_now : 1.0;
        size_t later = tasks.size() - done_tasks;
        p.eta_s = per_trial * (std::max(0, opts.trials - trials) + static_cast<double>(later) * opts.trials);
      } else {
        p.eta_s = std::max(0.0, opts.seconds - elapsed);
      }
      progress(p);
    };
    report();
    while (!stopped()) {
      if (opts.trials > 0 && trials >= opts.trials) break;
      if (opts.trials <= 0 && since(task_t0) + batch_s + confirm_s >= share) break;
      const auto batch_t0 = Clock::now();
      size_t n = batch;
      if (opts.trials > 0) n = std::min<size_t>(n, opts.trials - trials);
      std::vector<Schedule> proposals = policy.propose(st, n, rng);
      if (proposals.empty()) {  // the policy has nothing new for this task
        t.summary.exhausted = true;
        break;
      }
      std::vector<MeasureResult> results = t.measurer->measure_batch(proposals);
      if (stopped()) break;  // its workers were interrupted too: their results are not measurements
      std::vector<Record> batch_records;
      for (size_t k = 0; k < proposals.size(); k++)
        batch_records.push_back(make_record(*t.w, proposals[k], results[k], policy.name(), t.features.get()));
      db.add(batch_records);
      policy.observe(st, proposals, results);
      trials += static_cast<int>(proposals.size());
      batch_s = since(batch_t0);
      t.summary.measured_now += static_cast<int>(proposals.size());
      sum.measured_now += static_cast<int>(proposals.size());
      report();
    }
    if (!stopped()) {
      const auto confirm_t0 = Clock::now();
      if (confirm_winner(t, db, def, opts.confirm_rounds, opts.stop)) confirm_s = since(confirm_t0);
    }
    // Time over the share (a long last batch, the re-measurement) is owed by the later tasks.
    if (opts.trials <= 0) carry = share - since(task_t0);
    t.measurer.reset();  // its reference outputs are no longer needed
  }
  sum.seconds = since(t0);
  sum.stopped = stopped();

  // Summary from the database (earlier runs included).
  for (auto& t : tasks) {
    TaskSummary& ts = t.summary;
    ts.default_s = t.default_s;
    for (const auto& r : db.records(t.w->exact_key))
      if (r.policy == policy.name()) {
        ts.trials++;
        if (!r.valid()) ts.errors[r.error_kind]++;
      }
    auto best = db.best(t.w->exact_key, 1);
    if (auto c = latest_confirmation(db, t.w->exact_key)) {
      ts.confirmed = true;
      ts.faster = c->faster();
      ts.default_s = c->default_record.median;
      ts.default_noise = time_stats(c->default_record.times).spread;
      const Record& used = ts.faster ? c->candidate : c->default_record;
      ts.best_s = used.median;
      ts.best_noise = time_stats(used.times).spread;
      ts.best_policy = ts.faster && !best.empty() ? best[0].policy : "default";
      sum.tuned_workloads += ts.faster;
    } else if (!best.empty()) {
      ts.best_s = best[0].median;
      ts.best_noise = time_stats(best[0].times).spread;
      ts.best_policy = best[0].policy;
      if (best[0].schedule_hash != def.hash()) sum.tuned_workloads++;
    }
    sum.tasks.push_back(ts);
  }

  // End to end, in this process and run: default schedules vs the best record per workload,
  // run alternately so that both see the same machine state.
  if (opts.e2e_iters > 0 && !sum.stopped) {
    CompileOptions dopts, topts;
    dopts.cache_root = topts.cache_root = opts.measure.cache_root;
    std::vector<std::string> warnings;
    topts.schedules = best_schedules(part, db, warnings);
    CompiledModel dm(g, dopts), tm(g, topts);
    if (opts.e2e_threads > 0) {
      dm.set_threads(opts.e2e_threads);
      tm.set_threads(opts.e2e_threads);
    }
    const auto inputs = random_inputs(g, 1);
    for (int k = 0; k < 2; k++) {  // warm-up
      dm.run(inputs);
      tm.run(inputs);
    }
    std::vector<double> dt, tt;
    for (int k = 0; k < opts.e2e_iters; k++) {
      auto a = Clock::now();
      dm.run(inputs);
      dt.push_back(since(a));
      a = Clock::now();
      tm.run(inputs);
      tt.push_back(since(a));
    }
    sum.e2e_default_s = time_stats(dt).median;
    sum.e2e_tuned_s = time_stats(tt).median;
  }
  return sum;
}

std::vector<CostSample> transfer_samples(const RecordsDB& db, const std::string& exclude_key) {
  std::vector<CostSample> out;
  for (const auto& w : db.workloads()) {
    if (w.exact_key == exclude_key) continue;
    const auto records = db.records(w.exact_key);
    double worst = 0;
    for (const auto& r : records)
      if (r.valid() && r.features_version == kFeaturesVersion && !r.features.empty()) worst = std::max(worst, r.median);
    if (worst <= 0) continue;
    // Failures rank below every valid schedule of their workload (a rank loss compares within one).
    for (const auto& r : records)
      if (r.features_version == kFeaturesVersion && !r.features.empty())
        out.push_back({w.key_hash, r.features, r.valid() ? r.median : 2 * worst});
  }
  return out;
}

std::map<std::string, Schedule> best_schedules(const Partition& part, const RecordsDB& db, std::vector<std::string>& warnings) {
  std::map<std::string, Schedule> out;
  int64_t foreign = 0;
  for (const auto& w : part.workloads) {
    if (!db.allows_foreign()) foreign += db.foreign_count(w.exact_key);
    std::vector<Record> best;
    if (auto c = latest_confirmation(db, w.exact_key)) {
      if (c->faster()) best.push_back(c->candidate);
    } else {
      best = db.best(w.exact_key, 1);
    }
    if (best.empty()) continue;
    try {
      Schedule s = Schedule::from_json(best[0].schedule_json);
      // The default's record: the workload runs the default code, and is not counted as tuned.
      if (s.autoscheduler && s.autoscheduler->name == kDefaultRecipeName) continue;
      out.emplace(w.exact_key, std::move(s));
    } catch (const Error& e) {
      warnings.push_back(fmt::format("{}: record {} of workload {} ({}): {}", db.path(), best[0].id, w.key_hash(), w.name,
                                     e.what()));
    }
  }
  if (foreign > 0)
    warnings.push_back(fmt::format("{}: {} records of this model's workloads were measured on another machine or by "
                                   "another build and are not used (--allow-foreign-records uses them)",
                                   db.path(), foreign));
  return out;
}

}  // namespace ts
