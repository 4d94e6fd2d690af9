#include "search/gbt_sa_search.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <unordered_set>

#include "features/features.h"
#include "graph/error.h"
#include "schedule/rule_sketch.h"
#include "search/schedule_mutation.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;

// Quality: higher is better, whether the model predicts seconds or scores.
std::vector<double> quality_of(const CostModel& m, std::vector<double> pred) {
  if (m.predicts_seconds())
    for (double& p : pred) p = -std::log(std::max(p, 1e-12));
  return pred;
}

// A model's output in its margin space (what a local model trained on top of it adds to): the
// score itself, or ln(seconds) for a model of seconds.
std::vector<double> margin_of(const CostModel& m, std::vector<double> pred) {
  if (m.predicts_seconds())
    for (double& p : pred) p = std::log(std::max(p, 1e-12));
  return pred;
}

// Qualities of `n` schedules from those of the ones at `rated` (in order): the others are rated
// below every one of them (by their spread), or all equal when none is rated.
std::vector<double> rated_last(const std::vector<double>& q, const std::vector<size_t>& rated, size_t n) {
  if (q.empty()) return std::vector<double>(n, 0.0);
  const auto [lo, hi] = std::minmax_element(q.begin(), q.end());
  std::vector<double> out(n, *lo - std::max(*hi - *lo, 1.0));
  for (size_t k = 0; k < rated.size(); k++) out[rated[k]] = q[k];
  return out;
}

}  // namespace

struct GbtSaSearch::TaskState {
  std::unique_ptr<FeatureExtractor> features;    // of the task's space
  std::vector<std::vector<float>> xs;            // features of measured schedules
  std::vector<double> seconds;                   // their median (0 = failed)
  std::vector<Schedule> measured;                // the schedules themselves (same order)
  std::unique_ptr<CostModel> local;              // trained on xs (on top of global)
  std::unique_ptr<CostModel> global;             // trained on other workloads (transfer), or null
  bool global_tried = false;                     // transfer samples were fetched
  std::vector<Schedule> chains;                  // persistent Markov chain states
  std::vector<Schedule> plan;                    // what propose() hands out next, best first
  std::unordered_set<std::string> planned;       // hashes handed out (measured or being measured)
  int new_since_plan = 0;                        // measurements observed since the plan was built
  PlanStats stats;                               // of the last plan

  // Enough valid samples of this task to train the local model on.
  bool local_ready(int min_samples) const { return stats.samples >= min_samples; }

  int valid() const {
    int n = 0;
    for (double s : seconds) n += s > 0;
    return n;
  }
};

GbtSaSearch::GbtSaSearch(GbtSaOptions opts) : opts_(std::move(opts)) {
  if (opts_.plan_size < 1) throw Error("gbt-sa: plan size must be at least 1");
  if (opts_.epsilon < 0 || opts_.epsilon > 1) throw Error("gbt-sa: epsilon must be in [0, 1]");
  if (opts_.lambda < 1) throw Error("gbt-sa: lambda must be at least 1");
  if (opts_.chains < 1 || opts_.steps < 0) throw Error("gbt-sa: chains must be at least 1, steps at least 0");
  make_cost_model(opts_.model);  // an unknown model name fails now, not at the first plan
}

GbtSaSearch::~GbtSaSearch() = default;

GbtSaSearch::TaskState& GbtSaSearch::state(const SearchTask& task) {
  auto& p = tasks_[task.workload->exact_key];
  if (!p) {
    p = std::make_unique<TaskState>();
    p->features = std::make_unique<FeatureExtractor>(*task.space);
    p->local = make_cost_model(opts_.model, 1);
  }
  return *p;
}

GbtSaSearch::PlanStats GbtSaSearch::last_plan(const std::string& workload_key) const {
  auto it = tasks_.find(workload_key);
  return it == tasks_.end() ? PlanStats{} : it->second->stats;
}

void GbtSaSearch::observe(const SearchTask& task, const std::vector<Schedule>& batch,
                          const std::vector<MeasureResult>& results) {
  TaskState& ts = state(task);
  for (size_t k = 0; k < batch.size() && k < results.size(); k++) {
    ts.planned.insert(batch[k].hash());
    if (batch[k].autoscheduler) continue;  // an autoscheduler recipe: no stage decisions, no features
    try {
      ts.xs.push_back(ts.features->flat(batch[k]));
    } catch (const Error&) {
      continue;  // a schedule of another space (e.g. an older version's): nothing to learn from
    }
    ts.seconds.push_back(results[k].valid() ? results[k].median : 0);
    ts.measured.push_back(batch[k]);
    ts.new_since_plan++;
  }
}

std::vector<Schedule> GbtSaSearch::propose(const SearchTask& task, size_t n, std::mt19937_64& rng) {
  TaskState& ts = state(task);
  std::vector<Schedule> out = ranked_rule_points(task, ts, sketch_share(n, kRuleShare, rng), rng);
  auto fresh = [&](const Schedule& s) {
    const std::string h = s.hash();
    return !ts.planned.count(h) && !(task.measured && task.measured(h));
  };
  for (int rebuilds = 0; out.size() < n && rebuilds < 2;) {
    if (ts.plan.empty() || ts.new_since_plan >= opts_.plan_size) {
      rebuild_plan(task, ts, rng);
      rebuilds++;
    }
    while (out.size() < n && !ts.plan.empty()) {
      Schedule s = std::move(ts.plan.front());
      ts.plan.erase(ts.plan.begin());
      if (!fresh(s)) continue;
      ts.planned.insert(s.hash());
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<Schedule> GbtSaSearch::ranked_rule_points(const SearchTask& task, TaskState& ts, size_t n, std::mt19937_64& rng) {
  if (n == 0 || !task.space->rule_sketch()) return {};
  // Around the fastest rule point measured (the rule itself until one beats it), like a (1+1)
  // evolution strategy over the knobs, and random knobs.
  const Schedule* around = nullptr;
  double best = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < ts.measured.size(); k++)
    if (ts.seconds[k] > 0 && ts.seconds[k] < best && rule_knobs(ts.measured[k])) {
      best = ts.seconds[k];
      around = &ts.measured[k];
    }
  auto taken = [&](const std::string& h) { return ts.planned.count(h) || (task.measured && task.measured(h)); };
  std::set<std::string> drawn;
  // No trained model yet: as drawn; else the model's best of a pool kRulePool times as large.
  std::vector<Schedule> pool =
      draw_rule_points(*task.space, ts.stats.model_used ? kRulePool * n : n, drawn, taken, around, rng);
  const std::vector<double> q = ts.stats.model_used ? predict(task, ts, pool) : std::vector<double>(pool.size(), 0.0);
  std::vector<size_t> order(pool.size());
  for (size_t k = 0; k < order.size(); k++) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return q[a] > q[b]; });
  std::vector<Schedule> out;
  for (size_t k = 0; k < order.size() && out.size() < n; k++) {
    ts.planned.insert(pool[order[k]].hash());
    out.push_back(std::move(pool[order[k]]));
  }
  return out;
}

void GbtSaSearch::train(const SearchTask& task, TaskState& ts) {
  // Transfer: the global model, once per task.
  if (opts_.transfer_samples && !ts.global_tried) {
    ts.global_tried = true;
    std::vector<CostSample> src = opts_.transfer_samples(task.workload->exact_key);
    if (src.size() >= static_cast<size_t>(opts_.min_samples)) {
      ts.global = make_cost_model(opts_.model, 2);
      ts.global->update(src);
    }
  }
  if (!ts.local_ready(opts_.min_samples)) return;
  // The local model on this task's measurements (failures rank below every valid one).
  double worst = 0;
  for (double s : ts.seconds) worst = std::max(worst, s);
  std::vector<CostSample> samples;
  const std::string group = task.workload->key_hash();
  for (size_t k = 0; k < ts.xs.size(); k++) samples.push_back({group, ts.xs[k], ts.seconds[k] > 0 ? ts.seconds[k] : 2 * worst});
  std::vector<double> base;
  if (ts.global) {
    std::vector<std::vector<float>> x;
    for (const auto& s : samples) x.push_back(s.features);
    base = margin_of(*ts.global, ts.global->predict(x));
  }
  ts.local->update(samples, base);
}

std::vector<double> GbtSaSearch::predict(const SearchTask& task, TaskState& ts, const std::vector<Schedule>& ss) const {
  // A schedule the features cannot describe (features.cpp refuses a few compute_at sites a
  // mutation leaves, e.g. one whose path to its consumer stopped being inlined) is rated last:
  // the model knows nothing of it, and one such draw must not end the search.
  std::vector<std::vector<float>> x;
  std::vector<size_t> rated;
  x.reserve(ss.size());
  for (size_t k = 0; k < ss.size(); k++) {
    try {
      x.push_back(ts.features->flat(ss[k]));
      rated.push_back(k);
    } catch (const Error& e) {
      spdlog::debug("gbt-sa {}: a schedule without features, rated last: {}", task.workload->name, e.what());
    }
  }
  std::vector<double> quality;
  if (!x.empty() && !ts.local_ready(opts_.min_samples)) {
    quality = quality_of(*ts.global, ts.global->predict(x));  // the transfer model alone
  } else if (!x.empty()) {
    std::vector<double> base;
    if (ts.global) base = margin_of(*ts.global, ts.global->predict(x));
    quality = quality_of(*ts.local, ts.local->predict(x, base));
  }
  return rated_last(quality, rated, ss.size());
}

std::map<std::string, std::pair<double, Schedule>> GbtSaSearch::anneal(const SearchTask& task, TaskState& ts,
                                                                       const std::function<bool(const std::string&)>& fresh,
                                                                       std::mt19937_64& rng) {
  const ScheduleSpace& space = *task.space;
  // Parallel simulated annealing from the persistent chains.
  // An eighth of the chains walk the rule's sketch (their mutations change knobs), the rest the space.
  while (ts.chains.size() < static_cast<size_t>(opts_.chains)) {
    std::optional<Schedule> rule = ts.chains.size() % 8 == 0 ? space.sample_rule(rng) : std::nullopt;
    ts.chains.push_back(rule ? std::move(*rule) : space.sample(rng));
  }
  // The fastest measured schedules restart the chains the model rates lowest, so annealing also
  // explores around what is known to run well (in a space of 10^50+ schedules per workload,
  // chains from random draws alone rarely come near it).
  std::vector<double> energy = predict(task, ts, ts.chains);
  // Only points of the space and of its rule sketch restart chains: the space's mutations of a
  // schedule another generator made (an autoscheduler's: Schedule::origin) mix two plans into
  // one that is rarely valid; those schedules teach the model instead.
  std::vector<size_t> fastest;
  for (size_t k = 0; k < ts.seconds.size(); k++)
    if (ts.seconds[k] > 0 && (!ts.measured[k].origin || rule_knobs(ts.measured[k]))) fastest.push_back(k);
  std::sort(fastest.begin(), fastest.end(), [&](size_t a, size_t c) { return ts.seconds[a] < ts.seconds[c]; });
  fastest.resize(std::min(fastest.size(), ts.chains.size() / 8));
  std::vector<size_t> lowest(ts.chains.size());
  for (size_t c = 0; c < lowest.size(); c++) lowest[c] = c;
  std::sort(lowest.begin(), lowest.end(), [&](size_t a, size_t c) { return energy[a] < energy[c]; });
  for (size_t k = 0; k < fastest.size(); k++) ts.chains[lowest[k]] = ts.measured[fastest[k]];
  if (!fastest.empty()) energy = predict(task, ts, ts.chains);

  const size_t keep = static_cast<size_t>(std::ceil(opts_.lambda * opts_.plan_size));
  std::map<std::string, std::pair<double, Schedule>> top;  // hash -> (quality, schedule), the best `keep` fresh ones
  auto offer = [&](const Schedule& s, double q) {
    const std::string h = s.hash();
    if (top.count(h) || !fresh(h)) return false;
    if (top.size() >= keep) {
      auto worst = std::min_element(top.begin(), top.end(),
                                    [](const auto& a, const auto& c) { return a.second.first < c.second.first; });
      if (worst->second.first >= q) return false;
      top.erase(worst);
    }
    top.emplace(h, std::make_pair(q, s));
    return true;
  };
  for (size_t c = 0; c < ts.chains.size(); c++) offer(ts.chains[c], energy[c]);
  // Scores of a rank model have no unit: temperatures are in units of the chains' spread.
  double mean = 0, var = 0;
  for (double e : energy) mean += e / energy.size();
  for (double e : energy) var += (e - mean) * (e - mean) / energy.size();
  const double scale = std::max(std::sqrt(var), 1e-9);
  std::uniform_real_distribution<double> unif(0, 1);
  int quiet = 0;
  for (int step = 0; step < opts_.steps && quiet < opts_.early_stop; step++) {
    const double temp = 1.0 - static_cast<double>(step) / std::max(1, opts_.steps);
    std::vector<Schedule> next;
    next.reserve(ts.chains.size());
    for (const auto& s : ts.chains) next.push_back(mutate(space, s, rng));
    std::vector<double> e = predict(task, ts, next);
    bool changed = false;
    for (size_t c = 0; c < next.size(); c++) {
      changed |= offer(next[c], e[c]);
      const double gain = (e[c] - energy[c]) / scale;
      if (gain >= 0 || unif(rng) < std::exp(gain / std::max(temp, 1e-5))) {
        ts.chains[c] = std::move(next[c]);
        energy[c] = e[c];
      }
    }
    quiet = changed ? 0 : quiet + 1;
    ts.stats.sa_steps = step + 1;
  }
  return top;
}

void GbtSaSearch::rebuild_plan(const SearchTask& task, TaskState& ts, std::mt19937_64& rng) {
  const auto t0 = Clock::now();
  const ScheduleSpace& space = *task.space;
  const size_t b = static_cast<size_t>(opts_.plan_size);
  ts.plan.clear();
  ts.new_since_plan = 0;
  ts.stats = {};
  ts.stats.samples = ts.valid();
  std::unordered_set<std::string> in_plan;
  // `planned` holds every schedule observed (earlier records included) or handed out, so the
  // annealing loop needs no database query per candidate; propose() still asks task.measured.
  auto fresh = [&](const std::string& h) { return !ts.planned.count(h) && !in_plan.count(h); };
  auto add_random = [&](size_t count) {
    for (size_t tries = 0; count > 0 && tries < 50 * b + 50; tries++) {
      Schedule s = space.sample(rng);
      const std::string h = s.hash();
      if (!fresh(h)) continue;
      in_plan.insert(h);
      ts.plan.push_back(std::move(s));
      count--;
    }
  };

  train(task, ts);
  if (!ts.local_ready(opts_.min_samples) && !ts.global) {
    // Just enough random schedules to train on: the model steers from the next plan on.
    add_random(std::min(b, static_cast<size_t>(std::max(1, opts_.min_samples - ts.stats.samples))));
    ts.stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return;
  }
  ts.stats.model_used = true;
  ts.stats.transfer = ts.global != nullptr;
  auto top = anneal(task, ts, fresh, rng);

  // The diverse (1 - ε)·b of the top λ·b, then ε·b random.
  std::vector<Schedule> cands;
  std::vector<double> quality;
  for (auto& [h, qs] : top) {
    quality.push_back(qs.first);
    cands.push_back(std::move(qs.second));
  }
  ts.stats.candidates = static_cast<int>(cands.size());
  const size_t n_random = static_cast<size_t>(std::floor(opts_.epsilon * b + 0.5));
  const size_t n_model = std::min(cands.size(), b - std::min(b, n_random));
  for (size_t k : diverse_subset(cands, quality, n_model, opts_.alpha)) {
    in_plan.insert(cands[k].hash());
    ts.plan.push_back(std::move(cands[k]));
  }
  add_random(b - ts.plan.size());
  ts.stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<size_t> diverse_subset(const std::vector<Schedule>& candidates, const std::vector<double>& quality,
                                   size_t k, double alpha) {
  const size_t n = candidates.size();
  if (quality.size() != n) throw Error("diverse_subset: one quality per candidate");
  double lo = INFINITY, hi = -INFINITY;
  for (double q : quality) {
    lo = std::min(lo, q);
    hi = std::max(hi, q);
  }
  const double range = hi > lo ? hi - lo : 1;
  std::vector<std::vector<std::string>> comps(n);
  for (size_t i = 0; i < n; i++) comps[i] = schedule_components(candidates[i]);
  std::set<std::string> covered;
  std::vector<bool> taken(n, false);
  std::vector<size_t> out;
  while (out.size() < std::min(k, n)) {
    size_t best = n;
    double best_gain = -INFINITY;
    for (size_t i = 0; i < n; i++) {
      if (taken[i]) continue;
      double gain = (quality[i] - lo) / range;
      for (const auto& c : comps[i]) gain += covered.count(c) ? 0 : alpha;
      if (gain > best_gain) {
        best_gain = gain;
        best = i;
      }
    }
    taken[best] = true;
    out.push_back(best);
    covered.insert(comps[best].begin(), comps[best].end());
  }
  return out;
}

}  // namespace ts
