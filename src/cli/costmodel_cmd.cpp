// `tensorsched costmodel eval --db FILE`: how well a cost model predicts the records of a tuning
// database on workloads it has not seen (leave-workloads-out cross validation), and optionally
// train it on every record and save it.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli/commands.h"
#include "costmodel/cost_model.h"
#include "costmodel/metrics.h"
#include "features/features.h"
#include "graph/error.h"
#include "schedule/default_schedule.h"
#include "tune/records_db.h"

namespace ts {

namespace {

struct EvalArgs {
  std::string db;                    // the records database
  std::string model = "gbt-rank";    // make_cost_model() name
  int folds = 5;                     // K of the cross validation (capped at the number of workloads)
  std::vector<int> top_k = {1, 5, 10};  // k of the top-k recalls
  uint64_t seed = 0;                 // fold assignment and model seed
  bool json = false;                 // print JSON instead of a table
  std::string save;                  // train on every record and save the model here ("" = don't)
  bool train_without_rule = false;   // folds train without the default rule's records (its schedule and variants), test on all
};

// The usable records: valid, with features of the newest version present in the database.
struct Dataset {
  std::vector<CostSample> samples;
  std::vector<std::string> workload;  // key hash of each sample (folds split on it)
  std::vector<bool> from_rule;        // the sample's schedule is the default rule's or a variant's (Schedule::origin)
  std::map<std::string, std::string> names;  // key hash -> workload name
  int features_version = 0;
  size_t records = 0, valid = 0, older_version = 0;  // for the report
};

Dataset load_dataset(const RecordsDB& db) {
  Dataset d;
  std::vector<Record> usable;
  for (const auto& w : db.workloads())
    for (auto& r : db.records(w.exact_key)) {
      ++d.records;
      if (!r.valid()) continue;
      ++d.valid;
      if (r.features.empty() || !(r.median > 0)) continue;
      d.features_version = std::max(d.features_version, r.features_version);
      usable.push_back(std::move(r));
    }
  if (usable.empty())
    throw Error(fmt::format(
        "{}: no valid records with features ({} records, {} valid); `tensorsched tune MODEL --db {}` stores the "
        "features of every schedule it measures (except autoscheduler recipes, which have none)",
        db.path(), d.records, d.valid, db.path()));
  // Times are only comparable on one machine: with several, rank within (workload, machine).
  std::set<std::string> machines;
  for (const auto& r : usable) machines.insert(r.machine);
  for (auto& r : usable) {
    if (r.features_version != d.features_version) {
      ++d.older_version;
      continue;
    }
    const std::string& key = r.workload.key_hash;
    d.names[key] = r.workload.name;
    d.workload.push_back(key);
    bool rule = false;
    try {
      rule = rule_knobs(Schedule::from_json(r.schedule_json)).has_value();
    } catch (const Error&) {
    }
    d.from_rule.push_back(rule);
    d.samples.push_back({machines.size() > 1 ? key + "@" + r.machine : key, std::move(r.features), r.median});
  }
  return d;
}

struct FoldResult {
  std::vector<std::string> workloads;  // held-out key hashes
  size_t train_samples = 0;
  double train_seconds = 0;  // wall time of update()
  CostMetrics metrics;       // over the held-out samples
};

// Splits vectors by sample index.
template <typename T>
std::vector<T> pick(const std::vector<T>& v, const std::vector<size_t>& idx) {
  std::vector<T> out;
  out.reserve(idx.size());
  for (size_t i : idx) out.push_back(v[i]);
  return out;
}

int eval_command(const EvalArgs& a) {
  RecordsDB db(a.db, RecordsDB::Open::MustExist);
  Dataset d = load_dataset(db);
  std::vector<std::string> keys;
  for (const auto& [k, n] : d.names) keys.push_back(k);  // sorted: the split depends only on the seed
  if (a.folds > 0 && keys.size() < 2)
    throw Error(fmt::format("{}: leave-workloads-out cross validation needs records of 2 or more workloads, found {} "
                            "({}); tune more workloads, or pass --folds 0 with --save to train only",
                            a.db, keys.size(), keys.empty() ? "" : d.names[keys[0]]));
  if (a.folds == 1) throw Error("costmodel eval: --folds must be 0 (no evaluation) or at least 2");
  if (a.folds == 0 && a.save.empty()) throw Error("costmodel eval: --folds 0 evaluates nothing; add --save PATH");
  if (d.features_version != kFeaturesVersion)
    spdlog::warn("{}: features version {} (this tensorsched extracts version {})", a.db, d.features_version,
                 kFeaturesVersion);

  const size_t k = std::min(static_cast<size_t>(std::max(a.folds, 0)), keys.size());
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(a.seed));
  std::map<std::string, size_t> fold_of;
  for (size_t i = 0; i < keys.size(); ++i) fold_of[keys[i]] = k > 0 ? i % k : 0;

  std::vector<FoldResult> folds(k);
  std::vector<double> all_pred, all_time;
  std::vector<std::string> all_group;
  bool seconds = false;
  for (size_t f = 0; f < k; ++f) {
    std::vector<size_t> train, test;
    for (size_t i = 0; i < d.samples.size(); ++i) {
      if (fold_of[d.workload[i]] == f) test.push_back(i);
      else if (!(a.train_without_rule && d.from_rule[i])) train.push_back(i);
    }
    for (const auto& key : keys)
      if (fold_of[key] == f) folds[f].workloads.push_back(key);
    auto model = make_cost_model(a.model, a.seed);
    seconds = model->predicts_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    model->update(pick(d.samples, train));
    folds[f].train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    folds[f].train_samples = train.size();
    std::vector<std::vector<float>> x;
    std::vector<double> t;
    std::vector<std::string> g;
    for (size_t i : test) {
      x.push_back(d.samples[i].features);
      t.push_back(d.samples[i].seconds);
      g.push_back(d.samples[i].group);
    }
    const std::vector<double> p = model->predict(x);
    folds[f].metrics = evaluate_cost_predictions(p, t, g, seconds, a.top_k);
    all_pred.insert(all_pred.end(), p.begin(), p.end());
    all_time.insert(all_time.end(), t.begin(), t.end());
    all_group.insert(all_group.end(), g.begin(), g.end());
  }

  nlohmann::json j = {{"db", a.db},
                      {"model", a.model},
                      {"features_version", d.features_version},
                      {"records", d.records},
                      {"valid_records", d.valid},
                      {"samples", d.samples.size()},
                      {"skipped_older_features", d.older_version},
                      {"workloads", keys.size()},
                      {"rule_samples", std::count(d.from_rule.begin(), d.from_rule.end(), true)},
                      {"train_without_rule", a.train_without_rule},
                      {"seed", a.seed}};
  if (k > 0) {
    const CostMetrics overall = evaluate_cost_predictions(all_pred, all_time, all_group, seconds, a.top_k);
    nlohmann::json fj = nlohmann::json::array();
    for (size_t f = 0; f < k; ++f)
      fj.push_back({{"fold", f},
                    {"workloads", folds[f].workloads},
                    {"train_samples", folds[f].train_samples},
                    {"train_seconds", folds[f].train_seconds},
                    {"metrics", folds[f].metrics.to_json()}});
    j["folds"] = fj;
    j["overall"] = overall.to_json();
    if (!a.json) {
      std::cout << fmt::format("{}: {} samples of {} workloads (features v{}{}; {} of the default rule), model {}, "
                               "{}-fold leave-workloads-out{}\n",
                               a.db, d.samples.size(), keys.size(), d.features_version,
                               d.older_version ? fmt::format(", {} older skipped", d.older_version) : "",
                               std::count(d.from_rule.begin(), d.from_rule.end(), true), a.model, k,
                               a.train_without_rule ? ", trained without the rule's samples" : "");
      std::string head = fmt::format("{:<8} {:>9} {:>7} {:>7} {:>9}", "fold", "workloads", "train", "test", "pairwise");
      for (int kk : a.top_k) head += fmt::format(" {:>6}", fmt::format("top{}", kk));
      if (seconds) head += fmt::format(" {:>7} {:>7}", "r2", "mare");
      std::cout << head << fmt::format(" {:>8}\n", "train s");
      auto row = [&](const std::string& name, size_t nw, std::string train, const CostMetrics& m, std::string secs) {
        std::string s = fmt::format("{:<8} {:>9} {:>7} {:>7} {:>9.3f}", name, nw, train, m.samples, m.pairwise_accuracy);
        for (const auto& [kk, r] : m.top_k_recall) s += fmt::format(" {:>6.3f}", r);
        if (seconds) s += fmt::format(" {:>7.3f} {:>7.3f}", m.r2, m.mean_abs_rel_error);
        std::cout << s << fmt::format(" {:>8}\n", secs);
      };
      for (size_t f = 0; f < k; ++f)
        row(std::to_string(f), folds[f].workloads.size(), std::to_string(folds[f].train_samples), folds[f].metrics,
            fmt::format("{:.2f}", folds[f].train_seconds));
      row("overall", keys.size(), "", overall, "");
    }
  }
  if (!a.save.empty()) {
    auto model = make_cost_model(a.model, a.seed);
    model->update(d.samples);
    model->save(a.save);
    j["saved"] = a.save;
    if (!a.json)
      std::cout << fmt::format("saved {} trained on {} samples to {}\n", a.model, d.samples.size(), a.save);
  }
  if (a.json) std::cout << j.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_costmodel_command(CLI::App& app) {
  auto* cm = app.add_subcommand("costmodel", "Cost models: evaluate on a records database, train and save");
  cm->require_subcommand(1);
  auto a = std::make_shared<EvalArgs>();
  auto* e = cm->add_subcommand("eval", "Leave-workloads-out cross validation of a cost model on a records database");
  e->add_option("--db", a->db, "Records database (SQLite)")->required()->check(CLI::ExistingFile);
  e->add_option("--model", a->model, "Cost model")->capture_default_str()->check(CLI::IsMember(cost_model_names()));
  e->add_option("--folds", a->folds, "Folds K (workloads split into K groups; 0 = no evaluation, with --save)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  e->add_option("--top-k", a->top_k, "k of the top-k recalls, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  e->add_option("--seed", a->seed, "Seed of the fold split and the model")->capture_default_str();
  e->add_flag("--json", a->json, "Print JSON");
  e->add_flag("--train-without-rule", a->train_without_rule,
              "Train each fold without the default rule's records (its schedule and its variants), test on all: "
              "what a model that never saw the rule's schedules predicts");
  e->add_option("--save", a->save, "Train on every record and save the model to this file");
  on_command(e, [a] { return eval_command(*a); });
}

}  // namespace ts
