#include "tune/network_refine.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "measure/time_stats.h"
#include "runtime/compiled_model.h"
#include "tune/tuner.h"

namespace ts {

namespace {

// Per timed inference of one model: its latency and the sum of the workload's steps.
struct RunTimes {
  std::vector<double> model;  // seconds of each inference
  std::vector<double> steps;  // seconds of the workload's steps in it
};

std::unique_ptr<CompiledModel> compile_with(const Graph& g, const std::map<std::string, Schedule>& schedules,
                                            const NetworkRefineOptions& opts, int threads) {
  CompileOptions co;
  co.cache_root = opts.cache_root;
  co.schedules = schedules;
  auto m = std::make_unique<CompiledModel>(g, co);
  m->set_threads(threads);
  return m;
}

// The steps of `m` that run the workload `exact_key`.
std::vector<size_t> steps_of(const CompiledModel& m, const std::string& exact_key) {
  std::vector<size_t> out;
  const Partition& p = m.partition();
  for (size_t i = 0; i < p.steps.size(); i++)
    if (p.workloads[p.steps[i].workload].exact_key == exact_key) out.push_back(i);
  return out;
}

// The models run in turns (time_alternately), the workload's steps summed per inference.
std::vector<RunTimes> time_steps(const std::vector<CompiledModel*>& models, const std::string& exact_key,
                                 const std::map<std::string, Tensor>& inputs, int iters) {
  std::vector<std::vector<size_t>> steps;
  for (const CompiledModel* m : models) steps.push_back(steps_of(*m, exact_key));
  std::vector<RunTimes> out(models.size());
  time_alternately(models, inputs, iters, 2, [&](size_t i, double seconds) {
    double sum = 0;
    for (size_t k : steps[i]) sum += models[i]->step_seconds()[k];
    out[i].model.push_back(seconds);
    out[i].steps.push_back(sum);
  });
  return out;
}

// Why the trial model cannot be timed against the base: its variant did not compile, or its
// outputs differ from the base's; "" when it can.
std::string check_trial(const Graph& g, CompiledModel& base, CompiledModel& trial, const NetworkCandidate& c,
                        const std::map<std::string, Tensor>& inputs) {
  if (!trial.stats().warnings.empty()) return "the variant did not compile: " + trial.stats().warnings.front();
  const std::vector<Tensor> want = base.run(inputs), got = trial.run(inputs);
  for (size_t k = 0; k < want.size(); k++) {
    // A variant changes prefetching only: the same arithmetic, so the same values.
    const Comparison cmp = compare_tensors(got[k], want[k], 1e-6, 0);
    if (!cmp.ok) return fmt::format("output '{}' differs from the base model's: {}", g.outputs[k], cmp.message);
  }
  return steps_of(trial, c.w->exact_key).empty() ? "the model has no step of this workload" : "";
}

Record record_of(const NetworkCandidate& c, const Schedule& s, const std::vector<double>& times, int threads) {
  MeasureResult m;
  m.times = times;
  m.threads = threads;
  Record r = make_record(*c.w, s, m, kNetworkConfirmPolicy);
  const TimeStats st = time_stats(times);
  r.median = st.median;  // as RecordsDB::add computes them, for the decision below
  r.min = st.min;
  return r;
}

// One candidate against `base` (which runs `schedules`) at `threads`; a kept variant becomes the
// base.
NetworkTrial try_candidate(const Graph& g, RecordsDB& db, const NetworkCandidate& c, int threads,
                           std::map<std::string, Schedule>& schedules, std::unique_ptr<CompiledModel>& base,
                           const std::map<std::string, Tensor>& inputs, const NetworkRefineOptions& opts) {
  NetworkTrial t;
  t.key_hash = c.w->key_hash();
  t.name = c.w->name;
  t.variant = c.variant.autoscheduler ? nlohmann::json(c.variant.autoscheduler->params).dump() : c.variant.hash();
  t.threads = threads;
  std::map<std::string, Schedule> with = schedules;
  with[c.w->exact_key] = c.variant;
  std::unique_ptr<CompiledModel> trial;
  try {
    if (!base) base = compile_with(g, schedules, opts, threads);
    trial = compile_with(g, with, opts, threads);
    t.error = check_trial(g, *base, *trial, c, inputs);
  } catch (const Error& e) {
    t.error = e.what();
  }
  if (!t.error.empty()) return t;
  const std::vector<RunTimes> rt = time_steps({base.get(), trial.get()}, c.w->exact_key, inputs, opts.iters);
  if (opts.stop && opts.stop->load()) {
    t.error = "stopped";
    return t;
  }
  const Record d = record_of(c, default_schedule_recipe(), rt[0].steps, threads);
  const Record v = record_of(c, c.variant, rt[1].steps, threads);
  db.add({d, v});  // one transaction, the default's first: a confirmation pair (tuner.h)
  t.base_s = d.median;
  t.variant_s = v.median;
  t.base_min_s = d.min;
  t.variant_min_s = v.min;
  t.base_model_s = time_stats(rt[0].model).median;
  t.variant_model_s = time_stats(rt[1].model).median;
  t.kept = Confirmation{d, v}.faster();
  if (t.kept) {
    schedules = std::move(with);
    base = std::move(trial);
  }
  return t;
}

}  // namespace

std::vector<NetworkTrial> refine_in_network(const Graph& g, RecordsDB& db, std::vector<NetworkCandidate> candidates,
                                            const NetworkRefineOptions& opts, const NetworkProgress& say) {
  std::vector<NetworkTrial> out;
  if (opts.evals <= 0 || candidates.empty()) return out;
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const NetworkCandidate& a, const NetworkCandidate& b) { return a.walked_bytes > b.walked_bytes; });
  const Partition part = partition_graph(g);
  const std::map<std::string, Tensor> inputs = random_inputs(g, 1);
  for (int threads : opts.threads) {
    std::vector<std::string> warnings;  // best_schedules' own (skipped records); `run --db` reports them
    std::map<std::string, Schedule> schedules = best_schedules(part, db, warnings, threads);
    std::unique_ptr<CompiledModel> base;  // compiled for the first trial
    int tried = 0;
    for (const NetworkCandidate& c : candidates) {
      if (tried >= opts.evals || (opts.stop && opts.stop->load())) break;
      // A tuned winner keeps its standalone confirmation. The variant itself may run already,
      // decided at another thread count (latest_confirmation falls back to any): this count
      // decides anew, against the default.
      const auto used = schedules.find(c.w->exact_key);
      if (used != schedules.end()) {
        if (used->second.hash() != c.variant.hash()) continue;
        schedules.erase(used);
        base.reset();
      }
      tried++;
      out.push_back(try_candidate(g, db, c, threads, schedules, base, inputs, opts));
      const NetworkTrial& t = out.back();
      if (!say) continue;
      if (!t.error.empty())
        say(fmt::format("{} {} {} on {} threads: not timed: {}", t.key_hash, t.name, t.variant, threads, t.error));
      else
        say(fmt::format("{} {} {} on {} threads: {:.3f} ms in the network against {:.3f} ms (fastest {:.3f} / {:.3f}); "
                        "model {:.3f} / {:.3f} ms: {}",
                        t.key_hash, t.name, t.variant, threads, t.variant_s * 1e3, t.base_s * 1e3, t.variant_min_s * 1e3,
                        t.base_min_s * 1e3, t.variant_model_s * 1e3, t.base_model_s * 1e3, t.kept ? "kept" : "discarded"));
    }
  }
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
