#pragma once
// AutoTVM's tuning loop (Chen et al., NeurIPS 2018, section 3 and Algorithm 1) as a SearchPolicy:
// a cost model on schedule features, trained online on the task's measurements, steers parallel
// simulated-annealing chains through the ScheduleSpace; the plan measured next is a
// diversity-aware subset of the best predicted schedules plus a few random ones.
//
// Reading guide
//  - Per task (workload), a TaskState: the feature extractor, the measured samples, the
//    persistent Markov chains, the local model and (with transfer) the global one, and the plan.
//  - propose() hands out the plan; when it is used up, or `plan_size` new measurements arrived,
//    the plan is rebuilt: retrain the local model, run simulated annealing from the persistent
//    chains with the model as energy (parallel chains, temperature from 1 to 0, early stop), keep
//    the top λ·b unmeasured schedules, pick (1−ε)·b of them greedily maximizing eq. 3
//    (predicted quality + α · newly covered schedule components), and add ε·b random draws.
//  - Until `min_samples` valid measurements exist (and without a global model) plans are random
//    (just enough of them), like AutoTVM's first batch.
//  - Beyond the paper: at each plan the fastest measured points of the space (up to 1/8 of the chains;
//    not the rule's nor an autoscheduler's) restart the chains the model rates lowest, as evolutionary
//    searches keep their best.
//  - Transfer (eq. 4): a global model trained once per task on other workloads' records (their
//    stored flat features are workload-invariant), and the local model trained on top of its
//    predictions (XGBoost base margin): f̂ = f̂_global + f̂_local.
//  - observe() also receives, before a resumed task starts, the task's earlier records (the
//    tuner replays them): the model learns from every measurement of the workload, the default
//    rule's schedule and its variants included. Halide's autoscheduler recipes have no features
//    and are skipped.
//  - Beyond the paper: the rule's micro-kernel sketch (ScheduleSpace::rule_sketch) is part of
//    the space searched: an eighth of the chains start at its points and move among them by
//    knob mutations, fast measured rule points restart chains like space points, and a quarter
//    of each batch (kRuleShare) goes to rule points near the fastest one measured or drawn at
//    random; once a plan was built with the model, kRulePool times as many are drawn and the
//    best predicted are measured.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"
#include "search/search_policy.h"

namespace ts {

struct GbtSaOptions {
  std::string model = "gbt-rank";  // cost model (make_cost_model)
  int plan_size = 16;              // b: schedules per plan; the model is retrained at least every b measurements
  double epsilon = 0.05;           // ε: fraction of a plan drawn at random (exploration)
  double lambda = 2;               // λ: the diverse subset is picked among the top λ·b predictions
  double alpha = 0.05;             // α: value of one newly covered component, on predicted quality scaled to [0, 1]
  int chains = 128;                // n_sa: parallel Markov chains
  int steps = 500;                 // step_sa: most annealing steps per plan
  int early_stop = 50;             // steps without a change of the top λ·b that end annealing
  int min_samples = 8;             // valid measurements of the task before the local model is used
  // Transfer: samples of other workloads (the argument: the task's workload key, to exclude).
  // Unset: no transfer.
  std::function<std::vector<CostSample>(const std::string& exclude_key)> transfer_samples;
};

class GbtSaSearch : public SearchPolicy {
 public:
  static constexpr double kRuleShare = 0.25;  // of each batch, to the rule sketch's points
  static constexpr size_t kRulePool = 4;      // rule points drawn per one measured, for the model to rank

  explicit GbtSaSearch(GbtSaOptions opts = {});
  ~GbtSaSearch() override;
  std::string name() const override { return opts_.transfer_samples ? "gbt-sa-transfer" : "gbt-sa"; }
  std::vector<Schedule> propose(const SearchTask& task, size_t n, std::mt19937_64& rng) override;
  void observe(const SearchTask& task, const std::vector<Schedule>& batch,
               const std::vector<MeasureResult>& results) override;

  // What the last plan of a task was built from (for logs and tests).
  struct PlanStats {
    int samples = 0;          // valid local samples the model was trained on
    bool model_used = false;  // false: the plan was random
    bool transfer = false;    // a global model contributed
    int sa_steps = 0;         // annealing steps run
    int candidates = 0;       // distinct unmeasured schedules in the top λ·b
    double seconds = 0;       // wall time of training, annealing and selection
  };
  PlanStats last_plan(const std::string& workload_key) const;

 private:
  struct TaskState;
  TaskState& state(const SearchTask& task);
  void rebuild_plan(const SearchTask& task, TaskState& ts, std::mt19937_64& rng);
  // Up to n points of the rule's sketch: the model's best of a drawn pool once it steers, else draws.
  std::vector<Schedule> ranked_rule_points(const SearchTask& task, TaskState& ts, size_t n, std::mt19937_64& rng);
  // Fetches the transfer model once per task and fits the local model on the task's samples.
  void train(const SearchTask& task, TaskState& ts);
  // The models' quality of each schedule (higher is better); those without features rank last.
  std::vector<double> predict(const SearchTask& task, TaskState& ts, const std::vector<Schedule>& ss) const;
  // Anneals the task's chains under the model; returns the best opts_.lambda x plan-size fresh
  // schedules it met, by hash, with their quality.
  std::map<std::string, std::pair<double, Schedule>> anneal(const SearchTask& task, TaskState& ts,
                                                            const std::function<bool(const std::string&)>& fresh,
                                                            std::mt19937_64& rng);

  GbtSaOptions opts_;
  std::map<std::string, std::unique_ptr<TaskState>> tasks_;  // by workload exact key
};

// Greedy maximization of eq. 3 of the AutoTVM paper: picks `k` of the candidates, each step the
// one adding the most quality (`quality`, higher is better, any scale: rescaled to [0, 1]) plus
// α per component (schedule_components) not covered yet. Returns indices into the candidates.
std::vector<size_t> diverse_subset(const std::vector<Schedule>& candidates, const std::vector<double>& quality,
                                   size_t k, double alpha);

}  // namespace ts
