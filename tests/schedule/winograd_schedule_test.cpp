// The default rule's Winograd schedule (schedule/winograd_schedule.h): its register tile, and
// that its variants (weights streamed once or per tile row, other tiles) compile and compute
// what the rule's schedule computes, on a real Winograd workload; a 3-D conv's facts (frames,
// temporal taps) and its weights streamed once.
#include "schedule/winograd_schedule.h"

#include <gtest/gtest.h>

#include "graph/layout_plan.h"
#include "graph/winograd.h"
#include "graph/workload.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/rule_sketch.h"
#include "schedule/schedule_builder.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

TEST(WinogradSchedule, TileFitsTheRowAndTheRegisters) {
  // 14 tiles a row: 7 columns (no tail) x 2 blocks (14 accumulators).
  WinogradTile t = plan_winograd_tile({14, 14, 8, 0}, {}, 2);
  EXPECT_EQ(t.columns, 7);
  EXPECT_EQ(t.blocks, 2);
  EXPECT_FALSE(t.weights_once);
  // 4 tiles a row: 4 columns x 4 blocks; large weights are streamed once.
  t = plan_winograd_tile({4, 4, 16, int64_t{9} << 20}, {}, 2);
  EXPECT_EQ(t.columns, 4);
  EXPECT_EQ(t.blocks, 4);
  EXPECT_TRUE(t.weights_once);
  // Never more blocks than the output has, and the knobs rule.
  EXPECT_EQ(plan_winograd_tile({4, 4, 1, 0}, {}, 2).blocks, 1);
  // 6 blocks (Inception-v3's 96 channels at 35 x 35, 9 tiles a row: 5 columns), with weights
  // streamed once (8 MiB): 3 blocks, so the tasks are 2 of 3 blocks, not 4 and a guarded 2, on
  // 1 core or 2; 4 cores would take 2 (3 tasks, 10 accumulators). Tile rows (small weights) alike.
  for (int cores : {1, 2}) {
    t = plan_winograd_tile({9, 9, 6, int64_t{8} << 20}, {}, cores);
    EXPECT_EQ(t.columns, 5);
    EXPECT_EQ(t.blocks, 3) << cores;
    EXPECT_TRUE(t.weights_once);
  }
  EXPECT_EQ(plan_winograd_tile({9, 9, 6, int64_t{8} << 20}, {}, 4).blocks, 2);
  EXPECT_EQ(plan_winograd_tile({9, 9, 6, 0}, {}, 2).blocks, 3);
  DefaultKnobs k;
  k.stream = 1;
  EXPECT_TRUE(plan_winograd_tile({14, 14, 8, 0}, k, 2).weights_once);
  k = {};
  k.columns = 3;
  k.blocks = 1;
  k.stream = 0;
  t = plan_winograd_tile({4, 4, 16, int64_t{9} << 20}, k, 2);
  EXPECT_EQ(t.columns, 3);
  EXPECT_EQ(t.blocks, 1);
  EXPECT_FALSE(t.weights_once);
}

TEST(WinogradSchedule, WeightsStreamOncePerTileRowUnlessFewTilesOrLargeWeights) {
  const int64_t mib = int64_t{1} << 20;
  // Weights that fit the L2: per tile row, however few tiles.
  EXPECT_FALSE(plan_winograd_tile({7, 7, 4, mib / 2}, {}, 2).weights_once);
  // VGG-16's 112 x 112 128 -> 128 (2.25 MiB) and 56 x 56 128 -> 256 (4.5 MiB): per tile row.
  EXPECT_FALSE(plan_winograd_tile({28, 28, 8, mib * 9 / 4}, {}, 2).weights_once);
  EXPECT_FALSE(plan_winograd_tile({14, 14, 16, mib * 9 / 2}, {}, 2).weights_once);
  // ResNet's 28 x 28 128 -> 128 (49 tiles) and VGG-16's 56 x 56 256 -> 256 (9 MiB): once.
  EXPECT_TRUE(plan_winograd_tile({7, 7, 8, mib * 9 / 4}, {}, 2).weights_once);
  EXPECT_TRUE(plan_winograd_tile({14, 14, 16, mib * 9}, {}, 2).weights_once);
  EXPECT_EQ(winograd_weights_once(mib * 9 / 4, 49), true);
  EXPECT_EQ(winograd_weights_once(mib * 9 / 4, 196), false);
}

TEST(WinogradSchedule, A3DConvReadsItsFramesAndTapsAndStreamsItsWeightsOnce) {
  // x[1, 16, 4, 14, 14] -> 3x3x3 conv (16 -> 32, pads 1) -> Relu: a Winograd workload of 4
  // output frames, 3 taps, 4 x 4 tiles a frame.
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 16, 4, 14, 14})
      .initializer("w", test::rand_f32({32, 16, 3, 3, 3}, 1))
      .node("Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  Graph g = test::import_model(b.save("wino3d_sched.onnx"));
  plan_layouts(g, 16);
  ASSERT_EQ(plan_winograd(g, 1), 1);
  const Workload* conv = nullptr;
  const Partition p = partition_graph(g);
  for (const auto& wl : p.workloads)
    if (wl.name == "Conv+Relu") conv = &wl;
  ASSERT_TRUE(conv);
  const LoweredWorkload lw = lower_workload(*conv);
  const auto f = winograd_facts(lw.outputs);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, (WinogradFacts{4, 4, 2, winograd_weight_bytes(32, 16, 3), 4, 3}));
  // Small weights, 64 tiles in all: a 2-D conv's stream per tile row, a 3-D one's once (with
  // one tap too: R(2+1)D's 1x3x3).
  EXPECT_TRUE(plan_winograd_tile(*f, {}, 2).weights_once);
  WinogradFacts one_tap = *f, plain = *f;
  one_tap.taps = 1;
  EXPECT_TRUE(plan_winograd_tile(one_tap, {}, 2).weights_once);
  plain.taps = 1;
  plain.frames = 1;
  plain.tile_rows *= 4;
  EXPECT_FALSE(plan_winograd_tile(plain, {}, 2).weights_once);
  ScheduleBuilder sb;
  EXPECT_TRUE(winograd_schedule(sb, lw.outputs, {}));
  // Its schedule is data every stage of which validates against the pipeline.
  EXPECT_EQ(sb.schedule.validate(lw.outputs), std::nullopt);
  EXPECT_GE(sb.schedule.stages.size(), 6u);
}

TEST(WinogradSchedule, VariantsComputeWhatTheRuleComputes) {
  const Workload w = test::winograd_conv_relu_workload("wino_sched.onnx");
  ASSERT_FALSE(w.name.empty());
  MeasureOptions mo;
  mo.repeats = 1;
  mo.warmup = 0;
  mo.cache_root = (test::temp_dir() / "wino_cache").string();
  Measurer m(w, mo);
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  std::vector<Schedule> batch;
  for (int stream : {0, 1})
    for (auto [columns, blocks] : {std::pair{4, 3}, std::pair{3, 2}, std::pair{1, 1}}) {
      DefaultKnobs k;
      k.stream = stream;
      k.columns = columns;
      k.blocks = blocks;
      batch.push_back(test::rule_variant(w, k));
    }
  // The tuner's knob space: columns, blocks and stream, canonical (other knobs dropped, and
  // those at the rule's own choice).
  const LoweredWorkload lw = lower_workload(w);
  const RuleSketch space(lw.outputs, host_code_target());
  ASSERT_FALSE(space.empty());
  DefaultKnobs k;
  k.grain = 4;
  k.stream = 0;
  k.columns = 16;  // clamped to the row's 4 tiles
  const DefaultKnobs c = space.canonical(k);
  EXPECT_FALSE(c.grain);
  EXPECT_FALSE(c.stream) << "small weights: the rule streams them per row already";
  EXPECT_EQ(c.columns, std::nullopt) << "4 columns is the rule's own choice";
  k.stream = 1;
  EXPECT_EQ(space.canonical(k).stream, 1);
  std::mt19937_64 rng(3);
  int streamed_once = 0;
  for (int i = 0; i < 20; i++) {
    const DefaultKnobs d = space.draw(rng);
    EXPECT_TRUE(!d.grain && !d.tasks && !d.unroll && !d.vectors && !d.outermost && !d.columns_outer) << i;
    EXPECT_TRUE(!d.stream || *d.stream == 1) << i;
    streamed_once += d.stream.has_value();
  }
  EXPECT_GT(streamed_once, 0) << "the search draws the other streaming";
  const auto r = m.measure_batch(batch);
  for (size_t i = 0; i < r.size(); i++)
    EXPECT_TRUE(r[i].valid()) << batch[i].to_json() << ": " << r[i].error_kind << ": " << r[i].error_message;
}

// Where the weights stream once, every task reads the whole transformed input, a register tile
// its columns over every input block: the input blocks are stored next to the columns (one
// contiguous run per tile), where the definition's order puts a plane of tiles between them.
// Per tile row the slice stays in L2 and keeps the definition's order.
TEST(WinogradSchedule, TransformedInputKeepsATilesInputBlocksTogetherWhenStreamedOnce) {
  const Workload w = test::winograd_conv_relu_workload("wino_storage.onnx");
  ASSERT_FALSE(w.name.empty());
  auto storage_of_v = [&](int stream) {
    const LoweredWorkload lw = lower_workload(w);
    DefaultKnobs k;
    k.stream = stream;
    ScheduleBuilder sb;
    EXPECT_TRUE(winograd_schedule(sb, lw.outputs, k));
    apply(sb.schedule, lw.outputs, host_code_target());
    std::vector<std::string> args, storage;
    for (const auto& [name, f] : Halide::Internal::find_transitive_calls(lw.outputs[0].function()))
      if (name.find("_wino_v") != std::string::npos) {
        args = f.args();
        for (const auto& d : f.schedule().storage_dims()) storage.push_back(d.var);
      }
    return std::pair{args, storage};
  };
  // v's arguments: lanes, column, two transform positions, row, input block, batch.
  const auto [args, once] = storage_of_v(1);
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(once, (std::vector<std::string>{args[0], args[1], args[5], args[2], args[3], args[4], args[6]}));
  EXPECT_EQ(storage_of_v(0).second, args);
}

}  // namespace
}  // namespace ts
