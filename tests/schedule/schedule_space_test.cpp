// ScheduleSpace: branching factors count exactly what the sampler draws from, and every drawn
// schedule of real workloads (torchvision ResNet-18, MobileNetV2, a Transformer; hand-built
// conv/pool/gemm/softmax models) validates. The compile-and-compare property test is in
// tests/measure/space_property_test.cpp.
#include "schedule/schedule_space.h"

#include <gtest/gtest.h>

#include <set>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

TEST(ScheduleSpace, DecidesConsumersFirstAndDrawsCompleteSchedules) {
  auto outs = test::scaled_matmul_pipeline();
  ScheduleSpace space(build_pipeline_view(outs));
  ASSERT_EQ(space.decisions().size(), 3u);
  EXPECT_EQ(space.schedule_name(0), "out");
  EXPECT_EQ(space.schedule_name(1), "acc");
  EXPECT_EQ(space.schedule_name(2), "scaled");
  std::mt19937_64 rng(7);
  std::set<std::string> hashes;
  std::set<Placement> acc_placements;
  for (int k = 0; k < 300; k++) {
    Schedule s = space.sample(rng);
    ASSERT_TRUE(s.is_complete({"out", "acc", "acc.update(0)", "scaled"})) << s.to_json(2);
    auto why = s.validate(outs);
    ASSERT_FALSE(why) << *why << "\n" << s.to_json(2);
    hashes.insert(s.hash());
    acc_placements.insert(s.find("acc")->placement);
  }
  EXPECT_GT(hashes.size(), 290u);  // the space is huge: draws rarely repeat
  EXPECT_EQ(acc_placements.size(), 2u);  // root and compute_at (acc has an update: never inline)
}

TEST(ScheduleSpace, BranchingCountsTheCandidatesTheSamplerDrawsFrom) {
  // A tiny space, enumerated by drawing: the number of distinct first decisions approaches the
  // branching factor.
  Halide::ImageParam in(Halide::Float(32), 1, "in");
  in.dim(0).set_estimate(0, 8);
  Halide::Var x("x");
  Halide::Func out("out");
  out(x) = in(x) * 2.0f;
  out.set_estimate(x, 0, 8);
  SpaceOptions o;
  o.vector_bytes = 16;  // float: widths 2 and 4
  ScheduleSpace space(build_pipeline_view({out}), o);
  const double b = space.branching({}, 0);
  // Loop x (extent 8, factors <= 4: 2, 3, 4; 3 levels: (2, 2)) -> untiled, x/2, x/3, x/4, x/(2,2).
  // Counted by hand: no vector: tilings x {parallel or not} x unrolls, with orders; vector widths 2/4.
  std::mt19937_64 rng(1);
  std::set<std::string> seen;
  for (int k = 0; k < 4000; k++) {
    Schedule s;
    space.sample_decision(s, 0, rng);
    ASSERT_FALSE(s.validate({out})) << s.to_json();
    seen.insert(s.hash());
  }
  EXPECT_EQ(static_cast<double>(seen.size()), b) << "branching " << b;
}

// The counting tables a space keeps are dropped past a bound (a search lists thousands of
// regions): counts read after many drops equal a fresh space's, in any order.
TEST(ScheduleSpace, CountsAreTheSameWhateverTablesItKept) {
  const Workload w = test::conv_relu_workload(test::save_conv_chain("space_memo.onnx", 8, 16, 32, 10, 12));
  const LoweredWorkload lw = lower_workload(w);
  const ScheduleSpace used(build_pipeline_view(lw.outputs), space_options_for(w));
  std::mt19937_64 rng(17);
  std::vector<std::pair<Schedule, size_t>> asked;  // (partial, decision)
  std::vector<double> counts;
  for (int k = 0; k < 300; k++) {
    Schedule partial;
    for (size_t i = 0; i < used.decisions().size(); i++) {
      asked.push_back({partial, i});
      counts.push_back(used.branching(partial, i));
      used.sample_decision(partial, i, rng);
    }
  }
  const ScheduleSpace fresh(build_pipeline_view(lw.outputs), space_options_for(w));
  for (size_t k = asked.size(); k-- > 0;)
    ASSERT_EQ(fresh.branching(asked[k].first, asked[k].second), counts[k]) << asked[k].first.to_json();
}

TEST(ScheduleSpace, EverySampleOfRealWorkloadsValidates) {
  SpaceOptions o;
  o.vector_bytes = native_vector_bytes(Halide::get_host_target());
  int workloads = 0, draws = 0;
  for (const char* file : {"resnet18.onnx", "mobilenet_v2.onnx", "transformer.onnx"}) {
    for (const auto& w : test::zoo_workloads(file)) {
      LoweredWorkload lw = lower_workload(w);
      ScheduleSpace space(build_pipeline_view(lw.outputs), o);
      std::mt19937_64 rng(workloads);
      ScheduleSpace strat(space.view(), [&] {
        SpaceOptions so = o;
        so.sampling = Sampling::Stratified;
        return so;
      }());
      for (int k = 0; k < 40; k++, draws++) {
        Schedule s = (k % 2 ? strat : space).sample(rng);
        auto why = s.validate(lw.outputs);
        ASSERT_FALSE(why) << file << " workload " << w.key_hash() << " (" << w.name << "): " << *why << "\n"
                          << s.to_json(2);
      }
      SpaceStats st = space.estimate(10, 1);
      EXPECT_EQ(st.decisions, static_cast<int>(space.decisions().size()));
      EXPECT_GE(st.avg_branching, 1.0);
      workloads++;
    }
  }
  EXPECT_GT(workloads, 40);
  std::cout << draws << " schedules of " << workloads << " workloads validated\n";
}

// Reordered storage is not drawn (Halide 14 computed wrong values for some such schedules,
// schedule_space.h): every sample keeps every Func's storage in argument order.
TEST(ScheduleSpace, SamplesKeepStorageInArgumentOrder) {
  const auto outs = test::scaled_matmul_pipeline();
  ScheduleSpace space(build_pipeline_view(outs), SpaceOptions{});
  std::mt19937_64 rng(5);
  for (int k = 0; k < 200; k++) {
    const Schedule s = space.sample(rng);
    ASSERT_FALSE(s.validate(outs)) << s.to_json(2);
    for (const StageSchedule& ss : s.stages) EXPECT_TRUE(ss.storage_order.empty()) << ss.func;
  }
}

// Stratified draws come from the same candidates (they validate, above), with structure as
// likely as not: the output of a conv is vectorized and parallel far more often than uniformly.
TEST(ScheduleSpace, StratifiedSamplingFavoursNoStructuralClass) {
  SpaceOptions o;
  o.vector_bytes = native_vector_bytes(Halide::get_host_target());
  const Workload w = test::zoo_workloads("resnet18.onnx").at(2);  // a 3x3 Conv+Relu
  LoweredWorkload lw = lower_workload(w);
  ScheduleSpace uniform(build_pipeline_view(lw.outputs), o);
  o.sampling = Sampling::Stratified;
  ScheduleSpace strat(uniform.view(), o);
  auto fractions = [&](const ScheduleSpace& sp) {
    std::mt19937_64 rng(4);
    int vec = 0, par = 0;
    const int n = 400;
    for (int k = 0; k < n; k++) {
      Schedule s = sp.sample(rng);
      const StageSchedule* out = s.find(sp.schedule_name(0), 0);
      vec += !out->vectorize.empty();
      par += !out->parallel.empty();
    }
    return std::make_pair(vec / double(n), par / double(n));
  };
  auto [uv, up] = fractions(uniform);
  auto [sv, sp] = fractions(strat);
  std::cout << "output vectorized: uniform " << uv << ", stratified " << sv << "; parallel: uniform " << up
            << ", stratified " << sp << "\n";
  EXPECT_GT(sv, 0.5);
  EXPECT_GT(sv, uv);
  EXPECT_GT(sp, 0.5);
}

}  // namespace
}  // namespace ts
