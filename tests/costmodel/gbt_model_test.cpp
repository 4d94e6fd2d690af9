// The XGBoost cost model on synthetic data whose time is a known function of the features:
// ranking within workloads, regression of ln time, transfer through a base margin, ensembles,
// and model files (round trip, corrupt files).
#include "costmodel/gbt_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "costmodel/metrics.h"
#include "graph/error.h"
#include "support/onnx_builder.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

constexpr size_t kFeatures = 10;

// ln time = ln(work of the group) + a monotone function of features 1..3; feature 0 tells the
// group's work (as flat features do), the rest are noise. `slowdown` scales every time.
std::vector<CostSample> synthetic(size_t per_group, uint64_t seed, double slowdown = 1,
                                  std::vector<std::string> groups = {"g1", "g2", "g3"}) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<CostSample> out;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const double log_work = 2.0 * static_cast<double>(gi + 1);
    for (size_t i = 0; i < per_group; ++i) {
      CostSample s;
      s.group = groups[gi];
      s.features.resize(kFeatures);
      for (auto& f : s.features) f = u(rng);
      s.features[0] = static_cast<float>(log_work);
      const double x1 = s.features[1], x2 = s.features[2], x3 = s.features[3];
      s.seconds = slowdown * std::exp(log_work - 12 + 2.0 * x1 - 1.5 * x2 * x2 + std::exp(x3));
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<std::vector<float>> features_of(const std::vector<CostSample>& s) {
  std::vector<std::vector<float>> f;
  for (const auto& x : s) f.push_back(x.features);
  return f;
}

CostMetrics evaluate(const CostModel& m, const std::vector<CostSample>& test, const std::vector<double>& base = {}) {
  std::vector<double> t;
  std::vector<std::string> g;
  for (const auto& s : test) {
    t.push_back(s.seconds);
    g.push_back(s.group);
  }
  return evaluate_cost_predictions(m.predict(features_of(test), base), t, g, m.predicts_seconds());
}

fs::path temp_dir(const std::string& name) {
  auto dir = test::temp_dir() / name;
  fs::create_directories(dir);
  return dir;
}

GbtOptions fast(const std::string& objective) {
  GbtOptions o;
  o.objective = objective;
  o.rounds = 60;
  return o;
}

TEST(Gbt, RankOrdersHeldOutSchedules) {
  GbtModel m(fast("rank:pairwise"));
  EXPECT_EQ(m.name(), "gbt-rank");
  EXPECT_FALSE(m.predicts_seconds());
  EXPECT_FALSE(m.trained());
  m.update(synthetic(200, 1));
  EXPECT_TRUE(m.trained());
  EXPECT_EQ(m.num_features(), kFeatures);
  CostMetrics r = evaluate(m, synthetic(100, 2));
  EXPECT_GT(r.pairwise_accuracy, 0.9) << r.summary();
  EXPECT_EQ(r.groups, 3u);
}

TEST(Gbt, RegressionRecoversLogTime) {
  GbtModel m(fast("reg:squarederror"));
  EXPECT_EQ(m.name(), "gbt-reg");
  EXPECT_TRUE(m.predicts_seconds());
  m.update(synthetic(200, 1));
  CostMetrics r = evaluate(m, synthetic(100, 2));
  EXPECT_GT(r.r2, 0.9) << r.summary();
  EXPECT_GT(r.pairwise_accuracy, 0.9) << r.summary();
}

TEST(Gbt, BaseMarginCorrectsAGlobalModel) {
  // The global model learned on one machine; here every schedule runs 3x slower. A local model
  // trained on a few local records, with the global prediction (ln seconds) as base, corrects it.
  GbtModel global(fast("reg:squarederror"));
  global.update(synthetic(200, 1));
  auto local_train = synthetic(30, 3, 3.0), local_test = synthetic(100, 4, 3.0);
  auto log_pred = [&](const std::vector<CostSample>& s) {
    std::vector<double> b = global.predict(features_of(s));
    for (double& v : b) v = std::log(v);
    return b;
  };
  GbtModel local(fast("reg:squarederror"));
  local.update(local_train, log_pred(local_train));
  const std::vector<double> base = log_pred(local_test);
  const auto with = local.predict(features_of(local_test), base), without = local.predict(features_of(local_test));
  for (size_t i = 0; i < with.size(); ++i) ASSERT_NEAR(std::log(with[i]) - std::log(without[i]), base[i], 1e-5);
  // The correction is about ln 3; the global model alone is off by a factor 3.
  EXPECT_NEAR(std::log(without[0]), std::log(3.0), 0.3);
  const CostMetrics g = evaluate(global, local_test), l = evaluate(local, local_test, base);
  EXPECT_GT(g.mean_abs_rel_error, 0.5) << g.summary();
  EXPECT_LT(l.mean_abs_rel_error, 0.3) << l.summary();

  // For scores the base is added as is.
  GbtModel rank(fast("rank:pairwise"));
  rank.update(local_train, std::vector<double>(local_train.size(), 0.25));
  const std::vector<double> b(local_test.size(), 1.5);
  const auto s1 = rank.predict(features_of(local_test), b), s0 = rank.predict(features_of(local_test));
  for (size_t i = 0; i < s1.size(); ++i) ASSERT_NEAR(s1[i] - s0[i], 1.5, 1e-5);
  EXPECT_THROW(rank.predict(features_of(local_test), {1.0}), Error);
}

TEST(Gbt, SaveLoadRoundTrip) {
  GbtOptions o = fast("rank:pairwise");
  o.ensemble = 3;
  o.subsample = 0.8;
  GbtModel m(o);
  m.update(synthetic(60, 5));
  const auto path = (temp_dir("roundtrip") / "model.json").string();
  m.save(path);
  GbtModel loaded(fast("reg:squarederror"));  // the file's options replace these
  loaded.load(path);
  EXPECT_EQ(loaded.name(), "gbt-rank");
  EXPECT_EQ(loaded.options().ensemble, 3);
  EXPECT_EQ(loaded.num_features(), kFeatures);
  const auto test = features_of(synthetic(50, 6));
  const auto a = m.predict_with_uncertainty(test), b = loaded.predict_with_uncertainty(test);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.std, b.std);

  GbtModel reg(fast("reg:squarederror"));
  reg.update(synthetic(60, 5));
  reg.save(path);
  loaded.load(path);
  EXPECT_EQ(loaded.name(), "gbt-reg");
  EXPECT_EQ(reg.predict(test), loaded.predict(test));
}

TEST(Gbt, EnsembleGivesUncertainty) {
  GbtOptions o = fast("reg:squarederror");
  o.ensemble = 4;
  GbtModel m(o);
  m.update(synthetic(80, 7));
  const auto test = features_of(synthetic(40, 8));
  const auto p = m.predict_with_uncertainty(test);
  EXPECT_EQ(p.mean, m.predict(test));
  double max_std = 0;
  for (double s : p.std) max_std = std::max(max_std, s);
  EXPECT_GT(max_std, 0);
  // Deterministic: the same seed trains the same models.
  GbtModel again(o);
  again.update(synthetic(80, 7));
  EXPECT_EQ(again.predict(test), p.mean);
}

TEST(Gbt, ConcurrentPredictAgrees) {
  GbtModel m(fast("rank:pairwise"));
  m.update(synthetic(50, 9));
  const auto test = features_of(synthetic(30, 10));
  const auto want = m.predict(test);
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 20; ++k) got[t] = m.predict(test);
    });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(Gbt, UntrainedAndBadInputThrow) {
  GbtModel m;
  EXPECT_THROW(m.predict({{1.0f, 2.0f}}), Error);
  EXPECT_THROW(m.save((temp_dir("untrained") / "m.json").string()), Error);
  EXPECT_THROW(m.update({}), Error);
  auto s = synthetic(5, 1);
  s[3].features.pop_back();
  EXPECT_THROW(m.update(s), Error);
  s = synthetic(5, 1);
  s[2].seconds = 0;
  EXPECT_THROW(m.update(s), Error);
  EXPECT_FALSE(m.trained());
  m.update(synthetic(5, 1));
  EXPECT_THROW(m.predict({{1.0f, 2.0f}}), Error);  // wrong length
  EXPECT_TRUE(m.predict({}).empty());
  GbtOptions bad;
  bad.objective = "rank:ndcg2";
  EXPECT_THROW(GbtModel{bad}, Error);
}

TEST(Gbt, CorruptModelFileNamesTheFile) {
  const auto dir = temp_dir("corrupt");
  auto expect_error = [](const std::string& path, const std::string& reason) {
    GbtModel m;
    EXPECT_TRUE(test::throws_naming<Error>([&] { m.load(path); }, {path, reason}));
    EXPECT_FALSE(m.trained());
  };
  expect_error((dir / "missing.json").string(), "cannot open");
  const auto garbage = (dir / "garbage.json").string();
  std::ofstream(garbage) << "not a model at all";
  expect_error(garbage, "not JSON");
  const auto other = (dir / "other.json").string();
  std::ofstream(other) << R"({"format": "something-else"})";
  expect_error(other, "not a GBT model file");

  // A real model whose XGBoost bytes are damaged.
  GbtModel m(fast("rank:pairwise"));
  m.update(synthetic(20, 1));
  const auto good = (dir / "good.json").string();
  m.save(good);
  std::ifstream in(good);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("boosters_ubj_base64");
  ASSERT_NE(at, std::string::npos);
  const auto start = text.find('"', text.find('[', at)) + 1;
  text.replace(start, 40, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
  const auto damaged = (dir / "damaged.json").string();
  std::ofstream(damaged) << text;
  expect_error(damaged, "XGBoost");
  const auto truncated = (dir / "truncated.json").string();
  std::ofstream(truncated) << text.substr(0, text.size() / 2);
  expect_error(truncated, "not JSON");
}

}  // namespace
}  // namespace ts
