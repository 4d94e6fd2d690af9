#include "tune/network_refine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "measure/time_stats.h"
#include "measure/workload_code.h"
#include "measure/workload_compiler.h"
#include "runtime/compiled_model.h"
#include "schedule/default_schedule.h"
#include "tune/tuner.h"

namespace ts {

namespace {

// The steps of `m` that run one of the workloads `exact_keys`.
std::vector<size_t> steps_of(const CompiledModel& m, const std::set<std::string>& exact_keys) {
  std::vector<size_t> out;
  const Partition& p = m.partition();
  for (size_t i = 0; i < p.steps.size(); i++)
    if (exact_keys.count(p.workloads[p.steps[i].workload].exact_key)) out.push_back(i);
  return out;
}

// Why the trial model cannot be timed against the base: its variant did not compile (the
// default runs instead), its outputs differ from the base's, or it has no step of the workload;
// "" when it can.
std::string check_trial(const Graph& g, CompiledModel& base, CompiledModel& trial, const NetworkCandidate& c,
                        const std::map<std::string, Tensor>& inputs) {
  if (steps_of(trial, {c.w->exact_key}).empty()) return "the model has no step of this workload";
  if (!runs_schedule(trial, c.w->exact_key, c.variant.hash())) return "the variant did not compile (the default ran instead)";
  const std::vector<Tensor> want = base.run(inputs), got = trial.run(inputs);
  for (size_t k = 0; k < want.size(); k++) {
    // A variant changes prefetching only: the same arithmetic, so the same values.
    const Comparison cmp = compare_tensors(got[k], want[k], 1e-6, 0);
    if (!cmp.ok) return fmt::format("output '{}' differs from the base model's: {}", g.outputs[k], cmp.message);
  }
  return "";
}

bool stopped(const NetworkRefineOptions& opts) { return opts.stop && opts.stop->load(); }

// One candidate against `base` (which runs `schedules`) at `threads`; a kept variant becomes the
// base. `ran` turns true once a model has run (Halide's pool then holds the trial's count).
NetworkTrial try_candidate(const Graph& g, RecordsDB& db, const NetworkCandidate& c, int threads,
                           std::map<std::string, Schedule>& schedules, std::unique_ptr<CompiledModel>& base,
                           const std::map<std::string, Tensor>& inputs, const NetworkRefineOptions& opts, bool& ran) {
  NetworkTrial t;
  t.key_hash = c.w->key_hash();
  t.name = c.w->name;
  const std::optional<DefaultKnobs> knobs = rule_knobs(c.variant);
  t.variant = knobs ? nlohmann::json(knobs->params()).dump() : c.variant.hash();
  t.threads = threads;
  std::map<std::string, Schedule> with = schedules;
  with[c.w->exact_key] = c.variant;
  std::unique_ptr<CompiledModel> trial;
  std::vector<StepTimes> rt;
  const char* stage = "the model as it runs";
  try {
    if (!base) base = compile_model_with(g, schedules, opts.cache_root, threads);
    ran = true;  // compile_model_with set the pool's count
    stage = "the model with the variant";
    trial = compile_model_with(g, with, opts.cache_root, threads);
    stage = "running both";
    t.error = check_trial(g, *base, *trial, c, inputs);
    if (t.error.empty() && !stopped(opts))
      rt = time_steps_in_models({base.get(), trial.get()}, {c.w->exact_key}, inputs, opts.iters);
  } catch (const Error& e) {
    t.error = fmt::format("{}: {}", stage, e.what());
  }
  if (t.error.empty() && stopped(opts)) t.error = "stopped";
  if (!t.error.empty()) return t;
  record_network_pair(db, *c.w, c.variant, rt[0], rt[1], threads);
  const TimeStats base_st = time_stats(rt[0].steps), variant_st = time_stats(rt[1].steps);
  t.base_s = base_st.median;
  t.variant_s = variant_st.median;
  t.base_min_s = base_st.min;
  t.variant_min_s = variant_st.min;
  t.base_model_s = time_stats(rt[0].model).median;
  t.variant_model_s = time_stats(rt[1].model).median;
  t.kept = steps_faster(rt[0], rt[1]);
  if (t.kept) {
    schedules = std::move(with);
    base = std::move(trial);
  }
  return t;
}

// A record of workload `w` running `s` in the network (see record_network_pair).
Record network_record(const Workload& w, const Schedule& s, const StepTimes& t, int threads) {
  MeasureResult m;
  for (double x : t.steps) m.times.push_back(x / static_cast<double>(std::max<size_t>(1, t.step_count)));
  m.threads = threads;
  return make_record(w, s, m, kNetworkConfirmPolicy);  // RecordsDB::add derives median and min
}

std::string trial_line(const NetworkTrial& t) {
  if (!t.error.empty()) return fmt::format("{} {} {} on {} threads: not timed: {}", t.key_hash, t.name, t.variant, t.threads, t.error);
  return fmt::format("{} {} {} on {} threads: {:.3f} ms in the network against {:.3f} ms (fastest {:.3f} / {:.3f}); "
                     "model {:.3f} / {:.3f} ms: {}",
                     t.key_hash, t.name, t.variant, t.threads, t.variant_s * 1e3, t.base_s * 1e3, t.variant_min_s * 1e3,
                     t.base_min_s * 1e3, t.variant_model_s * 1e3, t.base_model_s * 1e3, t.kept ? "kept" : "discarded");
}

}  // namespace

std::unique_ptr<CompiledModel> compile_model_with(const Graph& g, const std::map<std::string, Schedule>& schedules,
                                                  const std::string& cache_root, int threads) {
  CompileOptions co;
  co.cache_root = cache_root;
  co.schedules = schedules;
  auto m = std::make_unique<CompiledModel>(g, co);
  if (threads > 0) m->set_threads(threads);
  return m;
}

std::vector<StepTimes> time_steps_in_models(const std::vector<CompiledModel*>& models,
                                            const std::set<std::string>& exact_keys,
                                            const std::map<std::string, Tensor>& inputs, int iters) {
  std::vector<CompiledModel*> distinct;
  std::vector<size_t> index;  // models[i] is distinct[index[i]]
  for (CompiledModel* m : models) {
    auto it = std::find(distinct.begin(), distinct.end(), m);
    index.push_back(static_cast<size_t>(it - distinct.begin()));
    if (it == distinct.end()) distinct.push_back(m);
  }
  std::vector<std::vector<size_t>> steps;
  std::vector<StepTimes> times(distinct.size());
  for (size_t i = 0; i < distinct.size(); i++) {
    steps.push_back(steps_of(*distinct[i], exact_keys));
    times[i].step_count = steps.back().size();
  }
  time_alternately(distinct, inputs, iters, 2, [&](size_t i, double seconds) {
    double sum = 0;
    for (size_t k : steps[i]) sum += distinct[i]->step_seconds()[k];
    times[i].model.push_back(seconds);
    times[i].steps.push_back(sum);
  });
  std::vector<StepTimes> out;
  for (size_t i : index) out.push_back(times[i]);
  return out;
}

bool steps_faster(const StepTimes& base, const StepTimes& trial) {
  if (base.steps.empty() || trial.steps.empty() || base.step_count == 0 || trial.step_count == 0) return false;
  const TimeStats b = time_stats(base.steps), t = time_stats(trial.steps);
  return faster_by_margin(b.median, b.min, t.median, t.min);
}

void record_network_pair(RecordsDB& db, const Workload& w, const Schedule& variant, const StepTimes& default_times,
                         const StepTimes& variant_times, int threads) {
  // One transaction, the default's first: a confirmation pair (tuner.h).
  db.add({network_record(w, default_schedule_of(w), default_times, threads),
          network_record(w, variant, variant_times, threads)});
}

bool runs_schedule(const CompiledModel& m, const std::string& exact_key, const std::string& hash) {
  const Partition& p = m.partition();
  for (size_t k = 0; k < p.workloads.size(); k++)
    if (p.workloads[k].exact_key == exact_key) return m.schedule_hashes()[k] == hash;
  return false;
}

std::vector<NetworkTrial> refine_in_network(const Graph& g, RecordsDB& db, std::vector<NetworkCandidate> candidates,
                                            const NetworkRefineOptions& opts, const NetworkProgress& say) {
  std::vector<NetworkTrial> out;
  if (opts.evals <= 0 || candidates.empty()) return out;
  const auto t0 = std::chrono::steady_clock::now();
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const NetworkCandidate& a, const NetworkCandidate& b) { return a.walked_bytes > b.walked_bytes; });
  const Partition part = partition_graph(g);
  const std::map<std::string, Tensor> inputs = random_inputs(g, 1);
  bool ran = false;
  for (int threads : opts.threads) {
    std::vector<std::string> warnings;  // best_schedules' own (skipped records); `run --db` reports them
    std::map<std::string, Schedule> schedules = best_schedules(part, db, warnings, threads);
    std::unique_ptr<CompiledModel> base;  // compiled for the first trial
    int tried = 0;
    for (const NetworkCandidate& c : candidates) {
      if (tried >= opts.evals || stopped(opts) || (opts.seconds > 0 && seconds_since(t0) >= opts.seconds)) break;
      // A tuned winner keeps its standalone confirmation. The variant may run already by an
      // earlier decision of the model (at another thread count: latest_confirmation falls back to
      // any; or by an earlier run): this count decides anew, against the default.
      const auto used = schedules.find(c.w->exact_key);
      std::optional<Schedule> decided;
      if (used != schedules.end()) {
        const std::optional<Record> r = used_record(db, c.w->exact_key, threads);
        if (!r || r->policy != kNetworkConfirmPolicy || used->second.hash() != c.variant.hash()) continue;
        decided = used->second;
        schedules.erase(used);
        base.reset();
      }
      tried++;
      out.push_back(try_candidate(g, db, c, threads, schedules, base, inputs, opts, ran));
      if (decided && !out.back().error.empty()) {  // nothing recorded: the earlier decision still runs
        schedules[c.w->exact_key] = *decided;
        base.reset();
      }
      if (say) say(trial_line(out.back()));
    }
  }
  if (ran) set_halide_threads(0);  // the pool is process-wide: back to its default count
  return out;
}

double network_refine_reserve(size_t candidates, const NetworkRefineOptions& opts, double model_s, int tuned_threads) {
  const double tried = static_cast<double>(std::min<size_t>(candidates, static_cast<size_t>(std::max(0, opts.evals))));
  double s = 0;
  for (int n : opts.threads)
    s += tried * (3.0 + 2.0 * (opts.iters + 3) * model_s * std::max(1.0, static_cast<double>(tuned_threads) / std::max(1, n)));
  return s;
}

nlohmann::json network_trials_json(const std::vector<NetworkTrial>& trials) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : trials)
    out.push_back({{"key", t.key_hash}, {"name", t.name}, {"variant", t.variant}, {"threads", t.threads},
                   {"base_ms", t.base_s * 1e3}, {"variant_ms", t.variant_s * 1e3}, {"base_min_ms", t.base_min_s * 1e3},
                   {"variant_min_ms", t.variant_min_s * 1e3}, {"base_model_ms", t.base_model_s * 1e3},
                   {"variant_model_ms", t.variant_model_s * 1e3}, {"kept", t.kept}, {"error", t.error}});
  return out;
}

}  // namespace ts
