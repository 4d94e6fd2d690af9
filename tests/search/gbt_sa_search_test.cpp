// gbt-sa (AutoTVM's loop): plans are valid, distinct, unmeasured schedules of the space; once
// trained, the cost model steers the plan toward what measured fast; transfer lets a global
// model steer the first plan; the diverse subset prefers new components at equal quality.
#include "search/gbt_sa_search.h"

#include <gtest/gtest.h>

#include <iostream>
#include <set>

#include "analysis/pipeline_view.h"
#include "api/compile_model.h"
#include "schedule/rule_sketch.h"
#include "features/features.h"
#include "measure/workload_compiler.h"
#include "search/schedule_mutation.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

// A stand-in for the machine: schedules that run the output in parallel are 4x faster.
// (Real measurements are the Measurer's tests; here the search's behaviour is what is checked.)
// (The output is the first decision of every space.)
std::string output_name;
MeasureResult synthetic_measure(const Schedule& s) {
  const StageSchedule* out = s.find(output_name, 0);
  const bool par = out && !out->parallel.empty();
  MeasureResult m;
  m.median = (par ? 1e-4 : 4e-4) * (1 + static_cast<double>(std::hash<std::string>{}(s.hash()) % 100) / 1000);
  m.times = {m.median};
  m.min = m.median;
  return m;
}

bool output_parallel(const Schedule& s) { return synthetic_measure(s).median < 2e-4; }

struct Fixture {
  Workload w = test::matmul_relu_workload();
  LoweredWorkload lw = lower_workload(w);
  ScheduleSpace space{build_pipeline_view(lw.outputs)};
  std::set<std::string> measured;
  bool init = (output_name = space.schedule_name(0), true);
  SearchTask task{&w, &space, [this](const std::string& h) { return measured.count(h) > 0; }};
};

GbtSaOptions small_options() {
  GbtSaOptions o;
  o.plan_size = 16;
  o.chains = 32;
  o.steps = 60;
  o.min_samples = 8;
  return o;
}

TEST(GbtSaSearch, ProposesValidDistinctUnmeasuredSchedulesAndLearns) {
  Fixture f;
  GbtSaSearch policy(small_options());
  std::mt19937_64 rng(3);
  std::set<std::string> seen;
  int late_par = 0, late = 0;
  for (int round = 0; round < 6; round++) {
    auto batch = policy.propose(f.task, 8, rng);
    ASSERT_EQ(batch.size(), 8u);
    std::vector<MeasureResult> results;
    for (const auto& s : batch) {
      auto why = s.validate(f.lw.outputs);
      ASSERT_FALSE(why) << *why;
      EXPECT_TRUE(seen.insert(s.hash()).second) << "proposed twice: " << s.to_json();
      f.measured.insert(s.hash());
      results.push_back(synthetic_measure(s));
      if (round >= 3) {
        late++;
        late_par += output_parallel(s);
      }
    }
    policy.observe(f.task, batch, results);
  }
  const auto st = policy.last_plan(f.w.exact_key);
  EXPECT_TRUE(st.model_used);
  EXPECT_FALSE(st.transfer);
  EXPECT_GE(st.samples, 16);
  EXPECT_GT(st.sa_steps, 0);
  // Uniform draws parallelize the output far less often than a model that learned it pays.
  std::mt19937_64 r2(5);
  int random_par = 0;
  for (int k = 0; k < 400; k++) random_par += output_parallel(f.space.sample(r2));
  const double random_frac = random_par / 400.0, model_frac = static_cast<double>(late_par) / late;
  EXPECT_GT(model_frac, random_frac + 0.2) << "model " << model_frac << " vs random " << random_frac;
  std::cout << "parallel output: model's plans " << model_frac << ", uniform draws " << random_frac << "\n";
}

// The rule's micro-kernel sketch is searched like the rest of the space: its points come in
// every batch, and once the model learned that they run fast (here: 4x), the plans it anneals
// hold more of them than the share a batch reserves for them.
TEST(GbtSaSearch, TheRulesSketchIsSearchedThroughTheModel) {
  const Workload w = test::conv_relu_workload(test::save_conv_chain("gbt_rule.onnx", 8, 32, 48, 9, 11));
  const LoweredWorkload lw = lower_workload(w);
  const ScheduleSpace space{lw.outputs, host_code_target(), space_options_for(w)};
  ASSERT_NE(space.rule_sketch(), nullptr);
  std::set<std::string> measured;
  const SearchTask task{&w, &space, [&](const std::string& h) { return measured.count(h) > 0; }};
  GbtSaSearch policy(small_options());
  std::mt19937_64 rng(7);
  int early_rule = 0, late_rule = 0, late = 0;
  for (int round = 0; round < 6; round++) {
    auto batch = policy.propose(task, 8, rng);
    ASSERT_EQ(batch.size(), 8u);
    std::vector<MeasureResult> results;
    for (const auto& s : batch) {
      auto why = s.validate(lw.outputs);
      ASSERT_FALSE(why) << *why;
      EXPECT_TRUE(measured.insert(s.hash()).second) << "proposed twice: " << s.to_json();
      const bool rule = rule_knobs(s).has_value();
      MeasureResult m;
      m.median = (rule ? 1e-4 : 4e-4) * (1 + static_cast<double>(std::hash<std::string>{}(s.hash()) % 100) / 1000);
      m.times = {m.median};
      m.min = m.median;
      results.push_back(m);
      early_rule += round == 0 && rule;
      if (round >= 3) {
        late++;
        late_rule += rule;
      }
    }
    policy.observe(task, batch, results);
  }
  EXPECT_TRUE(policy.last_plan(w.exact_key).model_used);
  EXPECT_GE(early_rule, 1);
  const double late_frac = static_cast<double>(late_rule) / late;
  EXPECT_GT(late_frac, 0.4) << "rule points in the model's plans: " << late_frac;
  std::cout << "rule points: first batch " << early_rule << "/8, model's plans " << late_frac << "\n";
}

TEST(GbtSaSearch, TransferSteersTheFirstPlan) {
  Fixture f;
  // Records of "another workload": the same kind of schedules, measured by the stand-in.
  std::mt19937_64 rng(9);
  FeatureExtractor fx(f.space);
  std::vector<CostSample> source;
  for (int k = 0; k < 200; k++) {
    Schedule s = f.space.sample(rng);
    source.push_back({"other", fx.flat(s), synthetic_measure(s).median});
  }
  GbtSaOptions o = small_options();
  std::string excluded;
  o.transfer_samples = [&](const std::string& key) {
    excluded = key;
    return source;
  };
  GbtSaSearch policy(o);
  EXPECT_EQ(policy.name(), "gbt-sa-transfer");
  auto batch = policy.propose(f.task, 16, rng);
  ASSERT_EQ(batch.size(), 16u);
  EXPECT_EQ(excluded, f.w.exact_key);
  const auto st = policy.last_plan(f.w.exact_key);
  EXPECT_TRUE(st.model_used);
  EXPECT_TRUE(st.transfer);
  EXPECT_EQ(st.samples, 0);
  int par = 0;
  for (const auto& s : batch) par += output_parallel(s);
  std::cout << "parallel output in the first plan: " << par << " of 16\n";
  EXPECT_GE(par, 12) << "the global model should pick parallel outputs from the first plan";
}

// MNASNet-0.5's classifier (1 x 1280 times its 1000 x 1280 weights transposed, plus a bias), as
// imported: some of the schedules annealing reaches have compute_at sites the features refuse
// (this once ended `tune --policy gbt-sa` on that model). They are rated last, never an error.
TEST(GbtSaSearch, SchedulesWithoutFeaturesAreRatedLastNotAnError) {
  test::OnnxBuilder b;
  b.input("x", DType::Float32, {1, 1280})
      .initializer("w", test::rand_f32({1000, 1280}, 1))
      .initializer("b", test::rand_f32({1000}, 2))
      .node("Gemm", {"x", "w", "b"}, {"y"}, {{"transB", int64_t{1}}})
      .output("y");
  const Graph g = load_model(b.save("gbt_sa_gemm.onnx"));  // as tune loads it (layouts planned)
  const Partition part = partition_graph(g);
  ASSERT_EQ(part.workloads.size(), 1u);
  const Workload& w = part.workloads[0];
  const LoweredWorkload lw = lower_workload(w);
  SpaceOptions so;  // as tune builds the space (make_tasks): sketches, the weights' layout free
  so.vector_bytes = native_vector_bytes(Halide::get_host_target());
  so.sampling = Sampling::Sketch;
  const ScheduleSpace space{build_pipeline_view(lw.outputs), space_options_for(w, so)};
  const FeatureExtractor fx(space);
  std::mt19937_64 rng(1);
  int refused = 0;  // the case exists in this space: annealing meets it
  for (int chain = 0; chain < 200 && refused == 0; chain++) {  // annealing's chains, without the model
    Schedule s = space.sample(rng);
    for (int step = 0; step < 60 && refused == 0; step++) {
      s = mutate(space, s, rng);
      try {
        fx.flat(s);
      } catch (const Error&) {
        refused++;
      }
    }
  }
  ASSERT_GT(refused, 0) << "no schedule of this space lacks features any more: the test proves nothing";
  std::set<std::string> measured;
  SearchTask task{&w, &space, [&](const std::string& h) { return measured.count(h) > 0; }};
  output_name = space.schedule_name(0);
  GbtSaSearch policy(small_options());
  for (int round = 0; round < 5; round++) {
    std::vector<Schedule> plan;
    ASSERT_NO_THROW(plan = policy.propose(task, 16, rng)) << "round " << round;
    EXPECT_FALSE(plan.empty());
    std::vector<MeasureResult> results;
    for (const auto& s : plan) {
      measured.insert(s.hash());
      results.push_back(synthetic_measure(s));
    }
    policy.observe(task, plan, results);
  }
}

TEST(GbtSaSearch, DiverseSubsetTradesQualityForNewComponents) {
  auto stage = [](const std::string& vec) {
    Schedule s;
    StageSchedule a;
    a.func = "f";
    a.placement = Placement::Root;
    a.vectorize = vec;
    a.vector_width = vec.empty() ? 0 : 8;
    s.set(a);
    return s;
  };
  // Two near-equal candidates sharing every component, one slightly worse with a new one.
  std::vector<Schedule> c = {stage("x"), stage("x"), stage("y")};
  std::vector<double> q = {1.0, 0.99, 0.95};
  EXPECT_EQ(diverse_subset(c, q, 2, 0.0), (std::vector<size_t>{0, 1}));
  // Normalized qualities 1, 0.8, 0: one new component (+1) outweighs the 0.8 of the copy.
  EXPECT_EQ(diverse_subset(c, q, 2, 1.0), (std::vector<size_t>{0, 2}));
}

}  // namespace
}  // namespace ts
