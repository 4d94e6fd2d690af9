#include "costmodel/gbt_model.h"

#include <fmt/format.h>
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "graph/base64.h"
#include "graph/error.h"

namespace ts {

namespace {

constexpr int kFileVersion = 1;
constexpr const char* kFileFormat = "tensorsched-gbt";

void xgb_check(int rc, const char* what) {
  if (rc != 0) throw Error(fmt::format("XGBoost {}: {}", what, XGBGetLastError()));
}

struct BoosterDeleter {
  void operator()(void* h) const { XGBoosterFree(h); }
};
using Booster = std::unique_ptr<void, BoosterDeleter>;

struct DMatrixDeleter {
  void operator()(void* h) const { XGDMatrixFree(h); }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;


bool is_rank(const std::string& objective) { return objective == "rank:pairwise"; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Options

nlohmann::json GbtOptions::to_json() const {
  return {{"objective", objective},
          {"rank_levels", rank_levels},
          {"rounds", rounds},
          {"max_depth", max_depth},
          {"eta", eta},
          {"gamma", gamma},
          {"min_child_weight", min_child_weight},
          {"lambda", lambda},
          {"subsample", subsample},
          {"colsample_bytree", colsample_bytree},
          {"tree_method", tree_method},
          {"max_bin", max_bin},
          {"nthread", nthread},
          {"seed", seed},
          {"ensemble", ensemble}};
}

GbtOptions GbtOptions::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("GBT options: not a JSON object");
  GbtOptions o;
  for (const auto& [k, v] : j.items()) {
    try {
      if (k == "objective") o.objective = v.get<std::string>();
      else if (k == "rank_levels") o.rank_levels = v.get<int>();
      else if (k == "rounds") o.rounds = v.get<int>();
      else if (k == "max_depth") o.max_depth = v.get<int>();
      else if (k == "eta") o.eta = v.get<double>();
      else if (k == "gamma") o.gamma = v.get<double>();
      else if (k == "min_child_weight") o.min_child_weight = v.get<double>();
      else if (k == "lambda") o.lambda = v.get<double>();
      else if (k == "subsample") o.subsample = v.get<double>();
      else if (k == "colsample_bytree") o.colsample_bytree = v.get<double>();
      else if (k == "tree_method") o.tree_method = v.get<std::string>();
      else if (k == "max_bin") o.max_bin = v.get<int>();
      else if (k == "nthread") o.nthread = v.get<int>();
      else if (k == "seed") o.seed = v.get<uint64_t>();
      else if (k == "ensemble") o.ensemble = v.get<int>();
      else throw Error(fmt::format("GBT options: unknown key \"{}\"", k));
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("GBT options: bad value for \"{}\": {}", k, e.what()));
    }
  }
  o.validate();
  return o;
}

void GbtOptions::validate() const {
  if (objective != "rank:pairwise" && objective != "reg:squarederror")
    throw Error(fmt::format("GBT options: unknown objective \"{}\" (rank:pairwise or reg:squarederror)", objective));
  if (rank_levels < 0) throw Error(fmt::format("GBT options: rank_levels must be >= 0, got {}", rank_levels));
  if (rounds < 1) throw Error(fmt::format("GBT options: rounds must be >= 1, got {}", rounds));
  if (max_depth < 1) throw Error(fmt::format("GBT options: max_depth must be >= 1, got {}", max_depth));
  if (!(eta > 0)) throw Error(fmt::format("GBT options: eta must be > 0, got {}", eta));
  if (!(subsample > 0 && subsample <= 1)) throw Error(fmt::format("GBT options: subsample must be in (0, 1], got {}", subsample));
  if (!(colsample_bytree > 0 && colsample_bytree <= 1))
    throw Error(fmt::format("GBT options: colsample_bytree must be in (0, 1], got {}", colsample_bytree));
  if (!(gamma >= 0) || !(min_child_weight >= 0) || !(lambda >= 0))
    throw Error("GBT options: gamma, min_child_weight and lambda must be >= 0");
  if (max_bin < 2) throw Error(fmt::format("GBT options: max_bin must be >= 2, got {}", max_bin));
  if (nthread < 1) throw Error(fmt::format("GBT options: nthread must be >= 1, got {}", nthread));
  if (ensemble < 1) throw Error(fmt::format("GBT options: ensemble must be >= 1, got {}", ensemble));
  if (tree_method != "hist" && tree_method != "exact" && tree_method != "approx")
    throw Error(fmt::format("GBT options: unknown tree_method \"{}\" (hist, exact or approx)", tree_method));
}

// ---------------------------------------------------------------------------------------------
// Model

struct GbtModel::Impl {
  mutable std::mutex mu;          // guards everything below, and every call into XGBoost handles
  std::vector<Booster> boosters;  // the ensemble; empty when untrained
  size_t num_features = 0;        // feature vector length trained on
  double intercept = 0;           // added to the margin when no base is given (mean ln time for reg)
};

GbtModel::GbtModel(GbtOptions opts) : opts_(std::move(opts)), impl_(std::make_unique<Impl>()) { opts_.validate(); }

GbtModel::~GbtModel() = default;

std::string GbtModel::name() const { return is_rank(opts_.objective) ? "gbt-rank" : "gbt-reg"; }

bool GbtModel::predicts_seconds() const { return !is_rank(opts_.objective); }

bool GbtModel::trained() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return !impl_->boosters.empty();
}

size_t GbtModel::num_features() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->num_features;
}

namespace {

void set_params(void* h, const GbtOptions& o) {
  auto set = [&](const char* k, const std::string& v) { xgb_check(XGBoosterSetParam(h, k, v.c_str()), "SetParam"); };
  set("objective", o.objective);
  set("max_depth", std::to_string(o.max_depth));
  set("eta", fmt::format("{}", o.eta));
  set("gamma", fmt::format("{}", o.gamma));
  set("min_child_weight", fmt::format("{}", o.min_child_weight));
  set("lambda", fmt::format("{}", o.lambda));
  set("subsample", fmt::format("{}", o.subsample));
  set("colsample_bytree", fmt::format("{}", o.colsample_bytree));
  set("tree_method", o.tree_method);
  set("max_bin", std::to_string(o.max_bin));
  // The margin is base_margin + trees: we add the intercept or the caller's base ourselves.
  set("base_score", "0");
  set("verbosity", "1");
}

// The runtime-only parameter, set again after load (the saved model does not keep it).
void set_threads(void* h, int nthread) {
  xgb_check(XGBoosterSetParam(h, "nthread", std::to_string(nthread).c_str()), "SetParam");
}

}  // namespace

void GbtModel::update(const std::vector<CostSample>& samples, const std::vector<double>& base) {
  if (samples.empty()) throw Error(fmt::format("{}: update needs at least one sample", name()));
  if (!base.empty() && base.size() != samples.size())
    throw Error(fmt::format("{}: {} base values for {} samples", name(), base.size(), samples.size()));
  const size_t d = samples[0].features.size();
  if (d == 0) throw Error(fmt::format("{}: sample 0 has no features", name()));
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].features.size() != d)
      throw Error(fmt::format("{}: sample {} has {} features, sample 0 has {}", name(), i, samples[i].features.size(), d));
    if (!(samples[i].seconds > 0) || !std::isfinite(samples[i].seconds))
      throw Error(fmt::format("{}: sample {} has a time that is not positive ({})", name(), i, samples[i].seconds));
    if (!base.empty() && !std::isfinite(base[i]))
      throw Error(fmt::format("{}: base value {} is not finite", name(), i));
  }
  const bool rank = is_rank(opts_.objective);

  // Rank objectives need each group's rows contiguous; a sorted map also fixes the order.
  std::map<std::string, std::vector<size_t>> by_group;
  for (size_t i = 0; i < samples.size(); ++i) by_group[samples[i].group].push_back(i);

  // Labels: normalized throughput in (0, 1] within a group for rank (AutoTVM), ln time for reg.
  std::vector<float> label(samples.size());
  for (const auto& [g, idx] : by_group) {
    double best = samples[idx[0]].seconds;
    for (size_t i : idx) best = std::min(best, samples[i].seconds);
    for (size_t i : idx) {
      double l = rank ? best / samples[i].seconds : std::log(samples[i].seconds);
      // Pairwise rank forms pairs between any two labels that differ: rounding keeps pairs whose
      // times differ by more than noise, which otherwise outnumber the informative ones.
      if (rank && opts_.rank_levels > 0) l = std::round(l * opts_.rank_levels);
      label[i] = static_cast<float>(l);
    }
  }
  double intercept = 0;
  if (base.empty() && !rank) {
    for (float l : label) intercept += l;
    // Rounded as XGBoost's float base_margin sees it, so prediction adds exactly what training did.
    intercept = static_cast<float>(intercept / static_cast<double>(label.size()));
  }

  std::vector<Booster> boosters;
  for (int e = 0; e < opts_.ensemble; ++e) {
    // Rows of this member: all of them, or a bootstrap within each group (keeps groups intact).
    std::vector<size_t> rows;
    std::vector<unsigned> group_sizes;
    std::mt19937_64 rng(opts_.seed * 1000003 + static_cast<uint64_t>(e));
    for (const auto& [g, idx] : by_group) {
      if (opts_.ensemble == 1) {
        rows.insert(rows.end(), idx.begin(), idx.end());
      } else {
        std::uniform_int_distribution<size_t> pick(0, idx.size() - 1);
        for (size_t k = 0; k < idx.size(); ++k) rows.push_back(idx[pick(rng)]);
      }
      group_sizes.push_back(static_cast<unsigned>(idx.size()));
    }
    std::vector<float> x(rows.size() * d), y(rows.size()), margin(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      std::copy(samples[rows[r]].features.begin(), samples[rows[r]].features.end(), x.begin() + r * d);
      y[r] = label[rows[r]];
      margin[r] = static_cast<float>(base.empty() ? intercept : base[rows[r]]);
    }
    void* dm_raw = nullptr;
    xgb_check(XGDMatrixCreateFromMat_omp(x.data(), rows.size(), d, std::numeric_limits<float>::quiet_NaN(), &dm_raw,
                                         opts_.nthread),
              "DMatrixCreateFromMat");
    DMatrix dm(dm_raw);
    xgb_check(XGDMatrixSetFloatInfo(dm.get(), "label", y.data(), y.size()), "SetFloatInfo(label)");
    xgb_check(XGDMatrixSetFloatInfo(dm.get(), "base_margin", margin.data(), margin.size()), "SetFloatInfo(base_margin)");
    if (rank)
      xgb_check(XGDMatrixSetUIntInfo(dm.get(), "group", group_sizes.data(), group_sizes.size()), "SetUIntInfo(group)");

    void* h_raw = nullptr;
    void* dms[] = {dm.get()};
    xgb_check(XGBoosterCreate(dms, 1, &h_raw), "BoosterCreate");
    Booster h(h_raw);
    set_params(h.get(), opts_);
    set_threads(h.get(), opts_.nthread);
    const uint64_t seed = (opts_.seed + static_cast<uint64_t>(e)) & 0x7fffffff;  // XGBoost's seed is an int
    xgb_check(XGBoosterSetParam(h.get(), "seed", std::to_string(seed).c_str()), "SetParam");
    for (int it = 0; it < opts_.rounds; ++it) xgb_check(XGBoosterUpdateOneIter(h.get(), it, dm.get()), "UpdateOneIter");
    boosters.push_back(std::move(h));
  }

  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->boosters = std::move(boosters);
  impl_->num_features = d;
  impl_->intercept = intercept;
}

GbtModel::Prediction GbtModel::predict_with_uncertainty(const std::vector<std::vector<float>>& features,
                                                        const std::vector<double>& base) const {
  const size_t n = features.size();
  if (!base.empty() && base.size() != n)
    throw Error(fmt::format("{}: {} base values for {} feature vectors", name(), base.size(), n));
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->boosters.empty()) throw Error(fmt::format("{}: predict on an untrained model", name()));
  const size_t d = impl_->num_features;
  Prediction out{std::vector<double>(n, 0), std::vector<double>(n, 0)};
  if (n == 0) return out;
  std::vector<float> x(n * d);
  for (size_t i = 0; i < n; ++i) {
    if (features[i].size() != d)
      throw Error(fmt::format("{}: feature vector {} has {} values, the model was trained on {}", name(), i,
                              features[i].size(), d));
    std::copy(features[i].begin(), features[i].end(), x.begin() + i * d);
  }
  // In-place prediction from the dense array: no DMatrix to build (search calls this in a loop).
  const std::string array = fmt::format(R"({{"data": [{}, true], "shape": [{}, {}], "typestr": "<f4", "version": 3}})",
                                        reinterpret_cast<uintptr_t>(x.data()), n, d);
  const char* config =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false, "missing": NaN, "cache_id": 0})";
  const bool seconds = predicts_seconds();
  const size_t m = impl_->boosters.size();
  std::vector<double> sum(n, 0), sum_sq(n, 0);
  for (const auto& h : impl_->boosters) {
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* result = nullptr;
    xgb_check(XGBoosterPredictFromDense(h.get(), array.c_str(), config, nullptr, &shape, &dim, &result),
              "PredictFromDense");
    bst_ulong len = 1;
    for (bst_ulong k = 0; k < dim; ++k) len *= shape[k];
    if (len != n) throw Error(fmt::format("{}: XGBoost returned {} predictions for {} vectors", name(), len, n));
    for (size_t i = 0; i < n; ++i) {
      double v = static_cast<double>(result[i]) + (base.empty() ? impl_->intercept : base[i]);
      if (seconds) v = std::exp(v);
      sum[i] += v;
      sum_sq[i] += v * v;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    out.mean[i] = sum[i] / static_cast<double>(m);
    if (m > 1) out.std[i] = std::sqrt(std::max(0.0, sum_sq[i] / static_cast<double>(m) - out.mean[i] * out.mean[i]));
  }
  return out;
}

std::vector<double> GbtModel::predict(const std::vector<std::vector<float>>& features,
                                      const std::vector<double>& base) const {
  return predict_with_uncertainty(features, base).mean;
}

void GbtModel::save(const std::string& path) const {
  nlohmann::json j;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->boosters.empty()) throw Error(fmt::format("{}: cannot save an untrained {} model", path, name()));
    nlohmann::json models = nlohmann::json::array();
    for (const auto& h : impl_->boosters) {
      bst_ulong len = 0;
      const char* buf = nullptr;
      xgb_check(XGBoosterSaveModelToBuffer(h.get(), R"({"format": "ubj"})", &len, &buf), "SaveModelToBuffer");
      models.push_back(base64_encode(buf, len));
    }
    j = {{"format", kFileFormat},
         {"version", kFileVersion},
         {"name", name()},
         {"options", opts_.to_json()},
         {"num_features", impl_->num_features},
         {"intercept", impl_->intercept},
         {"boosters_ubj_base64", models}};
  }
  // Write then rename, so a crash never leaves a half-written model under `path`.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(fmt::format("{}: cannot write the model: {}", path, std::strerror(errno)));
    out << j.dump() << "\n";
    out.close();
    if (!out) throw Error(fmt::format("{}: writing the model failed", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw Error(fmt::format("{}: cannot write the model: {}", path, std::strerror(err)));
  }
}

void GbtModel::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the model file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not a GBT model file (not JSON: {})", path, e.what()));
  }
  if (!j.is_object() || j.value("format", "") != kFileFormat)
    throw Error(fmt::format("{}: not a GBT model file (format is not \"{}\")", path, kFileFormat));
  GbtOptions opts;
  size_t d = 0;
  double intercept = 0;
  std::vector<std::string> blobs;
  try {
    if (j.at("version").get<int>() != kFileVersion)
      throw Error(fmt::format("{}: GBT model file version {} (this tensorsched reads {})", path,
                              j.at("version").dump(), kFileVersion));
    opts = GbtOptions::from_json(j.at("options"));
    d = j.at("num_features").get<size_t>();
    intercept = j.at("intercept").get<double>();
    blobs = j.at("boosters_ubj_base64").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: bad GBT model file: {}", path, e.what()));
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind(path, 0) == 0 ? what : fmt::format("{}: bad GBT model file: {}", path, what));
  }
  if (blobs.empty() || d == 0) throw Error(fmt::format("{}: bad GBT model file: no model", path));
  std::vector<Booster> boosters;
  for (size_t k = 0; k < blobs.size(); ++k) {
    std::string raw;
    if (!base64_decode(blobs[k], raw))
      throw Error(fmt::format("{}: bad GBT model file: model {} is not base64", path, k));
    void* h_raw = nullptr;
    xgb_check(XGBoosterCreate(nullptr, 0, &h_raw), "BoosterCreate");
    Booster h(h_raw);
    if (XGBoosterLoadModelFromBuffer(h.get(), raw.data(), raw.size()) != 0)
      throw Error(fmt::format("{}: bad GBT model file: XGBoost cannot read model {}: {}", path, k, XGBGetLastError()));
    bst_ulong nf = 0;
    xgb_check(XGBoosterGetNumFeature(h.get(), &nf), "GetNumFeature");
    if (nf != d)
      throw Error(fmt::format("{}: bad GBT model file: model {} has {} features, the file says {}", path, k, nf, d));
    set_threads(h.get(), opts.nthread);
    boosters.push_back(std::move(h));
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  opts_ = opts;
  impl_->boosters = std::move(boosters);
  impl_->num_features = d;
  impl_->intercept = intercept;
}

}  // namespace ts
