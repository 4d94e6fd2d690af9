#pragma once
// Gradient boosted trees (XGBoost) over the flat feature vector, as in AutoTVM (Chen et al.,
// section 4): a rank loss within each workload ("rank:pairwise", scores) or a regression of
// ln(seconds) ("reg:squarederror", seconds). Rank labels are AutoTVM's normalized throughput
// (best time in the group / time), rounded to `rank_levels` levels by default: XGBoost pairs any
// two different labels, and without rounding pairs that differ only by noise swamp the rest (on
// data where a large effect hides in noise the unrounded model ranked it far worse). An
// ensemble of bootstrapped models gives an uncertainty for exploration. Transfer (AutoTVM eq.
// 4): `base` is the output of a global model that this local one corrects, in the model's margin
// space: scores for gbt-rank, ln(seconds) for gbt-reg (so for gbt-reg, predict(x, base) =
// predict(x) * exp(base) for a model trained with a base, since such a model learns no
// intercept of its own).
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "costmodel/cost_model.h"

namespace ts {

struct GbtOptions {
  std::string objective = "rank:pairwise";  // "rank:pairwise" (scores) or "reg:squarederror" (ln seconds)
  int rank_levels = 16;                     // rank: label = round(levels * best / time); 0 = unrounded (AutoTVM)
  int rounds = 150;                         // boosting rounds per model
  int max_depth = 6;                        // tree depth limit
  double eta = 0.3;                         // learning rate
  double gamma = 1e-4;                      // min loss reduction to split (AutoTVM's value)
  double min_child_weight = 1;              // min hessian sum in a leaf
  double lambda = 1;                        // L2 regularization of leaf weights
  double subsample = 1;                     // fraction of rows per tree
  double colsample_bytree = 1;              // fraction of features per tree
  std::string tree_method = "hist";         // XGBoost tree_method ("hist", "exact", "approx")
  int max_bin = 64;                         // histogram bins per feature ("hist"): split search cost is linear in it
  int nthread = 1;                          // XGBoost threads for training and prediction
  uint64_t seed = 1;                        // seed of XGBoost and of the bootstrap
  int ensemble = 1;                         // models; > 1: each trained on a bootstrap (within groups) with its own seed

  nlohmann::json to_json() const;
  // Missing keys keep their defaults; throws Error for an unknown key or a bad value.
  static GbtOptions from_json(const nlohmann::json& j);
  // Throws Error for an unknown objective or an out-of-range value.
  void validate() const;
};

// Not copyable. predict() and predict_with_uncertainty() may run concurrently with each other
// and with update() (a mutex serializes use of the XGBoost handles, which are not thread-safe);
// load() may not (it replaces the options). Without a base, a model trained without one adds its
// own intercept (gbt-reg: the mean ln time); a given base takes the intercept's place.
class GbtModel : public CostModel {
 public:
  explicit GbtModel(GbtOptions opts = {});
  ~GbtModel() override;
  GbtModel(const GbtModel&) = delete;
  GbtModel& operator=(const GbtModel&) = delete;

  std::string name() const override;  // "gbt-rank" or "gbt-reg"
  bool predicts_seconds() const override;
  bool trained() const override;
  // Throws Error for no samples, feature vectors of different (or zero) lengths, a time that is
  // not positive, or a base of the wrong length; the previous model is kept then.
  void update(const std::vector<CostSample>& samples, const std::vector<double>& base = {}) override;
  // Mean over the ensemble. Throws Error when untrained or for vectors of the wrong length.
  std::vector<double> predict(const std::vector<std::vector<float>>& features,
                              const std::vector<double>& base = {}) const override;
  // One JSON file: options, feature count, intercept and each XGBoost model (UBJ, base64).
  void save(const std::string& path) const override;
  // Replaces options and model with the file's.
  void load(const std::string& path) override;

  struct Prediction {
    std::vector<double> mean;  // what predict() returns
    std::vector<double> std;   // standard deviation over the ensemble members (0 for one model)
  };
  Prediction predict_with_uncertainty(const std::vector<std::vector<float>>& features,
                                      const std::vector<double>& base = {}) const;

  const GbtOptions& options() const { return opts_; }
  // Length of the feature vectors the model was trained on (0 when untrained).
  size_t num_features() const;

 private:
  struct Impl;
  GbtOptions opts_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ts
