// The default rule's tile plans (schedule/default_tile.h) on real lowered workloads: plain
// matmuls whose B exceeds L2 take 12-row tiles and, with a long K, run their row tiles inside
// blocks of K (computing what the unblocked tile computes), and blocked convs whose weights exceed L2 stream
// them (rows inside the outermost reduction loop, the next slice prefetched), which compiles,
// prefetches and computes what the unstreamed tile computes, and blocked 1x1 convs whose tile's
// weights exceed L1 run their column tiles (and rows) inside chunks of 128 input channels,
// computing what the unchunked tile computes, and where their input exceeds L2 too, their rows
// in groups inside the block loop. A matrix-vector conv (one pixel) runs in parallel where its
// weights reach kParallelReadBytes, however little its work.
#include "schedule/default_tile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/layout_plan.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/rule_sketch.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

using test::only_tile;

// x[m, k] x W[k, n], W an initializer (a workload input, packed at load).
Workload matmul_workload(const std::string& file, int64_t m, int64_t k, int64_t n) {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {m, k}).initializer("w", test::rand_f32({k, n}, 5)).node("MatMul", {"x", "w"}, {"y"}).output("y");
  const Partition p = partition_graph(test::import_model(b.save(file)));
  EXPECT_EQ(p.workloads.size(), 1u);
  return p.workloads.at(0);
}

// The default schedule's lowered statement of w with `knobs`.
std::string lowered_statement(const Workload& w, const DefaultKnobs& knobs) {
  LoweredWorkload lw = lower_workload(w);
  apply_default_variant(lw.outputs, host_code_target(), knobs);
  const auto path = test::temp_dir() / "default_tile_stmt.txt";
  lw.pipeline.compile_to_lowered_stmt(path.string(), lw.args, Halide::StmtOutputFormat::Text, host_code_target());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DefaultTile, MatmulsWhoseBExceedsL2TakeTwelveRows) {
  // 512 x 1024 floats of B: 2 MB, streamed from L3 by every row tile.
  const TilePlan big = plan_tile(only_tile(matmul_workload("tile_mm_big.onnx", 64, 512, 1024)), {});
  EXPECT_EQ(big.X, 2);
  EXPECT_EQ(big.U, 12);
  // 128 x 1024: 512 KB, from L2: the 8-row tile.
  const TilePlan small = plan_tile(only_tile(matmul_workload("tile_mm_small.onnx", 64, 128, 1024)), {});
  EXPECT_EQ(small.X, 2);
  EXPECT_EQ(small.U, 8);
  DefaultKnobs k;
  k.columns = 8;  // the knob still rules
  EXPECT_EQ(plan_tile(only_tile(matmul_workload("tile_mm_big.onnx", 64, 512, 1024)), k).U, 8);
}

TEST(DefaultTile, MatmulsWithALongKAndABeyondL2BlockK) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  // K = 1024, B 4 MB: the row tiles run inside blocks of K (the streamed loop is the row-tile
  // loop, outer[0] when columns are outer) and B's block is staged per block.
  const Workload longk = matmul_workload("tile_mm_longk.onnx", 64, 1024, 1024);
  const TilePlan p = plan_tile(only_tile(longk), {});
  ASSERT_TRUE(p.columns_outer);
  EXPECT_EQ(p.streamed, 0);
  EXPECT_EQ(p.outer.at(0).kind, OuterKind::Columns);
  EXPECT_EQ(p.k_block, 128);
  DefaultKnobs off;
  off.stream = 0;
  EXPECT_EQ(plan_tile(only_tile(longk), off).k_block, 0);
  // K = 512 (B 2 MB): A stays in L2, the rule does not block K (the knob can).
  const TileFacts shortk = only_tile(matmul_workload("tile_mm_big.onnx", 64, 512, 1024));
  EXPECT_EQ(plan_tile(shortk, {}).k_block, 0);
  DefaultKnobs on;
  on.stream = 1;
  EXPECT_EQ(plan_tile(shortk, on).k_block, 128);
  // The lowered loop nest has the K blocks and B's staged block inside them.
  const std::string stmt = lowered_statement(longk, {});
  EXPECT_NE(stmt.find("_ko, 0, 8)"), std::string::npos) << "no loop over 8 blocks of K";
  EXPECT_NE(stmt.find("[float32 * 32 * 128]"), std::string::npos) << "no staged 32 x 128 block of B";
}

TEST(DefaultTile, PanelPackedBKeepsEightRowsAndStreamsUnblocked) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  // The layout plan stores the 4 MB B as [N / 32][K][32] panels (graph/layout_plan.h): dense
  // within a panel, so tiles stay 2 vectors wide (4 would straddle panels), 8 rows, and K is not
  // blocked: each tile's slab of B is contiguous already.
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {64, 1024}).initializer("w", test::rand_f32({1024, 1024}, 5)).node("MatMul", {"x", "w"}, {"y"}).output("y");
  Graph g = test::import_model(b.save("tile_mm_panels.onnx"));
  ASSERT_EQ(plan_layouts(g, 16).matmul_panels, 1);
  const Workload w = partition_graph(g).workloads.at(0);
  const TileFacts f = only_tile(w);
  EXPECT_TRUE(f.dense_x);
  EXPECT_EQ(f.x_panel, 32);
  const TilePlan p = plan_tile(f, {});
  EXPECT_EQ(p.X, 2);
  EXPECT_EQ(p.U, 8);
  EXPECT_EQ(p.k_block, 0);
  DefaultKnobs wide;
  wide.vectors = 4;
  EXPECT_EQ(plan_tile(f, wide).X, 2);
  DefaultKnobs on;
  on.stream = 1;  // the knob still blocks K, without staging B
  EXPECT_EQ(plan_tile(f, on).k_block, 128);
  const std::string stmt = lowered_statement(w, on);
  EXPECT_NE(stmt.find("_ko, 0, 8)"), std::string::npos) << "no loop over 8 blocks of K";
  EXPECT_EQ(stmt.find("[float32 * 32 * 128]"), std::string::npos) << "B's block staged although contiguous";
}

TEST(DefaultTile, KBlockedMatmulsComputeWhatUnblockedOnesDo) {
  // Neither M (50 = 4 x 12 + 2) nor K (1100 = 8 x 128 + 76) divides its tile: both tails run.
  const MeasureOptions mo = test::check_only_options("tile_kblock_cache");
  const Workload w = matmul_workload("tile_mm_kblock_run.onnx", 50, 1100, 1024);
  ASSERT_EQ(plan_tile(only_tile(w), {}).k_block, 128);
  Measurer m(w, mo);  // the reference is the rule: K-blocked
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  DefaultKnobs off;
  off.stream = 0;
  const auto r = m.measure_batch({test::rule_variant(w, off)});
  EXPECT_TRUE(r.at(0).valid()) << r.at(0).error_kind << ": " << r.at(0).error_message;
}

// Half-vector blocks (odd multiples of 8 channels) pair into full vectors: two pairs per tile
// (16 accumulators) from 5 blocks on where the reduction is longer than 16, one pair where it is
// 16 (a 16-channel 1x1 conv) or where 3 blocks hold no second pair.
TEST(DefaultTile, HalfVectorBlocksTakeTwoPairsOverLongReductions) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  auto plan = [](int64_t mid, int64_t out) {
    const std::string file = "tile_pairs_" + std::to_string(mid) + "_" + std::to_string(out) + ".onnx";
    return plan_tile(only_tile(test::conv_relu_workload(test::save_conv_chain(file, 16, mid, out, 9, 11, 1))), {});
  };
  const TilePlan long56 = plan(48, 56), short56 = plan(16, 56), long40 = plan(48, 40), long24 = plan(48, 24);
  EXPECT_TRUE(long56.pair_blocks);
  EXPECT_EQ(long56.Vt, 4);
  EXPECT_EQ(short56.Vt, 2);
  EXPECT_EQ(long40.Vt, 4);
  EXPECT_EQ(long24.Vt, 2);
}

TEST(DefaultTile, ColumnTilesFitWidthsWithoutADivisor) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  // Output width -> columns of a 2-block tile (32 output channels): a divisor in [5, 8] where
  // one exists, else the fewest computed columns, a tile counted one more, from [5, 9] (9 for 27
  // and 17, 7 for 13: not 8 computing 32, 18 and 16).
  auto columns = [](int64_t width, int64_t out_channels) {
    const std::string file = "tile_cols_" + std::to_string(width) + "_" + std::to_string(out_channels) + ".onnx";
    const Workload w = test::conv_relu_workload(test::save_conv_chain(file, 16, 32, out_channels, 9, width));
    return plan_tile(only_tile(w), {});
  };
  EXPECT_EQ(columns(56, 32).U, 8);
  EXPECT_EQ(columns(28, 32).U, 7);
  EXPECT_EQ(columns(27, 32).U, 9);
  EXPECT_EQ(columns(17, 32).U, 9);
  EXPECT_EQ(columns(13, 32).U, 7);
  EXPECT_EQ(columns(109, 32).U, 8);  // 14 tiles of 8 (112) beat 22 of 5 (110) counting reloads
  // 48 output channels: 3 blocks, all in one tile (an odd count 3 divides), at most 7 columns
  // of 3 vectors.
  EXPECT_EQ(columns(27, 48).Vt, 3);
  EXPECT_EQ(columns(27, 48).U, 7);
  // One vector (16 output channels, one block): a divisor of 7 or 8 (28 -> 7), else the fewest
  // computed columns from [8, 12] (95 -> 12, not its divisor 5: 5 accumulators).
  EXPECT_EQ(columns(28, 16).Vt, 1);
  EXPECT_EQ(columns(28, 16).U, 7);
  EXPECT_EQ(columns(95, 16).U, 12);
  EXPECT_EQ(columns(12, 16).U, 12);
  // The 17-wide tiles of 9 (the last one shifted inwards) compute what tiles of 6 compute.
  DefaultKnobs six;
  six.columns = 6;
  test::expect_variants_match_rule(test::conv_relu_workload(test::save_conv_chain("tile_cols_17_run.onnx", 16, 32, 32, 9, 17)),
                                   "tile_cols_cache", {six});
}

// A blocked conv's register tile runs along its columns wherever a row holds 8 of them, not along
// its rows because they are more (61 rows of 32 columns): consecutive columns of the input lie
// next to each other. Rows of 3 columns keep the rows.
TEST(DefaultTile, BlockedConvsTileTheirColumnsWhereARowHoldsEight) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  auto facts = [](int64_t h, int64_t w) {
    const std::string file = "tile_reuse_" + std::to_string(h) + "_" + std::to_string(w) + ".onnx";
    return only_tile(test::conv_relu_workload(test::save_conv_chain(file, 16, 32, 32, h, w)));
  };
  const TileFacts tall = facts(61, 32), narrow = facts(40, 3), square = facts(14, 14);
  EXPECT_EQ(tall.u, 1);
  EXPECT_EQ(tall.ext[1], 32);
  EXPECT_EQ(narrow.ext[narrow.u], 40);
  EXPECT_EQ(square.u, 1);
}

// Streaming is the rule on hosts other than Intel's (tile_cache_plan.cpp: there every streamed
// direct conv ran slower); the knob streams anywhere.
TEST(DefaultTile, ConvsWhoseWeightsExceedL2StreamThem) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const bool rule_streams = !intel_host();
  DefaultKnobs on, off;
  on.stream = 1;
  off.stream = 0;
  // 256 -> 256 channels, 3x3, on 9 x 9: 2.4 MB of weights.
  const Workload big = test::conv_relu_workload(test::save_conv_chain("tile_stream.onnx", 16, 256, 256, 9, 9));
  const TileFacts f = only_tile(big);
  EXPECT_EQ(f.weight_bytes, 256 * 256 * 9 * 4);
  EXPECT_EQ(plan_tile(f, {}).streamed >= 0, rule_streams);
  const TilePlan p = plan_tile(f, on);
  ASSERT_GE(p.streamed, 0);
  EXPECT_EQ(p.outer[p.streamed].kind, OuterKind::Pure);
  EXPECT_GT(p.outer[p.streamed].extent, 1);
  for (int j = 0; j < p.streamed; j++) EXPECT_EQ(p.outer[j].extent, 1);  // nothing else between tile and rows
  EXPECT_EQ(plan_tile(f, off).streamed, -1);

  // 32 -> 256 channels: 295 KB of weights stay in cache; the knob can still stream them (16
  // block pairs give the parallel loop its tasks, so the rows stay serial and can move).
  const TileFacts small = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_nostream.onnx", 16, 32, 256, 7, 7)));
  EXPECT_EQ(small.weight_bytes, 32 * 256 * 9 * 4);
  EXPECT_EQ(plan_tile(small, {}).streamed, -1);
  EXPECT_GE(plan_tile(small, on).streamed, 0);

  // 14 wide: where the rule streams, two column tiles of 7 would sit between the tile and its
  // rows, so the tile takes the whole width with one block; a column knob keeps the rows
  // unstreamed. Elsewhere: 7 columns, unstreamed.
  const TileFacts wide = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_stream14.onnx", 16, 256, 256, 9, 14)));
  const TilePlan pw = plan_tile(wide, {});
  EXPECT_EQ(pw.U, rule_streams ? 14 : 7);
  EXPECT_EQ(pw.streamed >= 0, rule_streams);
  if (rule_streams) EXPECT_EQ(pw.Vt, 1);
  DefaultKnobs seven;
  seven.columns = 7;
  EXPECT_EQ(plan_tile(wide, seven).U, 7);
  EXPECT_EQ(plan_tile(wide, seven).streamed, -1);

  // The streamed tile prefetches; the unstreamed one does not.
  EXPECT_NE(lowered_statement(big, on).find("prefetch("), std::string::npos);
  EXPECT_EQ(lowered_statement(big, off).find("prefetch("), std::string::npos);
}

// Plain tiles of 2 vectors take 8 rows where 8 divides the rows, else the count in [7, 12] that
// computes the fewest rows (a tile counted one row more): 49 rows (ConvNeXt's 7 x 7) 10, 197
// (ViT's tokens) 11; the shifted-in last tile computes what 8-row tiles compute.
TEST(DefaultTile, PlainTilesFitRowCountsWithoutADivisorOfEight) {
  auto rows_of = [](int64_t m) { return plan_tile(only_tile(matmul_workload("tile_rows_mm.onnx", m, 64, 128)), {}).U; };
  EXPECT_EQ(rows_of(64), 8);
  EXPECT_EQ(rows_of(784), 8);
  EXPECT_EQ(rows_of(49), 10);
  EXPECT_EQ(rows_of(196), 11);
  EXPECT_EQ(rows_of(197), 11);
  EXPECT_EQ(rows_of(13), 7);
  EXPECT_EQ(rows_of(5), 5);
  const Workload w = matmul_workload("tile_rows_mm49.onnx", 49, 96, 128);
  ASSERT_EQ(plan_tile(only_tile(w), {}).U, 10);
  DefaultKnobs eight;
  eight.columns = 8;
  test::expect_variants_match_rule(w, "tile_rows_mm_cache", {eight});
}

// A plain grouped conv whose output channel indexes its input through the group (2 groups of 18
// -> 6 channels, 5 x 5 over 40 x 5 outputs) shares no load between any of its loops; it still
// takes a tile of rows, each an accumulator of its own, and computes what one row at a time does.
TEST(DefaultTile, PlainTilesWithoutAReuseLoopTakeRowsForAccumulators) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 36, 40, 5})
      .initializer("w", test::rand_f32({12, 18, 5, 5}, 5))
      .node("Conv", {"x", "w"}, {"y"}, {{"group", int64_t{2}}, {"pads", std::vector<int64_t>{2, 2, 2, 2}}})
      .output("y");
  const Partition part = partition_graph(test::import_model(b.save("tile_plain_grouped.onnx")));
  ASSERT_EQ(part.workloads.size(), 1u);
  const Workload& w = part.workloads[0];
  const TileFacts f = only_tile(w);
  EXPECT_FALSE(f.blocked);
  ASSERT_GE(f.u, 1);
  EXPECT_EQ(f.ext[f.u], 40);  // the rows
  EXPECT_EQ(plan_tile(f, {}).U, 8);
  DefaultKnobs one, three;
  one.columns = 1;
  three.columns = 3;  // 40 rows: a tail shifted inwards
  test::expect_variants_match_rule(w, "tile_plain_grouped_cache", {one, three});
}

// A 1x1 conv whose blocked input exceeds L2 (256 channels over 56 x 56: 3.2 MB) runs its rows
// outermost on Intel hosts, so a row's input stays in L2 for every output block; a small input
// (64 channels) keeps the output blocks outermost, and the knob orders loops either way.
TEST(DefaultTile, ConvsWhoseInputExceedsL2RunRowsOutermost) {
  auto rows_outermost = [](const TilePlan& p, int64_t rows) {
    return p.outer.back().kind == OuterKind::Pure && p.outer.back().extent == rows;
  };
  const TileFacts big = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_rows.onnx", 16, 256, 64, 56, 56, 1)));
  EXPECT_EQ(big.input_bytes, 256 * 56 * 56 * 4);
  EXPECT_EQ(big.weight_bytes, 256 * 64 * 4);
  EXPECT_EQ(rows_outermost(plan_tile(big, {}), 56), intel_host() && big.input_bytes > host_l2_bytes());
  EXPECT_EQ(row_group_of(plan_tile(big, {})), 0) << "a tile's weights in L1 (32 KB): no chunks, no row groups";
  const TileFacts small = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_rows_small.onnx", 16, 64, 256, 28, 28, 1)));
  EXPECT_EQ(small.input_bytes, 64 * 28 * 28 * 4);
  EXPECT_FALSE(rows_outermost(plan_tile(small, {}), 28));
  // The knob names the loop to move: the rows (p.outer[2], after the vector and column loops).
  DefaultKnobs rows;
  rows.outermost = 2;
  ASSERT_EQ(plan_tile(small, {}).outer.at(2).kind, OuterKind::Pure);
  EXPECT_TRUE(rows_outermost(plan_tile(small, rows), 28));
}

// Where such a tile runs its column tiles in chunks (1024 input channels: a 2-block tile's
// weights are 128 KB; the rule's plan on Intel hosts), its rows run in one group of all 28 inside
// the block loop, r holding the 100 KB of their accumulators: each block pair's weights are read
// once, not once per row. The knob picks other groups (the outermost loop keeps the groups) or
// none.
TEST(DefaultTile, ChunkedConvsWhoseInputExceedsL2RunTheirRowsInGroups) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const TileFacts f = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_groups.onnx", 16, 1024, 256, 28, 28, 1)));
  ASSERT_EQ(f.input_bytes, 1024 * 28 * 28 * 4);
  const TilePlan p = plan_tile(f, {});
  ASSERT_EQ(p.Vt, 2);
  ASSERT_EQ(p.k_block, intel_host() ? 8 : 0) << "the rule chunks on Intel hosts only";
  if (intel_host() && f.input_bytes > host_l2_bytes()) {
    EXPECT_EQ(row_group_of(p), 28);
    EXPECT_EQ(p.outer.back().extent, 1);
    ASSERT_GE(p.streamed, 2);
    EXPECT_EQ(p.outer[2].kind, OuterKind::PureGroup) << "the group right outside the column tiles";
    EXPECT_EQ(p.outer[3].kind, OuterKind::Blocks);
  } else {
    EXPECT_EQ(row_group_of(p), 0);
  }
  DefaultKnobs rows_out, groups_of_4, none;
  rows_out.outermost = 2;
  rows_out.chunk = 8;  // as the rule chunks on Intel hosts
  groups_of_4 = rows_out;
  groups_of_4.row_group = 4;
  none = rows_out;
  none.row_group = 0;
  const TilePlan four = plan_tile(f, groups_of_4);
  EXPECT_EQ(row_group_of(four), 4);
  EXPECT_EQ(four.outer.back().kind, OuterKind::Pure);
  EXPECT_EQ(four.outer.back().extent, 7);
  EXPECT_EQ(row_group_of(plan_tile(f, none)), 0);
  EXPECT_EQ(plan_tile(f, none).outer.back().extent, 28);
  // A tile whose rows do not run outermost has no groups, whatever the knob.
  DefaultKnobs blocks_out;
  blocks_out.outermost = 3;
  blocks_out.row_group = 4;
  EXPECT_EQ(row_group_of(plan_tile(f, blocks_out)), 0);
}

TEST(DefaultTile, RowGroupsComputeWhatTheRuleComputes) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  // 512 -> 64 channels (chunked by rule), 13 x 13: column and row groups with tails.
  const Workload w = test::conv_relu_workload(test::save_conv_chain("tile_groups_run.onnx", 16, 512, 64, 13, 13, 1));
  std::vector<DefaultKnobs> variants;
  for (int group : {13, 5, 4}) {
    for (int tasks : {0, 1}) {
      DefaultKnobs k;
      k.outermost = 2;  // the rows outermost, in groups inside the block loop
      k.row_group = group;
      if (tasks) k.tasks = tasks;
      ASSERT_EQ(row_group_of(plan_tile(only_tile(w), k)), group);
      variants.push_back(k);
    }
  }
  test::expect_variants_match_rule(w, "tile_groups_cache", variants);
}

TEST(DefaultTile, StreamedAndUnstreamedTilesComputeTheSame) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const MeasureOptions mo = test::check_only_options("tile_stream_cache");
  // The Measurer's reference is the rule (streamed or not, by host): both variants must match it.
  const Workload big = test::conv_relu_workload(test::save_conv_chain("tile_stream_run.onnx", 16, 256, 256, 7, 7));
  DefaultKnobs off, streamed;
  off.stream = 0;
  streamed.stream = 1;
  Measurer m(big, mo);
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  for (const auto& r : m.measure_batch({test::rule_variant(big, off), test::rule_variant(big, streamed)}))
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
  // A 14-wide one, streamed over its whole width, against 7-column tiles of 2 blocks.
  const Workload wide = test::conv_relu_workload(test::save_conv_chain("tile_stream14_run.onnx", 16, 256, 256, 9, 14));
  DefaultKnobs whole, narrow;
  whole.columns = 14;
  whole.blocks = 1;
  whole.stream = 1;
  ASSERT_GE(plan_tile(only_tile(wide), whole).streamed, 0);
  narrow.columns = 7;
  narrow.blocks = 2;
  narrow.stream = 0;
  Measurer mw(wide, mo);
  ASSERT_TRUE(mw.reference().valid()) << mw.reference().error_message;
  for (const auto& r : mw.measure_batch({test::rule_variant(wide, whole), test::rule_variant(wide, narrow)}))
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
  // And a streamed small conv (rule: unstreamed) matches its rule.
  const Workload small = test::conv_relu_workload(test::save_conv_chain("tile_stream_small.onnx", 16, 32, 256, 7, 7));
  ASSERT_EQ(plan_tile(only_tile(small), {}).streamed, -1);
  DefaultKnobs on;
  on.stream = 1;
  ASSERT_GE(plan_tile(only_tile(small), on).streamed, 0);
  Measurer ms(small, mo);
  ASSERT_TRUE(ms.reference().valid()) << ms.reference().error_message;
  const auto rs = ms.measure_batch({test::rule_variant(small, on)});
  EXPECT_TRUE(rs.at(0).valid()) << rs.at(0).error_kind << ": " << rs.at(0).error_message;
}

// On Intel hosts a 1x1 conv reading 512 channels (a 2-block tile's weights: 64 KB, beyond L1)
// runs its column tiles and rows inside chunks of 8 input blocks, r holding them all (elsewhere
// the plain order: tile_cache_plan.cpp); 256 channels (32 KB) and a 3x3 conv keep the plain order
// everywhere; the knob chunks or unchunks any blocked tile.
TEST(DefaultTile, PointwiseConvsWithWeightsBeyondL1ChunkTheirInputChannels) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const Workload w = test::conv_relu_workload(test::save_conv_chain("tile_chunk.onnx", 16, 512, 64, 14, 14, 1));
  const TileFacts f = only_tile(w);
  EXPECT_EQ(plan_tile(f, {}).k_block, intel_host() ? 8 : 0);
  DefaultKnobs chunked;  // the rule's plan on Intel hosts
  chunked.chunk = 8;
  const TilePlan p = plan_tile(f, chunked);
  ASSERT_EQ(p.Vt, 2);
  EXPECT_EQ(p.U, 7);
  EXPECT_EQ(p.k_block, 8);
  ASSERT_GE(p.streamed, 1);
  EXPECT_EQ(p.outer[1].kind, OuterKind::Columns);
  for (int j = 1; j <= p.streamed; j++) EXPECT_LT(j, static_cast<int>(p.outer.size()) - p.fused) << "a parallel loop inside";
  const std::string stmt = lowered_statement(w, chunked);
  EXPECT_NE(stmt.find("_ko, 0, 4)"), std::string::npos) << "no loop over 4 chunks of 8 input blocks";
  EXPECT_NE(stmt.find("_ki, 0, 8)"), std::string::npos) << "no loop over a chunk's 8 blocks";
  DefaultKnobs off;
  off.chunk = 0;
  EXPECT_EQ(plan_tile(f, off).k_block, 0);
  EXPECT_EQ(plan_tile(f, off).streamed, -1);
  EXPECT_EQ(lowered_statement(w, off).find("_ko, 0,"), std::string::npos);

  const TileFacts narrow = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_chunk256.onnx", 16, 256, 64, 14, 14, 1)));
  EXPECT_EQ(plan_tile(narrow, {}).k_block, 0);
  DefaultKnobs four;
  four.chunk = 4;
  EXPECT_EQ(plan_tile(narrow, four).k_block, 4);
  const TileFacts taps = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_chunk3x3.onnx", 16, 512, 64, 14, 14, 3)));
  EXPECT_EQ(plan_tile(taps, {}).k_block, 0);
}

TEST(DefaultTile, ChunkedAndUnchunkedTilesComputeTheSame) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const MeasureOptions mo = test::check_only_options("tile_chunk_cache");
  // The reference is the rule (chunks of 8 of 32 blocks on Intel hosts, none elsewhere); 13 wide:
  // the column tiles' tail runs.
  const Workload w = test::conv_relu_workload(test::save_conv_chain("tile_chunk_run.onnx", 16, 512, 48, 13, 13, 1));
  ASSERT_EQ(plan_tile(only_tile(w), {}).k_block, intel_host() ? 8 : 0);
  Measurer m(w, mo);
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  DefaultKnobs off, eight, tail, serial;
  off.chunk = 0;
  eight.chunk = 8;
  tail.chunk = 5;  // 32 blocks = 6 x 5 + 2: the chunks' tail runs
  serial.chunk = 8;
  serial.tasks = 1;  // nothing parallel: the rows run inside the chunks too, r holds all of them
  ASSERT_EQ(plan_tile(only_tile(w), eight).streamed, 1);
  ASSERT_GE(plan_tile(only_tile(w), serial).streamed, 2);
  for (const auto& r : m.measure_batch({test::rule_variant(w, off), test::rule_variant(w, eight),
                                        test::rule_variant(w, tail), test::rule_variant(w, serial)}))
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
}

// A squeeze-excite conv on one pixel: 960 -> 240 channels is 230400 multiply-adds, below
// kDefaultParallelWork, but reads 900 KiB of weights, so its output blocks are parallel tasks
// (computing what the serial tile computes); 480 -> 40 (75 KiB) stays serial.
TEST(DefaultTile, MatrixVectorConvsWithWeightsBeyondTheThresholdRunInParallel) {
  const Workload big = test::conv_relu_workload(test::save_conv_chain("tile_matvec.onnx", 16, 960, 240, 1, 1, 1));
  const TileFacts f = only_tile(big);
  ASSERT_EQ(f.largest_operand_bytes, 960 * 240 * 4);  // the weights (one pixel: no reuse loop tells them apart)
  ASSERT_LT(f.work, kDefaultParallelWork);
  const TilePlan p = plan_tile(f, {});
  EXPECT_GT(p.fused, 0);
  EXPECT_GE(p.tasks, 2);
  DefaultKnobs serial;
  serial.tasks = 1;
  EXPECT_EQ(plan_tile(f, serial).fused, 0);
  test::expect_variants_match_rule(big, "tile_matvec_cache", {serial});

  const TileFacts small = only_tile(test::conv_relu_workload(test::save_conv_chain("tile_matvec_small.onnx", 16, 480, 40, 1, 1, 1)));
  ASSERT_EQ(small.largest_operand_bytes, 480 * 40 * 4);
  ASSERT_LT(small.largest_operand_bytes, kParallelReadBytes);
  EXPECT_EQ(plan_tile(small, {}).fused, 0);
}

}  // namespace
}  // namespace ts
