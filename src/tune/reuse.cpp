#include "tune/reuse.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <tuple>

#include "graph/error.h"
#include "graph/workload.h"
#include "measure/time_stats.h"
#include "measure/workload_compiler.h"
#include "runtime/compiled_model.h"
#include "schedule/autoscheduler.h"
#include "schedule/refit.h"
#include "schedule/rule_sketch.h"
#include "tune/network_refine.h"
#include "tune/tuner.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kReusePolicy = "reuse";
constexpr size_t kAcrossClassRecords = 1000;  // records read per donor workload of another class (its default ends them)


// A tuned model of a donor database.
struct Donor {
  std::string model;                    // its name there
  const RecordsDB* db = nullptr;        // the database
  std::vector<WorkloadEntry> workloads; // what it holds
};

// The models of a donor database; a database from before models were recorded is one model
// named after its file.
std::vector<Donor> donors_in(const RecordsDB& db) {
  std::vector<Donor> out;
  for (const auto& m : db.model_workloads()) {
    if (out.empty() || out.back().model != m.model) out.push_back({m.model, &db, {}});
    out.back().workloads.push_back(m.workload);
  }
  if (out.empty()) out.push_back({std::filesystem::path(db.path()).stem().string(), &db, db.workloads()});
  return out;
}

// Classes of the target by first use, with their shares of the untuned time.
std::vector<ReuseClass> classes_of(const std::vector<Task>& tasks) {
  std::vector<ReuseClass> out;
  double total = 0;
  for (const auto& t : tasks) total += t.summary.error.empty() ? t.count * t.default_s : 0;
  for (const auto& t : tasks) {
    auto it = std::find_if(out.begin(), out.end(), [&](const ReuseClass& c) { return c.class_key == t.w->class_key; });
    if (it == out.end()) {
      const std::string label = out.size() < 26 ? std::string(1, static_cast<char>('A' + out.size()))
                                                : fmt::format("C{}", out.size());
      out.push_back({label, t.w->name, t.w->class_key, 0, 0});
      it = out.end() - 1;
    }
    it->workloads++;
    if (t.summary.error.empty() && total > 0) it->share += t.count * t.default_s / total;
  }
  return out;
}

// Whether the donor's model itself kept a variant of this workload's default: its latest
// confirmation at `threads` (or, where it has none of that count, at any) is an in-network pair
// the variant won (network_refine.h).
bool decided_in_network(const Donor& d, const WorkloadEntry& w, int threads) {
  const std::optional<Confirmation> c = latest_confirmation(*d.db, w.exact_key, threads);
  return c && c->candidate.policy == kNetworkConfirmPolicy && c->faster();
}

// W_Tc counts the donor's workloads of class c that tuning made faster than their default (every
// tuned workload has a valid record: its default's), alone or in its network. The anchor score
// sums the same over the donor's tuned workloads of other classes with c's anchor (class_anchor),
// whose rule knobs across-class reuse carries; it only ranks donors of equal class score.
DonorScore score(const Donor& d, const std::vector<ReuseClass>& classes, int threads) {
  DonorScore s{d.model, d.db->path(), {}, 0, {}, 0, false};
  std::map<std::string, int> tuned, tuned_by_anchor;  // class key / class_anchor -> such workloads
  for (const auto& w : d.workloads) {
    auto best = d.db->best(w.exact_key, 1);
    if ((!best.empty() && !is_default_record(best[0])) || decided_in_network(d, w, threads)) {
      tuned[w.class_key]++;
      tuned_by_anchor[class_anchor(w.class_key)]++;
    }
  }
  auto count = [](const std::map<std::string, int>& m, const std::string& key) {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  };
  auto add = [&](std::map<std::string, int>& per, double& sum, const ReuseClass& c, int n) {
    if (n == 0) return;
    per[c.label] = n;
    sum += c.share * c.share * std::sqrt(static_cast<double>(n));
  };
  for (const auto& c : classes) {
    const int same = count(tuned, c.class_key);
    add(s.per_class, s.score, c, same);
    const std::string anchor = class_anchor(c.class_key);
    if (!anchor.empty()) add(s.per_anchor, s.anchor_score, c, count(tuned_by_anchor, anchor) - same);  // other classes only
  }
  return s;
}

// Whether the donor has anything reuse would carry: a tuned workload of a class, or (across
// classes) of an anchor, the target holds.
bool usable(const DonorScore& s, bool across_classes) { return s.score > 0 || (across_classes && s.anchor_score > 0); }

// Marks the donors `which` selects (auto, all or a name); the target itself is never a donor.
// Ranked by the class score, then (across classes) the anchor score.
void choose(std::vector<DonorScore>& scores, const std::string& which, const std::string& target, bool across_classes) {
  std::erase_if(scores, [&](const DonorScore& s) { return s.model == target; });
  std::stable_sort(scores.begin(), scores.end(), [&](const DonorScore& a, const DonorScore& b) {
    if (a.score != b.score) return a.score > b.score;
    return across_classes && a.anchor_score > b.anchor_score;
  });
  if (which == "all") {
    for (auto& s : scores) s.chosen = usable(s, across_classes);
  } else if (which == "auto") {
    if (!scores.empty() && usable(scores[0], across_classes)) scores[0].chosen = true;
  } else {
    bool found = false;
    for (auto& s : scores) found |= s.chosen = s.model == which;
    if (!found) {
      std::string names;
      for (const auto& s : scores) names += (names.empty() ? "" : ", ") + s.model;
      throw Error(fmt::format("tune --donor {}: no such model in the donor databases (they hold: {})", which,
                              names.empty() ? "none" : names));
    }
  }
}

// One re-fitted candidate of a target workload, with its standalone time once measured.
struct Candidate {
  Schedule schedule;
  std::string hash;
  double standalone_s = 0;  // valid median (0 when it failed or is not measured; the default's for in_network)
  bool earlier = false;     // what the target ran before (an earlier tune or reuse), not re-fitted
  bool in_network = false;  // the default's network variant, which a donor's model kept: only the target's model can judge it
};

// What a target workload runs already (an earlier tune or reuse), and whether its model decided it.
struct Current {
  Schedule schedule;
  bool in_network = false;  // a network variant kept by a pair timed in the model (alone it is the default)
};

// Re-fits the chosen donors' schedules of w's class to task t (their `per_workload` fastest each);
// counts what could not be carried. What the target runs already (`current`) comes first, so that
// the full phase weighs the donors against it, not against nothing.
// With `across_classes`, the donors' workloads of other classes with t's anchor (class_anchor:
// the same anchor op, a conv, matmul, pooling ..., other elementwise ops fused after it) give
// their default-rule variants too, by their knobs (Schedule::origin): the rule makes t's schedule
// with them, scheduling the extra or missing stages itself (the paper's weaker across-class
// reuse). Their stage-by-stage schedules name stages t lacks. A rule variant of the same class is
// carried by its knobs as well: the rule's own schedule of t is what those knobs mean there.
// Where a donor's model kept the network variant of a workload of the class (or, across classes,
// of the anchor; network_refine.h, at `threads`), the target's own variant is a candidate too: the
// knob, not the donor's sizes, is what carries.
std::vector<Candidate> refit_candidates(const Task& t, const std::vector<Donor>& donors,
                                        const std::vector<DonorScore>& scores, int per_workload, int threads,
                                        bool across_classes, const std::optional<Current>& current,
                                        ReuseWorkload& out) {
  const std::vector<Halide::Func> outputs = lower_workload(*t.w).outputs;
  std::vector<Candidate> cands;
  std::set<std::string> seen;
  if (current) {
    const std::string h = current->schedule.hash();
    seen.insert(h);
    cands.push_back({current->schedule, h, current->in_network ? t.default_s : 0, true, current->in_network});
  }
  bool network_decided = false;  // by a chosen donor, on a workload of this class (or anchor)
  const std::string anchor = class_anchor(t.w->class_key);
  for (const auto& d : donors) {
    const bool chosen = std::any_of(scores.begin(), scores.end(),
                                    [&](const DonorScore& s) { return s.chosen && s.model == d.model && s.db == d.db->path(); });
    if (!chosen) continue;
    for (const auto& w : d.workloads) {
      const bool same_class = w.class_key == t.w->class_key;
      if (!same_class && !(across_classes && !anchor.empty() && class_anchor(w.class_key) == anchor)) continue;
      network_decided = network_decided || decided_in_network(d, w, threads);
      // Only what tuning earned is carried: records faster than the donor workload's own default
      // (best() is fastest first, so its default ends the list). Random trials that never beat
      // their default made up most of what an earlier version carried, and cost minutes. One record
      // more than carried is read, in place of one of a newer format that is skipped. Across
      // classes the stage schedules above a rule variant are skipped too, so the records are read down
      // to the default.
      int taken = 0;
      const size_t window = same_class ? static_cast<size_t>(per_workload) + 1 : kAcrossClassRecords;
      for (const Record& r : d.db->best(w.exact_key, window)) {
        if (taken == per_workload) break;
        Schedule s;
        try {
          s = Schedule::from_json(r.schedule_json);
        } catch (const Error&) {
          continue;  // a newer format is not ours to read
        }
        if (is_rule_default(s)) break;  // the donor's default: the rest were slower
        const std::optional<DefaultKnobs> knobs = rule_knobs(s);
        if (!same_class && !knobs) continue;
        const RuleSketch* rule = t.space->rule_sketch();
        if (knobs && !rule) continue;  // no tile to vary here: every knob set is the default
        taken++;
        out.donor_schedules++;
        out.across_class += !same_class;
        RefitResult fit;
        if (knobs) fit.schedule = rule->schedule(*knobs);
        else fit = refit(s, *t.space, outputs);
        if (!fit.ok()) {
          out.refused++;
          spdlog::debug("reuse: {} from {} ({}): not carried: {}", t.w->name, d.model, r.schedule_hash, fit.error);
          continue;
        }
        const std::string h = fit.schedule.hash();
        if (seen.insert(h).second) cands.push_back({std::move(fit.schedule), h, 0, false});
      }
    }
  }
  if (const RuleSketch* rule = network_decided ? t.space->rule_sketch() : nullptr)
    if (const std::optional<DefaultKnobs> k = rule->network_variant()) {
      Schedule v = rule->schedule(*k);
      const std::string h = v.hash();
      if (seen.insert(h).second) cands.push_back({std::move(v), h, t.default_s, false, true});
    }
  return cands;
}

// Measures the candidates not yet in `db` alone, records them, and reads every candidate's time.
void measure_standalone(Task& t, std::vector<Candidate>& cands, RecordsDB& db, const std::atomic<bool>* stop,
                        ReuseWorkload& out) {
  std::vector<Schedule> batch;
  for (const auto& c : cands)
    if (!c.in_network && !db.has(t.w->exact_key, c.hash)) batch.push_back(c.schedule);
  if (!batch.empty()) {
    const auto results = t.measurer->measure_batch(batch);
    if (stop && stop->load()) {  // its workers were interrupted too: not measurements
      cands.clear();
      return;
    }
    std::vector<Record> records;
    for (size_t k = 0; k < batch.size(); k++)
      records.push_back(make_record(*t.w, batch[k], results[k], kReusePolicy, t.features.get()));
    db.add(records);
  }
  std::map<std::string, double> best;  // hash -> fastest valid median of this machine, alone
  for (const auto& r : db.records(t.w->exact_key))
    if (r.valid() && r.policy != kNetworkConfirmPolicy && (!best.count(r.schedule_hash) || r.median < best[r.schedule_hash]))
      best[r.schedule_hash] = r.median;
  for (auto& c : cands) {
    if (c.in_network) continue;  // alone it runs as the default does
    if (auto it = best.find(c.hash); it != best.end()) c.standalone_s = it->second;
    if (c.standalone_s > 0 && !c.earlier) {
      out.measured++;
      if (out.best_standalone_s == 0 || c.standalone_s < out.best_standalone_s) out.best_standalone_s = c.standalone_s;
    }
  }
  std::erase_if(cands, [](const Candidate& c) { return c.standalone_s <= 0; });
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.standalone_s < b.standalone_s; });
}

// Evaluations per workload: `total` split by each one's share of the model time (largest
// remainders), none beyond the alternatives it has.
std::vector<int> allocate(int total, const std::vector<double>& time, const std::vector<int>& alternatives) {
  std::vector<int> n(time.size(), 0);
  double sum = 0;
  for (size_t i = 0; i < time.size(); i++) sum += alternatives[i] > 0 ? time[i] : 0;
  if (sum <= 0 || total <= 0) return n;
  std::vector<std::pair<double, size_t>> rest;
  int given = 0;
  for (size_t i = 0; i < time.size(); i++) {
    if (alternatives[i] == 0) continue;
    const double want = total * time[i] / sum;
    n[i] = std::min(alternatives[i], static_cast<int>(want));
    given += n[i];
    rest.push_back({want - std::floor(want), i});
  }
  std::sort(rest.rbegin(), rest.rend());
  for (const auto& [frac, i] : rest)
    if (given < total && n[i] < alternatives[i]) n[i]++, given++;
  return n;
}

double median_of(const std::vector<double>& v) { return v.empty() ? 0 : time_stats(v).median; }

// Per workload its alternatives to its choice (indices into its candidates, by standalone time;
// -1, the default, last where it has a choice), and its share of the model's time, which splits
// the evaluations.
void alternatives_of(const std::vector<Task>& tasks, const std::vector<std::vector<Candidate>>& cands,
                     const std::vector<int>& choice, std::vector<std::vector<int>>& alternatives, std::vector<double>& time) {
  alternatives.assign(tasks.size(), {});
  time.assign(tasks.size(), 0);
  for (size_t i = 0; i < tasks.size(); i++) {
    if (!tasks[i].summary.error.empty()) continue;
    time[i] = tasks[i].count * (choice[i] >= 0 ? cands[i][static_cast<size_t>(choice[i])].standalone_s : tasks[i].default_s);
    for (int k = 0; k < static_cast<int>(cands[i].size()); k++) {
      const Candidate& c = cands[i][static_cast<size_t>(k)];
      if (k == choice[i] || (c.in_network && choice[i] >= 0)) continue;  // a network variant is timed against the default only
      if (c.standalone_s < tasks[i].default_s * 1.25) alternatives[i].push_back(k);  // much slower alone is not worth a whole-model run
    }
    if (choice[i] >= 0) alternatives[i].push_back(-1);
  }
}

// The full phase (see the top of reuse.h): evaluation 0 with the standalone choices, then the
// allocated evaluations, a workload's next alternative each. Every evaluation times the default
// model, the best so far and the trial alternately in the same rounds (time_steps_in_models),
// and a change is kept when the steps of the workloads it changed got faster by kConfirmMargin,
// by their median and their fastest run, in the model: whole-model times drift on shared cores
// and the other steps add their noise, more than most changes are worth. A network
// variant's trial against the default is recorded as the pair that decides (network_refine.h).
// Returns per workload the index of its chosen candidate, -1 for the default.
std::vector<int> full_phase(const Graph& g, const std::vector<Task>& tasks, const std::vector<std::vector<Candidate>>& cands,
                            RecordsDB& db, const ReuseOptions& opts, Clock::time_point t0, ReuseSummary& sum,
                            const ReuseProgress& say) {
  const size_t n = tasks.size();
  const int threads = effective_threads(opts.e2e_threads);
  std::map<std::string, Schedule> chosen;  // by exact key
  std::set<std::string> changed;           // what evaluation 0 changes
  std::vector<int> choice(n, -1);          // index into cands[i]; -1 = the default
  for (size_t i = 0; i < n; i++)
    if (tasks[i].summary.error.empty() && !cands[i].empty() && !cands[i][0].in_network &&
        cands[i][0].standalone_s < tasks[i].default_s) {
      choice[i] = 0;
      chosen[tasks[i].w->exact_key] = cands[i][0].schedule;
      changed.insert(tasks[i].w->exact_key);
    }
  const auto inputs = random_inputs(g, 1);
  const int iters = std::max(1, opts.e2e_iters);
  const std::shared_ptr<CompiledModel> def = compile_model_with(g, {}, opts.measure.cache_root, threads);
  std::shared_ptr<CompiledModel> best = chosen.empty() ? def : compile_model_with(g, chosen, opts.measure.cache_root, threads);
  for (size_t i = 0; i < n; i++)  // a choice that did not compile runs the default in the model: not a choice
    if (choice[i] >= 0 && !runs_schedule(*best, tasks[i].w->exact_key, cands[i][0].hash)) {
      chosen.erase(tasks[i].w->exact_key);
      changed.erase(tasks[i].w->exact_key);
      choice[i] = -1;
    }
  std::vector<StepTimes> t = time_steps_in_models({def.get(), best.get()}, changed, inputs, iters);
  sum.default_latency_s = median_of(t[0].model);
  const bool kept0 = !chosen.empty() && steps_faster(t[0], t[1]);
  if (!kept0) {  // the standalone choices do not make the model faster: start from the default
    chosen.clear();
    std::fill(choice.begin(), choice.end(), -1);
    best = def;
  }
  sum.evaluations.push_back({0, seconds_since(t0), median_of(t[1].model), median_of(t[kept0 ? 1 : 0].model),
                             sum.default_latency_s, "", kept0, median_of(t[1].steps), median_of(t[0].steps)});
  if (say)
    say("full", fmt::format("evaluation 0 (standalone choices): {:.3f} ms, default {:.3f} ms; changed steps {:.3f} ms "
                            "against {:.3f} ms ({})", sum.evaluations[0].latency_s * 1e3, sum.default_latency_s * 1e3,
                            sum.evaluations[0].steps_s * 1e3, sum.evaluations[0].best_steps_s * 1e3,
                            kept0 ? "kept" : "discarded"));

  std::vector<std::vector<int>> alternatives;
  std::vector<double> time;
  alternatives_of(tasks, cands, choice, alternatives, time);
  std::vector<int> counts(n, 0);
  for (size_t i = 0; i < n; i++) counts[i] = static_cast<int>(alternatives[i].size());
  const std::vector<int> budget = allocate(opts.full_evals, time, counts);
  std::vector<size_t> by_time(n);
  for (size_t i = 0; i < n; i++) by_time[i] = i;
  std::stable_sort(by_time.begin(), by_time.end(), [&](size_t a, size_t b) { return time[a] > time[b]; });
  std::vector<int> tried(n, 0);
  for (int done = 0, round = 0; done < opts.full_evals && round < opts.full_evals; round++) {
    for (size_t i : by_time) {
      if (tried[i] >= budget[i] || done >= opts.full_evals || (opts.stop && opts.stop->load())) continue;
      // A network variant kept stays: it was timed against the default, and a standalone choice
      // after it would be confirmed alone, where the variant's gain does not show.
      if (choice[i] >= 0 && cands[i][static_cast<size_t>(choice[i])].in_network) continue;
      const int alt = alternatives[i][static_cast<size_t>(tried[i]++)];
      const Candidate* c = alt >= 0 ? &cands[i][static_cast<size_t>(alt)] : nullptr;
      if (c && c->in_network && choice[i] >= 0) continue;  // its record pairs it with the default only
      const std::string& key = tasks[i].w->exact_key;
      std::map<std::string, Schedule> trial = chosen;
      if (c) trial[key] = c->schedule;
      else trial.erase(key);
      const std::shared_ptr<CompiledModel> m = compile_model_with(g, trial, opts.measure.cache_root, threads);
      t = time_steps_in_models({def.get(), best.get(), m.get()}, {key}, inputs, iters);
      const bool compiled = !c || runs_schedule(*m, key, c->hash);
      const bool kept = compiled && steps_faster(t[1], t[2]);
      if (c && c->in_network && compiled)  // the best ran the default here: the pair that decides
        record_network_pair(db, *tasks[i].w, c->schedule, t[1], t[2], threads);
      if (kept) {
        chosen = std::move(trial);
        choice[i] = alt;
        best = m;
      }
      sum.evaluations.push_back({++done, seconds_since(t0), median_of(t[2].model), median_of(t[kept ? 2 : 1].model),
                                 median_of(t[0].model), tasks[i].w->name, kept, median_of(t[2].steps),
                                 median_of(t[1].steps), c && c->in_network});
      if (say)
        say("full", fmt::format("evaluation {}: {} {}{}: steps {:.3f} ms against {:.3f} ms ({}); model {:.3f} ms, "
                                "default {:.3f} ms", done, tasks[i].w->name, c ? c->hash : "default",
                                c && c->in_network ? " (network variant)" : "", sum.evaluations.back().steps_s * 1e3,
                                sum.evaluations.back().best_steps_s * 1e3,
                                kept ? "kept" : compiled ? "discarded" : "did not compile", sum.evaluations.back().latency_s * 1e3,
                                sum.evaluations.back().default_s * 1e3));
    }
  }
  for (size_t i = 0; i < n; i++) sum.workloads[i].chosen = choice[i] >= 0 ? cands[i][static_cast<size_t>(choice[i])].hash : "";
  return choice;
}

// Makes the full phase's choices what run and compile use (tune/tuner.h, confirm_schedule): each
// chosen schedule is re-measured against the default, interleaved; where the default was kept
// while run would use another schedule (a reuse record fastest alone, an earlier winner the full
// phase weighed), that decision is recorded as the default re-measured against itself; but not
// where the model itself decided (tune/network_refine.h): alone, that variant measures the same
// as the default, and a standalone pair would undo the decision.
void confirm_choices(std::vector<Task>& tasks, const std::vector<std::vector<Candidate>>& cands,
                     const std::vector<int>& choice, RecordsDB& db, const ReuseOptions& opts, ReuseSummary& sum,
                     const ReuseProgress& say) {
  const int threads = effective_threads(opts.measure.threads);  // the confirmations' (confirm_schedule)
  for (size_t i = 0; i < tasks.size() && !(opts.stop && opts.stop->load()); i++) {
    if (cands[i].empty() || !tasks[i].summary.error.empty()) continue;
    Schedule winner = tasks[i].measurer->default_schedule();
    if (choice[i] >= 0 && cands[i][static_cast<size_t>(choice[i])].in_network) {
      // The full phase recorded it, at the model's thread count.
      auto c = latest_confirmation(db, tasks[i].w->exact_key, effective_threads(opts.e2e_threads));
      sum.workloads[i].confirmed = c && c->faster();
      if (say) say("confirm", fmt::format("{}: {} kept in the model (its pair decides)", tasks[i].w->name, sum.workloads[i].chosen));
      continue;
    }
    if (choice[i] >= 0) {
      winner = cands[i][static_cast<size_t>(choice[i])].schedule;
    } else if (const auto used = used_record(db, tasks[i].w->exact_key, threads); !used) {
      continue;  // the default runs already
    } else if (used->policy == kNetworkConfirmPolicy) {  // what the whole model chose earlier stays
      sum.workloads[i].chosen = used->schedule_hash;
      sum.workloads[i].confirmed = true;
      continue;
    }
    if (!confirm_schedule(tasks[i], db, winner, opts.confirm_rounds, opts.stop)) continue;
    auto c = latest_confirmation(db, tasks[i].w->exact_key, threads);
    sum.workloads[i].confirmed = c && c->faster();
    if (say)
      say("confirm", fmt::format("{}: {} {}", tasks[i].w->name, choice[i] >= 0 ? sum.workloads[i].chosen : "default",
                                 sum.workloads[i].confirmed ? "confirmed faster than the default" : "runs the default"));
  }
}

}  // namespace

ReuseSummary reuse_tune(const Graph& g, RecordsDB& db, const ReuseOptions& opts, const ReuseProgress& progress) {
  const auto t0 = Clock::now();
  auto stopped = [&] { return opts.stop && opts.stop->load(); };
  ReuseSummary sum;
  sum.model = model_name(g.path);
  std::vector<std::unique_ptr<RecordsDB>> dbs;
  std::vector<Donor> donors;
  for (const auto& path : opts.donor_dbs) {
    dbs.push_back(std::make_unique<RecordsDB>(path, RecordsDB::Open::MustExist));
    dbs.back()->set_allow_foreign(true);  // re-measured here before anything trusts them
    for (auto& d : donors_in(*dbs.back())) donors.push_back(std::move(d));
  }
  const Partition part = partition_graph(g);
  record_model(db, g, part);
  TuneOptions to;
  to.measure = opts.measure;
  to.stop = opts.stop;
  std::vector<Task> tasks = make_tasks(part, db, kReusePolicy, to);
  const int model_threads = effective_threads(opts.e2e_threads);  // the full phase's models'
  const int measure_threads = effective_threads(opts.measure.threads);
  sum.classes = classes_of(tasks);
  for (const auto& d : donors) {
    sum.donors.push_back(score(d, sum.classes, model_threads));
    if (!usable(sum.donors.back(), opts.across_classes) && d.model != sum.model)
      spdlog::warn("{}: model {} has no tuned workload of a class {} holds{} (a database written before class keys "
                   "became operation sequences matches nothing: tune that model again)",
                   d.db->path(), d.model, sum.model, opts.across_classes ? ", nor of an anchor" : "");
  }
  choose(sum.donors, opts.donor, sum.model, opts.across_classes);
  std::vector<std::string> warnings;  // records of the target that no longer parse: not candidates
  const std::map<std::string, Schedule> current = best_schedules(part, db, warnings, measure_threads);

  std::vector<std::vector<Candidate>> cands(tasks.size());
  for (size_t i = 0; i < tasks.size(); i++) {
    Task& t = tasks[i];
    ReuseWorkload rw;
    rw.key_hash = t.w->key_hash();
    rw.name = t.w->name;
    rw.count = t.count;
    rw.default_s = t.default_s;
    for (const auto& c : sum.classes)
      if (c.class_key == t.w->class_key) rw.class_label = c.label;
    rw.error = t.summary.error;
    if (rw.error.empty() && !stopped()) {
      std::optional<Current> now;
      if (auto it = current.find(t.w->exact_key); it != current.end()) {
        const std::optional<Record> used = used_record(db, t.w->exact_key, measure_threads);
        now = Current{it->second, used && used->policy == kNetworkConfirmPolicy};
      }
      cands[i] = refit_candidates(t, donors, sum.donors, opts.per_donor_workload, model_threads, opts.across_classes, now, rw);
      measure_standalone(t, cands[i], db, opts.stop, rw);
    }
    if (progress)
      progress("standalone", fmt::format("[{}/{}] {} (class {}): {} donor schedules ({} across classes), {} not carried, "
                                         "{} measured, best {:.4f} ms (default {:.4f})",
                                         i + 1, tasks.size(), rw.name, rw.class_label, rw.donor_schedules,
                                         rw.across_class, rw.refused,
                                         rw.measured, rw.best_standalone_s * 1e3, rw.default_s * 1e3));
    sum.workloads.push_back(std::move(rw));
  }
  sum.standalone_seconds = seconds_since(t0);
  if (!stopped()) {
    const std::vector<int> choice = full_phase(g, tasks, cands, db, opts, t0, sum, progress);
    confirm_choices(tasks, cands, choice, db, opts, sum, progress);
  }
  if (!stopped())
    std::tie(sum.e2e_default_s, sum.e2e_reused_s) =
        end_to_end(g, part, db, opts.measure.cache_root, model_threads, std::max(1, opts.e2e_iters));
  sum.stopped = stopped();
  sum.seconds = seconds_since(t0);
  return sum;
}

nlohmann::json reuse_json(const ReuseSummary& s) {
  nlohmann::json classes = nlohmann::json::array(), donors = nlohmann::json::array(),
                 workloads = nlohmann::json::array(), evals = nlohmann::json::array();
  for (const auto& c : s.classes)
    classes.push_back({{"label", c.label}, {"name", c.name}, {"class_key", c.class_key}, {"workloads", c.workloads},
                       {"share", c.share}});
  for (const auto& d : s.donors)
    donors.push_back({{"model", d.model}, {"db", d.db}, {"per_class", d.per_class}, {"score", d.score},
                      {"per_anchor", d.per_anchor}, {"anchor_score", d.anchor_score}, {"chosen", d.chosen}});
  for (const auto& w : s.workloads)
    workloads.push_back({{"key", w.key_hash}, {"name", w.name}, {"class", w.class_label}, {"count", w.count},
                         {"default_ms", w.default_s * 1e3}, {"donor_schedules", w.donor_schedules},
                         {"refused", w.refused}, {"across_class", w.across_class}, {"measured", w.measured},
                         {"best_standalone_ms", w.best_standalone_s * 1e3}, {"chosen", w.chosen},
                         {"confirmed", w.confirmed}, {"error", w.error}});
  for (const auto& e : s.evaluations)
    evals.push_back({{"index", e.index}, {"seconds", e.seconds}, {"latency_ms", e.latency_s * 1e3},
                     {"best_ms", e.best_s * 1e3}, {"default_ms", e.default_s * 1e3}, {"workload", e.workload},
                     {"kept", e.kept}, {"steps_ms", e.steps_s * 1e3}, {"best_steps_ms", e.best_steps_s * 1e3},
                     {"network_variant", e.network_variant}});
  return {{"model", s.model}, {"classes", classes}, {"donors", donors}, {"workloads", workloads},
          {"default_ms", s.default_latency_s * 1e3}, {"evaluations", evals},
          {"e2e_default_ms", s.e2e_default_s * 1e3}, {"e2e_reused_ms", s.e2e_reused_s * 1e3},
          {"speedup", s.e2e_reused_s > 0 ? s.e2e_default_s / s.e2e_reused_s : 0.0},
          {"standalone_seconds", s.standalone_seconds}, {"seconds", s.seconds}, {"stopped", s.stopped}};
}

std::string donor_table(const ReuseSummary& s) {
  std::string out = fmt::format("{:<24}", "class");
  for (const auto& c : s.classes) out += fmt::format(" {:>6}", c.label);
  out += fmt::format(" {:>8} {:>8}\n{:<24}", "score", "anchors", "share of " + s.model);
  for (const auto& c : s.classes) out += fmt::format(" {:>5.1f}%", 100 * c.share);
  out += "\n";
  for (const auto& d : s.donors) {
    out += fmt::format("{:<24}", (d.chosen ? "* " : "  ") + d.model);
    for (const auto& c : s.classes) {
      auto it = d.per_class.find(c.label);
      out += fmt::format(" {:>6}", it == d.per_class.end() ? 0 : it->second);
    }
    out += fmt::format(" {:>8.4f} {:>8.4f}\n", d.score, d.anchor_score);
  }
  for (const auto& c : s.classes) out += fmt::format("  {}: {} ({} workloads)\n", c.label, c.name, c.workloads);
  return out;
}

}  // namespace ts
