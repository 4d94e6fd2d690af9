#pragma once
// CostModel: predicts how fast schedules of a workload run, from their features, and learns from
// measured records. See docs/design.md (src/costmodel/) and AutoTVM (Chen et al.), sections 3-5.
//
// Models here take the flat feature vector (features/features.h, ScheduleFeatures::flat) that
// the FeatureExtractor computes from a (PipelineView, Schedule); every model shares that
// extractor, so predicting a batch of (PipelineView, Schedule) is
// predict(extractor.flat(schedule) for each). A model trained with a rank loss predicts scores
// (higher = faster) rather than seconds: predicts_seconds() tells which.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ts {

// One measured schedule as a training example.
struct CostSample {
  std::string group;            // the workload it belongs to (key hash): rank losses compare within a group
  std::vector<float> features;  // ScheduleFeatures::flat
  double seconds = 0;           // measured median time (> 0)
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // true: predict() returns seconds; false: scores where higher means faster.
  virtual bool predicts_seconds() const = 0;
  // Whether update() has trained the model (predict() on an untrained model throws Error).
  virtual bool trained() const = 0;
  // Retrains on `samples` (online use passes every record so far). `base` (empty, or one value
  // per sample) is added to the model's output: the prediction of a global model that this
  // local one corrects (transfer, AutoTVM eq. 4).
  virtual void update(const std::vector<CostSample>& samples, const std::vector<double>& base = {}) = 0;
  // One value per feature vector; `base` as in update().
  virtual std::vector<double> predict(const std::vector<std::vector<float>>& features,
                                      const std::vector<double>& base = {}) const = 0;
  // Writes / reads the trained model; errors name the file and the reason.
  virtual void save(const std::string& path) const = 0;
  virtual void load(const std::string& path) = 0;
};

}  // namespace ts

namespace ts {

// Names accepted by make_cost_model(): "gbt-rank" (XGBoost, rank:pairwise), "gbt-reg"
// (XGBoost, reg:squarederror on log time).
const std::vector<std::string>& cost_model_names();
// A fresh, untrained model; throws Error naming the model and the known ones when unknown.
std::unique_ptr<CostModel> make_cost_model(const std::string& name, uint64_t seed = 0);

}  // namespace ts
