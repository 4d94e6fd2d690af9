#include "tune/tuner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <tuple>

#include "analysis/pipeline_view.h"
#include "features/features.h"
#include "graph/error.h"
#include "graph/workload.h"
#include "measure/time_stats.h"
#include "runtime/compiled_model.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"
#include "schedule/rule_sketch.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;


// Records a re-measurement: the default's record, then the candidate's, in one transaction.
void record_confirmation(Task& t, RecordsDB& db, const Schedule& s, const Measurer::Remeasurement& rm) {
  db.add({make_record(*t.w, t.measurer->default_schedule(), rm.default_result, kConfirmPolicy, t.features.get()),
          make_record(*t.w, s, rm.candidate, kConfirmPolicy, t.features.get())});
}

// The thread counts winners are re-measured at: the tuning's own first, then the others asked
// for (none: 1 as well), each once.
std::vector<int> confirm_thread_counts(const TuneOptions& opts) {
  std::vector<int> out = {effective_threads(opts.measure.threads)};
  const std::vector<int> more = opts.confirm_threads.empty() ? std::vector<int>{1} : opts.confirm_threads;
  for (int n : more)
    if (n > 0 && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

// Re-measures the task's fastest records (up to `candidates`, distinct, faster than the default)
// against the default, and keeps the one that beat it by the most there. With single noisy
// measurements the fastest record is often a lucky draw of a schedule no better than the
// default, while the second or third is really faster. The best of several re-measurements is
// itself a lucky draw, so a chosen candidate that won by kConfirmMargin is re-measured once more
// and that fresh pair decides. This is done at every thread count of confirm_thread_counts: a
// schedule tuned on 2 threads can lose to the default on 1 (ResNet-18's 14x14 Winograd convs),
// and `run --threads N` reads the pair measured with N. Per thread count the chosen pair is
// recorded last (latest_confirmation reads the last pair). True when it re-measured.
bool confirm_winner(Task& t, RecordsDB& db, const TuneOptions& opts) {
  if (opts.confirm_rounds <= 0 || !t.measurer) return false;
  const size_t wanted = static_cast<size_t>(std::max(1, opts.confirm_candidates));
  const int tuned_threads = effective_threads(opts.measure.threads);
  std::vector<Schedule> winners;
  // One more than wanted: the default may be among them.
  for (const Record& r : db.best(t.w->exact_key, wanted + 1, tuned_threads)) {
    if (is_default_record(r) || winners.size() == wanted) break;  // past the default: slower
    try {
      winners.push_back(Schedule::from_json(r.schedule_json));
    } catch (const Error&) {
      continue;  // best_schedules skips it with a warning
    }
  }
  if (winners.empty()) return false;
  // The smaller of the median's and the fastest run's gains (Confirmation::faster needs both).
  auto gain = [](const Measurer::Remeasurement& rm) {
    if (!rm.candidate.valid() || !rm.default_result.valid() || rm.candidate.min <= 0) return 0.0;
    return std::min(rm.default_result.median / rm.candidate.median, rm.default_result.min / rm.candidate.min);
  };
  for (int threads : confirm_thread_counts(opts)) {
    t.measurer->set_threads(threads);
    std::vector<Measurer::Remeasurement> rms;
    for (const Schedule& w : winners) {
      rms.push_back(t.measurer->remeasure_against_default(w, opts.confirm_rounds));
      if (opts.stop && opts.stop->load()) return false;
    }
    size_t chosen = 0;
    for (size_t i = 1; i < rms.size(); i++)
      if (gain(rms[i]) > gain(rms[chosen])) chosen = i;
    for (size_t i = 0; i < rms.size(); i++)
      if (i != chosen) record_confirmation(t, db, winners[i], rms[i]);
    record_confirmation(t, db, winners[chosen], rms[chosen]);
    if (rms.size() > 1 && gain(rms[chosen]) >= kConfirmMargin) {
      const Measurer::Remeasurement fresh = t.measurer->remeasure_against_default(winners[chosen], opts.confirm_rounds);
      if (opts.stop && opts.stop->load()) return false;
      record_confirmation(t, db, winners[chosen], fresh);
    }
  }
  t.measurer->set_threads(opts.measure.threads);
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
                     {"best_noise", t.best_noise}, {"exhausted", t.exhausted}, {"slots", t.slots},
                     {"tuning_seconds", t.seconds}});
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& c : s.curve) curve.push_back({c.seconds, c.latency_s * 1e3});
  return {{"policy", s.policy},
          {"scheduler", s.scheduler},
          {"scheduler_seconds", s.scheduler_seconds},
          {"curve", curve},
          {"tasks", tasks},
          {"measured_now", s.measured_now},
          {"seconds", s.seconds},
          {"tuned_workloads", s.tuned_workloads},
          {"e2e_default_ms", s.e2e_default_s * 1e3},
          {"e2e_tuned_ms", s.e2e_tuned_s * 1e3},
          {"speedup", s.e2e_tuned_s > 0 ? s.e2e_default_s / s.e2e_tuned_s : 0},
          {"stopped", s.stopped},
          {"network", network_trials_json(s.network)}};
}

std::optional<Confirmation> latest_confirmation(const RecordsDB& db, const std::string& exact_key, int threads) {
  // confirm_schedule adds a pair in one transaction, the default's record first; the candidate
  // may be the default itself (a decision to keep it). The last whole pair measured with
  // `threads` wins, else the last of any thread count.
  std::optional<Record> pending;
  std::optional<Confirmation> last, last_any;
  for (const auto& r : db.records(exact_key)) {  // oldest first
    if (!is_confirmation_policy(r.policy)) continue;
    if (!pending || pending->policy != r.policy) {  // a pair is of one kind
      pending.reset();
      if (is_default_record(r)) pending = r;
      continue;
    }
    last_any = Confirmation{*pending, r};
    if (threads <= 0 || r.threads == threads) last = last_any;
    pending.reset();
  }
  return last ? last : last_any;
}

bool confirm_schedule(Task& t, RecordsDB& db, const Schedule& winner, int rounds, const std::atomic<bool>* stop) {
  if (rounds <= 0 || !t.measurer) return false;
  Measurer::Remeasurement rm = t.measurer->remeasure_against_default(winner, rounds);
  if (stop && stop->load()) return false;
  record_confirmation(t, db, winner, rm);
  return true;
}

bool is_default_record(const Record& r) {
  try {
    return is_rule_default(Schedule::from_json(r.schedule_json));
  } catch (const Error&) {
    return false;  // a newer format: not this build's default
  }
}

namespace {

// What the loop keeps per task beside the Task: the policy's view of it and its proposal generator.
struct TaskRun {
  SearchTask search;
  std::mt19937_64 rng;
  bool taught = false;  // the policy has seen the database's records of the task
  double batch_s = 0;   // the last batch's duration (a batch that would end past its slot is not started)
  double candidate_s = 0;  // the last batch's seconds per candidate (compile share + runs)
};

// Seconds one more candidate of `t` is expected to take: the last batch's rate, or before any,
// a compile and the default's warm-up and repeats.
double candidate_estimate(const Task& t, const TaskRun& run, const TuneOptions& opts) {
  if (run.candidate_s > 0) return run.candidate_s;
  return 1.0 + (opts.measure.warmup + opts.measure.repeats) * t.default_s;
}

// The machine's peak FLOP/s as the schedulers normalize curves with: float32 lanes x 2 (FMA) x 2
// (pipes) x 3 GHz x cores. An estimate: only dynatune's prior (throughput below peak) reads it.
double estimated_peak_flops() {
  const int lanes = std::max(4, Halide::get_host_target().natural_vector_size(Halide::Float(32)));
  return lanes * 2.0 * 2.0 * 3e9 * std::max(1u, std::thread::hardware_concurrency());
}

double model_latency(const std::vector<Task>& tasks) {
  double s = 0;
  for (const Task& t : tasks) s += t.latency_s();
  return s;
}

// A task per workload, with its default measured (and recorded once, with policy "default"): the
// reference of every check, the baseline of the summary and the weight of a time budget.

// Teaches a learning policy every earlier measurement of the task (any run, any policy), but
// times measured in the network: they are not the standalone times it learns.
void teach(SearchPolicy& policy, const SearchTask& st, const RecordsDB& db) {
  std::vector<Schedule> seen;
  std::vector<MeasureResult> seen_results;
  for (const auto& r : db.records(st.workload->exact_key)) {
    if (r.policy == kNetworkConfirmPolicy) continue;
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

// One slot of a task: batches of proposals, each measured, committed, then observed by the
// policy, until the slot's trials or seconds are spent, the policy has nothing new (the task is
// then exhausted and finished) or the run is stopped. Returns how many schedules it measured.
int run_slot(Task& t, TaskRun& run, const Slot& slot, SearchPolicy& policy, RecordsDB& db, size_t batch,
             const TuneOptions& opts, Clock::time_point deadline, const std::function<void()>& report) {
  if (!run.taught) {
    teach(policy, run.search, db);
    run.taught = true;
  }
  const auto slot_t0 = Clock::now();
  int measured = 0;
  while (!(opts.stop && opts.stop->load())) {
    if (slot.trials > 0 && measured >= slot.trials) break;
    if (slot.trials <= 0 && seconds_since(slot_t0) + run.batch_s >= slot.seconds && measured > 0) break;
    size_t n = batch;
    if (slot.trials > 0) n = std::min<size_t>(n, static_cast<size_t>(slot.trials - measured));
    if (slot.trials <= 0) {
      // A time budget holds only the candidates that fit before its deadline.
      const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      const double each = candidate_estimate(t, run, opts);
      const size_t fit = left > 0 ? static_cast<size_t>(left / each) : 0;
      if (fit == 0) {
        spdlog::info("tune: {} ({}): a candidate takes about {:.1f} s and {:.1f} s of the budget are left: its slot ends",
                     t.w->name, t.w->key_hash(), each, std::max(0.0, left));
        break;
      }
      n = std::min(n, fit);
    }
    const auto batch_t0 = Clock::now();
    if (slot.trials <= 0) run.search.deadline = deadline;
    std::vector<Schedule> proposals = policy.propose(run.search, n, run.rng);
    if (proposals.empty()) {  // the policy has nothing new for this task
      t.summary.exhausted = true;
      t.finished = true;
      break;
    }
    const double limit_s =
        slot.trials > 0 ? 0.0 : std::max(1e-3, std::chrono::duration<double>(deadline - Clock::now()).count());
    std::vector<MeasureResult> results = t.measurer->measure_batch(proposals, limit_s);
    if (opts.stop && opts.stop->load()) break;  // its workers were interrupted too: not measurements
    // Candidates the budget's end cut off are not measurements: neither recorded nor observed.
    const size_t proposed = proposals.size();
    for (size_t k = proposals.size(); k-- > 0;)
      if (results[k].cut) {
        proposals.erase(proposals.begin() + static_cast<std::ptrdiff_t>(k));
        results.erase(results.begin() + static_cast<std::ptrdiff_t>(k));
      }
    if (proposals.size() < proposed)
      spdlog::info("tune: {} ({}): the budget ended during a batch: {} of its {} candidates not measured", t.w->name,
                   t.w->key_hash(), proposed - proposals.size(), proposed);
    std::vector<Record> records;
    for (size_t k = 0; k < proposals.size(); k++)
      records.push_back(make_record(*t.w, proposals[k], results[k], policy.name(), t.features.get()));
    db.add(records);
    policy.observe(run.search, proposals, results);
    for (const auto& r : results)
      if (r.valid()) t.best_s = std::min(t.best_s, r.median);
    measured += static_cast<int>(proposals.size());
    t.trials += static_cast<int>(proposals.size());
    t.summary.measured_now += static_cast<int>(proposals.size());
    run.batch_s = seconds_since(batch_t0);
    run.candidate_s = run.batch_s / static_cast<double>(std::max<size_t>(1, proposals.size()));
    report();
    if (proposals.size() < proposed) break;
  }
  return measured;
}

// Seconds the re-measurements of the winners will take (tasks whose best beats the default):
// per candidate (and the chosen one's second re-measurement) and round two runs of warm-up +
// repeats in fresh workers.
double confirm_reserve(const std::vector<Task>& tasks, const TuneOptions& opts) {
  if (opts.confirm_rounds <= 0) return 0;
  // A run on n threads takes up to tuned/n times as long as on the tuning's.
  const int tuned = effective_threads(opts.measure.threads);
  double slowdown = 0;
  for (int n : confirm_thread_counts(opts)) slowdown += std::max(1.0, double(tuned) / n);
  double s = 0;
  for (const Task& t : tasks)
    if (t.measurer && t.best_s < t.default_s)
      s += (std::max(1, opts.confirm_candidates) + 1) * opts.confirm_rounds *
           (0.5 + 2.0 * (opts.measure.repeats + opts.measure.warmup + 1) * t.default_s * slowdown);
  return s;
}

// Per task what the database holds after the run (earlier runs included): trials and errors of
// the policy, and the time the model will run (the confirmed winner, else the default).
void summarize_tasks(std::vector<Task>& tasks, const RecordsDB& db, const SearchPolicy& policy, const TuneOptions& opts,
                     TuneSummary& sum) {
  const int threads = effective_threads(opts.measure.threads);
  for (auto& t : tasks) {
    TaskSummary& ts = t.summary;
    ts.default_s = t.default_s;
    for (const auto& r : db.records(t.w->exact_key))
      if (r.policy == policy.name()) {
        ts.trials++;
        if (!r.valid()) ts.errors[r.error_kind]++;
      }
    auto best = db.best(t.w->exact_key, 1, threads);
    if (auto c = latest_confirmation(db, t.w->exact_key, threads)) {
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
      if (!is_default_record(best[0])) sum.tuned_workloads++;
    }
    sum.tasks.push_back(ts);
  }
}

// The workloads whose default has a variant only the whole model can judge (network_refine.h).
std::vector<NetworkCandidate> network_candidates(const std::vector<Task>& tasks) {
  std::vector<NetworkCandidate> out;
  for (const Task& t : tasks) {
    const RuleSketch* rule = t.space ? t.space->rule_sketch() : nullptr;
    if (!t.summary.error.empty() || !rule) continue;
    if (std::optional<DefaultKnobs> k = rule->network_variant())
      out.push_back({t.w, rule->schedule(*k), static_cast<double>(t.count) * rule->weight_bytes()});
  }
  return out;
}

NetworkRefineOptions network_options(const TuneOptions& opts) {
  NetworkRefineOptions n;
  n.evals = opts.network_evals;
  n.threads = confirm_thread_counts(opts);
  n.cache_root = opts.measure.cache_root;
  n.stop = opts.stop;
  return n;
}

}  // namespace

Record make_record(const Workload& w, const Schedule& s, const MeasureResult& m, const std::string& policy,
                   const FeatureExtractor* fx) {
  Record r;
  // Features let later runs (transfer, `costmodel eval`) learn from this record without the
  // workload's pipeline. An autoscheduler recipe has no stage decisions, hence no features.
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
  r.threads = m.threads;
  return r;
}

std::vector<Task> make_tasks(const Partition& part, RecordsDB& db, const std::string& policy, const TuneOptions& opts) {
  SpaceOptions sopts;
  sopts.vector_bytes = native_vector_bytes(Halide::get_host_target());
  sopts.sampling = opts.sampling;
  std::vector<Task> tasks(part.workloads.size());
  for (size_t i = 0; i < tasks.size(); i++) {
    Task& t = tasks[i];
    t.w = &part.workloads[i];
    t.count = t.w->count;
    t.flops = static_cast<double>(t.w->flops);
    t.summary.key_hash = t.w->key_hash();
    t.summary.name = t.w->name;
    t.summary.count = t.w->count;
    if (!opts.only.empty() && !opts.only.count(t.w->key_hash())) {
      t.summary.error = "not selected";
      continue;
    }
    if (opts.stop && opts.stop->load()) {
      t.summary.error = "stopped";
      continue;
    }
    try {
      LoweredWorkload lw = lower_workload(*t.w);
      t.space = std::make_unique<ScheduleSpace>(lw.outputs, host_code_target(), space_options_for(*t.w, sopts));
      t.features = std::make_unique<FeatureExtractor>(*t.space);
      t.measurer = opts.make_measurer ? opts.make_measurer(*t.w, opts.measure) : std::make_unique<Measurer>(*t.w, opts.measure);
      if (opts.stop && opts.stop->load()) throw Error("stopped");  // its reference may have been cut short
      const MeasureResult& ref = t.measurer->reference();
      if (!ref.valid()) throw Error(fmt::format("default schedule: {}: {}", ref.error_kind, ref.error_message));
      t.default_s = ref.median;
      db.add_if_absent(make_record(*t.w, t.measurer->default_schedule(), ref, "default", t.features.get()));
      // Candidates much slower than the default are not worth their run time.
      // A candidate's first timed run past loser_factor x the default ends its repeats; the run
      // timeout stops one past slow_factor x in its warm-up and that run.
      t.measurer->set_loser_time(opts.loser_factor * ref.median);
      t.measurer->set_run_timeout(std::max(
          2.0, ref.median * std::max(opts.loser_factor * (opts.measure.repeats + opts.measure.warmup), 2 * opts.slow_factor) +
                   1.0));
      auto best = db.best(t.w->exact_key, 1);
      t.best_s = best.empty() ? t.default_s : std::min(t.default_s, best[0].median);
      for (const auto& r : db.records(t.w->exact_key)) t.trials += r.policy == policy;
      t.curve.push_back({0, t.best_s});
    } catch (const Error& e) {
      t.summary.error = e.what();
      t.measurer.reset();
    }
  }
  return tasks;
}

std::string model_name(const std::string& path) {
  const std::filesystem::path p(path);
  const std::string stem = p.stem().string();
  const std::string folder = p.parent_path().filename().string();
  return stem == "model" && !folder.empty() ? folder : stem;
}

void record_model(RecordsDB& db, const Graph& g, const Partition& part) {
  std::vector<ModelWorkload> held;
  for (const auto& w : part.workloads) held.push_back({"", workload_entry(w), w.count});
  if (!held.empty()) db.set_model(model_name(g.path), held);
}

TuneSummary tune_model(const Graph& g, RecordsDB& db, SearchPolicy& policy, const TuneOptions& opts,
                       const std::function<void(const TuneProgress&)>& progress) {
  const auto t0 = Clock::now();
  if (opts.trials <= 0 && opts.seconds <= 0) throw Error("tune: give a budget (trials per task or seconds)");
  TuneSummary sum;
  sum.policy = policy.name();
  sum.scheduler = opts.scheduler;
  const Partition part = partition_graph(g);
  for (const auto& key : opts.only) {
    if (!find_workload(part, key))
      throw Error(fmt::format("{}: tune: no workload has key '{}' (`tensorsched workloads --threads N` lists them for "
                              "the threads tuned with: which 3x3 convs run as Winograd depends on them)",
                              g.path, key));
  }
  record_model(db, g, part);
  const int jobs = opts.measure.compile_jobs > 0 ? opts.measure.compile_jobs
                                                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t batch = opts.batch > 0 ? opts.batch : std::max(2, jobs);
  auto stopped = [&] { return opts.stop && opts.stop->load(); };

  std::vector<Task> tasks = make_tasks(part, db, policy.name(), opts);
  std::vector<TaskRun> runs(tasks.size());
  size_t active = 0;
  int trials_left = 0;
  for (size_t i = 0; i < tasks.size(); i++) {
    const std::string key = tasks[i].w->exact_key;
    runs[i].search = SearchTask{tasks[i].w, tasks[i].space.get(), [&db, key](const std::string& h) { return db.has(key, h); }};
    runs[i].rng.seed(opts.seed ^ std::hash<std::string>{}(key));
    if (!tasks[i].active()) continue;
    active++;
    trials_left += opts.trials - tasks[i].trials;  // the budget is trials x tasks in total
  }
  trials_left = std::max(0, trials_left);
  // The end-to-end comparison after the loop is inside a time budget too: 2 models x (warm-ups +
  // iterations) at the default's latency, plus loading their cached code.
  double initial_latency = 0;
  for (const Task& t : tasks) initial_latency += t.count * t.default_s;
  // So are the in-network trials before it.
  const std::vector<NetworkCandidate> network = opts.network_evals > 0 ? network_candidates(tasks) : std::vector<NetworkCandidate>{};
  // At most a fifth of a time budget: no trial starts past it (the first ones have the most pages).
  NetworkRefineOptions network_opts = network_options(opts);
  if (opts.trials <= 0)
    network_opts.seconds = std::min(0.2 * opts.seconds, network_refine_reserve(network.size(), network_opts, initial_latency,
                                                                               effective_threads(opts.measure.threads)));
  const double e2e_reserve =
      (opts.e2e_iters > 0 ? 2.0 * (opts.e2e_iters + 2) * initial_latency + 1.0 : 0.0) + network_opts.seconds;

  SchedulerOptions so;
  so.trials_per_task = opts.trials;
  so.slot_trials = opts.slot_trials > 0 ? opts.slot_trials : static_cast<int>(batch);
  so.slot_seconds = opts.slot_seconds;
  if (opts.trials <= 0 && so.slot_seconds <= 0)
    so.slot_seconds = std::max(2.0, (opts.seconds - seconds_since(t0) - e2e_reserve) / (10.0 * std::max<size_t>(1, active)));
  // The peak of the cores the candidates run on.
  so.peak_flops = estimated_peak_flops() * effective_threads(opts.measure.threads) /
                  std::max(1u, std::thread::hardware_concurrency());
  so.seed = opts.seed;
  std::unique_ptr<TaskScheduler> scheduler = make_task_scheduler(opts.scheduler, so);

  sum.curve.push_back({seconds_since(t0), model_latency(tasks)});
  while (!stopped()) {
    BudgetLeft left;
    if (opts.trials > 0) {
      left.trials = trials_left;
      if (left.trials <= 0) break;
    } else {
      left.seconds = opts.seconds - seconds_since(t0) - e2e_reserve - confirm_reserve(tasks, opts);
      if (left.seconds <= 0) break;
    }
    const auto pick_t0 = Clock::now();
    std::optional<Slot> slot = scheduler->next(tasks, left);
    sum.scheduler_seconds += seconds_since(pick_t0);
    if (!slot) break;
    Task& t = tasks[slot->task];
    auto report = [&] {
      if (!progress) return;
      TuneProgress p;
      p.task = slot->task + 1;
      p.tasks = tasks.size();
      p.task_name = t.w->name;
      p.trials = t.trials;
      p.target = opts.trials;
      p.best_s = t.best_s;
      p.default_s = t.default_s;
      const double elapsed = seconds_since(t0);
      const double per_trial = sum.measured_now > 0 ? elapsed / sum.measured_now : 1.0;
      p.eta_s = opts.trials > 0 ? per_trial * trials_left : std::max(0.0, opts.seconds - elapsed);
      progress(p);
    };
    report();
    const auto slot_t0 = Clock::now();
    const auto deadline = opts.trials > 0 ? Clock::time_point::max()
                                          : Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                               std::chrono::duration<double>(left.seconds));
    const int measured = run_slot(t, runs[slot->task], *slot, policy, db, batch, opts, deadline, report);
    sum.measured_now += measured;
    trials_left -= measured;
    t.summary.slots++;
    t.summary.seconds += seconds_since(slot_t0);
    if (measured == 0) t.finished = true;  // nothing more will come of it
    t.curve.push_back({t.summary.measured_now, t.best_s});
    sum.curve.push_back({seconds_since(t0), model_latency(tasks)});
    const auto observe_t0 = Clock::now();
    scheduler->observe(tasks, *slot);
    sum.scheduler_seconds += seconds_since(observe_t0);
  }
  for (Task& t : tasks) {
    if (!stopped()) confirm_winner(t, db, opts);
    t.measurer.reset();  // its reference outputs are no longer needed
  }
  sum.seconds = seconds_since(t0);
  sum.stopped = stopped();
  summarize_tasks(tasks, db, policy, opts, sum);
  if (!network.empty() && !sum.stopped) {
    sum.network = refine_in_network(g, db, network, network_opts,
                                    [](const std::string& line) { spdlog::info("tune in the network: {}", line); });
    sum.stopped = stopped();
  }
  if (opts.e2e_iters > 0 && !sum.stopped) {
    int iters = opts.e2e_iters;
    if (opts.trials <= 0) {
      // Both versions alternate: as many runs as the budget still holds (at least 3 of each).
      const double left = opts.seconds - seconds_since(t0) - 1.0, per_iter = 2.0 * 1.5 * initial_latency;
      if (per_iter > 0 && iters * per_iter > left) {
        iters = std::max(3, static_cast<int>(left / per_iter));
        spdlog::info("tune: end to end: {} runs of each version fit the {:.1f} s left of the budget (not {})", iters,
                     std::max(0.0, left), opts.e2e_iters);
      }
    }
    std::tie(sum.e2e_default_s, sum.e2e_tuned_s) =
        end_to_end(g, part, db, opts.measure.cache_root, effective_threads(opts.e2e_threads), iters);
    sum.e2e_iters = iters;
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
    // A winner's re-measurement (policy "confirm") would count its schedule twice.
    for (const auto& r : records)
      if (r.features_version == kFeaturesVersion && !r.features.empty() && !is_confirmation_policy(r.policy))
        out.push_back({w.key_hash, r.features, r.valid() ? r.median : 2 * worst});
  }
  return out;
}

std::pair<double, double> end_to_end(const Graph& g, const Partition& part, const RecordsDB& db,
                                     const std::string& cache_root, int threads, int iters) {
  std::vector<std::string> warnings;
  // Halide's pool is process-wide: set for this comparison whatever ran before.
  const auto dm = compile_model_with(g, {}, cache_root, threads);
  const auto tm = compile_model_with(g, best_schedules(part, db, warnings, threads), cache_root, threads);
  const std::vector<double> t = time_alternately({dm.get(), tm.get()}, random_inputs(g, 1), iters);
  return {t[0], t[1]};
}

std::optional<Record> used_record(const RecordsDB& db, const std::string& exact_key, int threads) {
  std::optional<Record> used;
  if (auto c = latest_confirmation(db, exact_key, threads)) {
    if (c->faster()) used = c->candidate;
  } else if (auto best = db.best(exact_key, 1, threads); !best.empty()) {
    used = best[0];
  }
  // The default's record: the workload runs the default code, and is not counted as tuned.
  if (used && is_default_record(*used)) used.reset();
  return used;
}

std::map<std::string, Schedule> best_schedules(const Partition& part, const RecordsDB& db, std::vector<std::string>& warnings,
                                               int threads) {
  std::map<std::string, Schedule> out;
  int64_t foreign = 0;
  for (const auto& w : part.workloads) {
    if (!db.allows_foreign()) foreign += db.foreign_count(w.exact_key);
    const std::optional<Record> used = used_record(db, w.exact_key, threads);
    if (!used) continue;
    try {
      out.emplace(w.exact_key, Schedule::from_json(used->schedule_json));
    } catch (const Error& e) {
      warnings.push_back(fmt::format("{}: record {} of workload {} ({}): {}", db.path(), used->id, w.key_hash(), w.name,
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
