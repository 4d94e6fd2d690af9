#include "tune/featurize.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>

#include "features/features.h"
#include "graph/error.h"
#include "graph/workload_onnx.h"
#include "measure/workload_compiler.h"
#include "schedule/default_schedule.h"
#include "schedule/schedule_space.h"

namespace ts {

namespace {

// What a workload's records are featurized with: its pipeline and the space the tuner builds.
struct Featurizer {
  Workload w;
  LoweredWorkload lw;
  std::unique_ptr<ScheduleSpace> space;
  std::unique_ptr<FeatureExtractor> fx;

  explicit Featurizer(Workload workload) : w(std::move(workload)), lw(lower_workload(w)) {
    SpaceOptions sopts;
    sopts.vector_bytes = native_vector_bytes(Halide::get_host_target());
    space = std::make_unique<ScheduleSpace>(lw.outputs, host_code_target(), space_options_for(w, sopts));
    fx = std::make_unique<FeatureExtractor>(*space);
  }

  // The record's features, or none when its schedule cannot have any.
  std::vector<float> features_of(const Record& r) const {
    Schedule s;
    try {
      s = Schedule::from_json(r.schedule_json);
    } catch (const Error&) {
      return {};  // a newer format
    }
    if (s.autoscheduler) {
      const std::optional<DefaultKnobs> knobs = rule_knobs(s);
      if (!knobs) return {};
      s = default_schedule(lw.outputs, host_code_target(), *knobs);  // the old recipe, converted
    }
    try {
      return fx->flat(s);
    } catch (const Error& e) {
      spdlog::debug("featurize: record {} of {}: no features: {}", r.id, w.name, e.what());
      return {};
    }
  }
};

}  // namespace

FeaturizeSummary featurize_records(RecordsDB& db, bool force, const std::function<void(const std::string&)>& progress) {
  FeaturizeSummary sum;
  for (const WorkloadEntry& e : db.workloads()) {
    sum.workloads++;
    const std::string bytes = db.subgraph(e.exact_key);
    if (bytes.empty()) {
      sum.without_subgraph++;
      continue;
    }
    std::unique_ptr<Featurizer> f;
    try {
      f = std::make_unique<Featurizer>(workload_from_subgraph(bytes, fmt::format("{}: workload {}", db.path(), e.key_hash)));
    } catch (const Error& err) {
      sum.failed_workloads++;
      sum.errors.push_back(fmt::format("workload {} ({}): {}", e.key_hash, e.name, err.what()));
      continue;
    }
    std::vector<std::pair<int64_t, std::vector<float>>> done;
    for (const Record& r : db.records(e.exact_key)) {
      sum.records++;
      if (!force && r.features_version == kFeaturesVersion && !r.features.empty()) {
        sum.current++;
        continue;
      }
      const std::vector<float> x = f->features_of(r);
      if (x.empty()) {
        sum.without_features++;
        continue;
      }
      done.emplace_back(r.id, x);
    }
    db.set_features(done, kFeaturesVersion);
    sum.featurized += static_cast<int64_t>(done.size());
    if (progress) progress(fmt::format("{} ({}): {} records featurized", e.key_hash, e.name, done.size()));
  }
  return sum;
}

}  // namespace ts
