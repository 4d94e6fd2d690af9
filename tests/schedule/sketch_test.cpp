// Sketch: the register-blocked reduction rule on real workloads (torchvision ResNet-18 and
// MobileNetV2, a Transformer) and on a hand-written pipeline: what it matches, that its default
// knobs are the default heuristic's structure, and that every draw and mutation is a valid,
// decodable point of the space. Compiling and running sketch points is in
// tests/measure/space_property_test.cpp (and here for a depthwise conv's channel vectors).
#include "schedule/sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/schedule_space.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

SpaceOptions sketch_options() {
  SpaceOptions o;
  o.vector_bytes = 64;  // AVX-512: 16 float lanes, whatever the test machine has
  o.sampling = Sampling::Sketch;
  return o;
}

size_t position(const std::vector<std::string>& v, const std::string& x) {
  return static_cast<size_t>(std::find(v.begin(), v.end(), x) - v.begin());
}

TEST(Sketch, DefaultKnobsGiveTheDefaultHeuristicsRegisterTileOnAResNetConv) {
  const auto ws = test::zoo_workloads("resnet18.onnx");
  auto w = std::find_if(ws.begin(), ws.end(), [](const Workload& w) { return w.name == "Conv+Relu"; });
  ASSERT_NE(w, ws.end());
  LoweredWorkload lw = lower_workload(*w);
  ScheduleSpace space(build_pipeline_view(lw.outputs), sketch_options());
  const Sketch* sk = space.sketch();
  ASSERT_NE(sk, nullptr);
  std::cout << sk->describe() << "\n";

  const SketchKnobs k = sk->default_knobs();
  EXPECT_EQ(k.vector_width, 16);
  EXPECT_EQ(k.vectors, 1);
  EXPECT_EQ(k.reuse_tile, 4);  // 4 output channels share each input vector
  EXPECT_EQ(k.row_tile, 1);
  EXPECT_GE(k.parallel_loops, 1);
  const Schedule s = sk->build(space, k);
  ASSERT_FALSE(s.validate(lw.outputs)) << *s.validate(lw.outputs) << "\n" << s.to_json(2);
  EXPECT_EQ(sk->knobs_of(space, s), k);

  // The output: 16 lanes of its innermost loop, its channel tile unrolled, parallel outside.
  const StageSchedule* out = s.find(space.schedule_name(0));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->placement, Placement::Root);
  EXPECT_EQ(out->vector_width, 16);
  EXPECT_EQ(out->unroll.size(), 1u);
  EXPECT_FALSE(out->parallel.empty());
  // The accumulator at the tile's innermost outer loop; its update keeps the register tile
  // (vector lanes, unrolled channels) inside every reduction loop.
  const StageSchedule* acc = nullptr;
  for (const auto& st : s.stages)
    if (st.placement == Placement::ComputeAt) acc = &st;
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(acc->compute_at.func, out->func);
  const StageSchedule* upd = s.find(acc->func, 1);
  ASSERT_NE(upd, nullptr);
  ASSERT_EQ(upd->unroll.size(), 1u);
  const size_t vec = position(upd->order, upd->vectorize), unrolled = position(upd->order, upd->unroll[0]);
  EXPECT_EQ(vec, 0u);
  EXPECT_EQ(unrolled, 1u);
  int reduction_loops = 0;
  for (size_t j = 0; j < upd->order.size(); j++)
    if (upd->order[j].find("_r$") != std::string::npos) {
      EXPECT_GT(j, unrolled) << upd->order[j];
      reduction_loops++;
    }
  EXPECT_EQ(reduction_loops, 3);  // kx, ky, input channels
  // Its region is the register tile: 16 lanes x 4 channels.
  for (size_t i = 0; i < space.decisions().size(); i++)
    if (space.schedule_name(i) == acc->func) {
      const auto region = space.region(s, i);
      int64_t points = 1;
      for (auto r : region) points *= r;
      EXPECT_EQ(points, 16 * 4);
    }
}

TEST(Sketch, ChannelVectorsPackTheWeightAndKeepTheAccumulatorsDense) {
  // The last ResNet-18 stage: 7x7 rows, where 16-lane vectors along x waste more than half.
  const auto ws = test::zoo_workloads("resnet18.onnx");
  auto w = std::find_if(ws.begin(), ws.end(), [](const Workload& w) {
    return w.name == "Conv+Relu" && w.exact_key.find("[1,512,7,7]") != std::string::npos;
  });
  ASSERT_NE(w, ws.end());
  ASSERT_EQ(w->constant_inputs.size(), 2u);  // weight and bias
  LoweredWorkload lw = lower_workload(*w);
  ScheduleSpace space(build_pipeline_view(lw.outputs), space_options_for(*w, sketch_options()));
  const Sketch* sk = space.sketch();
  ASSERT_NE(sk, nullptr);
  EXPECT_NE(sk->describe().find("channel vectors along d1 with " + w->constant_inputs[0] + " packed along dim 3"),
            std::string::npos)
      << sk->describe();
  // Without packable inputs (a hand-built pipeline, or weights given at run time) no channel vectors.
  ScheduleSpace unpacked(space.view(), sketch_options());
  EXPECT_EQ(unpacked.sketch()->describe().find("channel vectors"), std::string::npos);

  SketchKnobs k = sk->default_knobs();
  k.channel_vectors = true;
  k.vector_width = 16;
  k.vectors = 2;     // 32 output channels
  k.reuse_tile = 7;  // a whole row
  k.row_tile = 1;
  const Schedule s = sk->build(space, k);
  ASSERT_FALSE(s.validate(lw.outputs)) << *s.validate(lw.outputs) << "\n" << s.to_json(2);
  EXPECT_EQ(sk->knobs_of(space, s), k);
  ASSERT_EQ(s.layouts.size(), 1u);
  EXPECT_EQ(s.layouts[0], (InputLayout{w->constant_inputs[0], 3, 16}));  // [512/16, 512, 3, 3, 16]
  // The layout is one of the space's candidates for the weight's rename.
  bool candidate = false;
  for (size_t i = 0; i < space.decisions().size(); i++)
    for (const auto& l : space.layouts(i)) candidate |= l && *l == s.layouts[0];
  EXPECT_TRUE(candidate);
  // The accumulator: channels innermost in storage and vectorized, x unrolled.
  const StageSchedule* acc = nullptr;
  for (const auto& st : s.stages)
    if (st.placement == Placement::ComputeAt) acc = &st;
  ASSERT_NE(acc, nullptr);
  ASSERT_FALSE(acc->storage_order.empty());
  const StageSchedule* upd = s.find(acc->func, 1);
  ASSERT_NE(upd, nullptr);
  EXPECT_EQ(upd->vectorize.substr(0, acc->storage_order[0].size()), acc->storage_order[0]);
  EXPECT_EQ(upd->vector_width, 16);
  // The schedule lowers with the packed weight (the ImageParam has rank 5) and still validates.
  LoweredWorkload packed = lower_workload(*w, s.layouts);
  EXPECT_EQ(packed.params[1].dimensions(), 5);
  EXPECT_FALSE(s.validate(packed.outputs));
}

TEST(Sketch, DepthwiseChannelVectorsStoreThePaddedInputChannelsInnermostAndComputeTheSameValues) {
  // A MobileNetV2 depthwise conv: no reuse loop (every load depends on x and c), but its weight
  // [C, 1, 3, 3] is indexed by c alone, so channel vectors apply, with the pad channels-innermost.
  const auto ws = test::zoo_workloads("mobilenet_v2.onnx");
  auto w = std::find_if(ws.begin(), ws.end(), [](const Workload& w) {
    return w.exact_key.find("group=96") != std::string::npos;
  });
  ASSERT_NE(w, ws.end());
  LoweredWorkload lw = lower_workload(*w);
  ScheduleSpace space(build_pipeline_view(lw.outputs), space_options_for(*w, sketch_options()));
  const Sketch* sk = space.sketch();
  ASSERT_NE(sk, nullptr);
  EXPECT_NE(sk->describe().find("reuse loop none"), std::string::npos) << sk->describe();
  EXPECT_NE(sk->describe().find("channel vectors along d1"), std::string::npos) << sk->describe();
  SketchKnobs k = sk->default_knobs();
  k.channel_vectors = true;
  k.vector_width = 16;
  k.vectors = 1;
  k.reuse_tile = 4;
  k.row_tile = 2;
  const Schedule s = sk->build(space, k);
  ASSERT_FALSE(s.validate(lw.outputs)) << *s.validate(lw.outputs) << "\n" << s.to_json(2);
  EXPECT_EQ(sk->knobs_of(space, s), k);
  ASSERT_EQ(s.layouts.size(), 1u);
  // The pad: root, channels innermost in storage and loops, vectorized along them.
  const StageSchedule* pad = nullptr;
  for (const auto& st : s.stages)
    if (st.func.find("_pad") != std::string::npos) pad = &st;
  ASSERT_NE(pad, nullptr);
  EXPECT_EQ(pad->placement, Placement::Root);
  ASSERT_FALSE(pad->storage_order.empty());
  EXPECT_EQ(pad->storage_order[0], "d1");
  EXPECT_EQ(pad->vectorize, "d1");
  EXPECT_EQ(pad->order[0], "d1");
  // Compiled, run with the packed weight and checked against the default schedule's output.
  MeasureOptions mo;
  mo.repeats = 1;
  mo.cache_root = (test::temp_dir() / "cache").string();
  Measurer m(*w, mo);
  const auto r = m.measure_batch({s});
  EXPECT_TRUE(r[0].valid()) << r[0].error_kind << ": " << r[0].error_message;
}

TEST(Sketch, EveryDrawAndMutationIsAValidDecodablePointOfTheSpace) {
  int matched = 0, total = 0, draws = 0, channel_draws = 0;
  // EfficientNet: SiLU gates inline a diamond (t, sigmoid(t), t * sigmoid(t)) between the
  // accumulator and the output, which compute_at looks through.
  for (const char* file : {"resnet18.onnx", "mobilenet_v2.onnx", "transformer.onnx", "efficientnet_b0.onnx"}) {
    for (const auto& w : test::zoo_workloads(file)) {
      total++;
      LoweredWorkload lw = lower_workload(w);
      ScheduleSpace space(build_pipeline_view(lw.outputs), space_options_for(w, sketch_options()));
      const Sketch* sk = space.sketch();
      if (!sk) continue;
      matched++;
      std::mt19937_64 rng(matched);
      for (int d = 0; d < 12; d++, draws++) {
        const SketchKnobs k = sk->draw(rng);
        const Schedule s = sk->build(space, k);
        auto why = s.validate(lw.outputs);
        ASSERT_FALSE(why) << file << " " << w.name << ": " << *why << "\n" << s.to_json(2);
        ASSERT_EQ(sk->knobs_of(space, s), k) << s.to_json(2);
        // A point of the space: every Func's placement is one of its candidates, every layout too.
        for (size_t i = 0; i < space.decisions().size(); i++) ASSERT_NO_THROW(space.region(s, i)) << space.schedule_name(i);
        for (const InputLayout& l : s.layouts) {
          bool candidate = false;
          for (size_t i = 0; i < space.decisions().size(); i++)
            for (const auto& c : space.layouts(i)) candidate |= c && *c == l;
          ASSERT_TRUE(candidate) << describe(l);
          channel_draws++;
        }
        const SketchKnobs m = sk->mutate(k, rng);
        const Schedule ms = sk->build(space, m);
        ASSERT_FALSE(ms.validate(lw.outputs)) << *ms.validate(lw.outputs);
        ASSERT_EQ(sk->knobs_of(space, ms), m);
        if (!(m == k)) EXPECT_NE(ms.hash(), s.hash());
      }
      // A schedule not built by the sketch does not decode.
      SpaceOptions strat = sketch_options();
      strat.sampling = Sampling::Stratified;
      ScheduleSpace other(space.view(), strat);
      EXPECT_FALSE(sk->knobs_of(space, other.sample(rng)));
    }
  }
  std::cout << draws << " sketch draws of " << matched << " of " << total << " workloads validated, "
            << channel_draws << " with channel vectors\n";
  EXPECT_GT(channel_draws, draws / 8);
  EXPECT_GE(matched, 30);  // every conv, pool, gemm and matmul workload of the three models
}

TEST(Sketch, MatchesAHandWrittenMatmulAndNotAPurelyElementwisePipeline) {
  // out = max(acc, 0), acc = scaled x b: scaled (read by the reduction) goes to root.
  ScheduleSpace space(build_pipeline_view(test::scaled_matmul_pipeline()), sketch_options());
  ASSERT_NE(space.sketch(), nullptr);
  EXPECT_NE(space.sketch()->describe().find("out over acc"), std::string::npos) << space.sketch()->describe();
  std::mt19937_64 rng(3);
  const Schedule s = space.sample(rng);
  ASSERT_FALSE(s.validate(test::scaled_matmul_pipeline())) << s.to_json(2);
  EXPECT_EQ(s.find("scaled")->placement, Placement::Root);
  EXPECT_EQ(s.find("acc")->placement, Placement::ComputeAt);

  Halide::ImageParam in(Halide::Float(32), 1, "in");
  in.dim(0).set_estimate(0, 64);
  Halide::Var x("x");
  Halide::Func f("f"), g("g");
  f(x) = in(x) + 1.0f;
  g(x) = f(x) * 2.0f;
  g.set_estimate(x, 0, 64);
  ScheduleSpace plain(build_pipeline_view({g}), sketch_options());
  EXPECT_EQ(plain.sketch(), nullptr);
  const Schedule p = plain.sample(rng);  // falls back to stratified draws
  EXPECT_TRUE(p.is_complete({"g", "f"}));
}

}  // namespace
}  // namespace ts
