// The next task's weights prefetched (schedule/task_prefetch.h) on real lowered convs: the rule
// asks for it on small-image convs with large weights, the request survives as a tag, the pass
// puts prefetch lines into each task's reduction loop (a few lines at a time, within the next
// task's slice; prefetcht0 on AMD, prefetcht1 on Intel; with prefetch=2 one more per page of the
// slice three tasks ahead), and the prefetching code computes what the plain code computes.
#include "schedule/task_prefetch.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "graph/layout_plan.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/rule_sketch.h"
#include "schedule/default_tile.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

using test::only_tile;

// The default schedule of w with `knobs`, as compile_workload lowers it (with the requested
// passes), as text or as assembly.
std::string compiled_text(const Workload& w, const DefaultKnobs& knobs, bool assembly) {
  LoweredWorkload lw = lower_workload(w);
  apply_default_variant(lw.outputs, host_code_target(), knobs);
  add_task_prefetch_passes(lw.pipeline, lw.outputs);
  const auto path = test::temp_dir() / (assembly ? "task_prefetch.s" : "task_prefetch_stmt.txt");
  if (assembly) lw.pipeline.compile_to_assembly(path.string(), lw.args, "workload", host_code_target());
  else lw.pipeline.compile_to_lowered_stmt(path.string(), lw.args, Halide::StmtOutputFormat::Text, host_code_target());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) n++;
  return n;
}

TEST(TaskPrefetch, RequestsRoundTripThroughTheirTag) {
  TaskPrefetch r;
  r.task_loop = "d0_vo_f";
  r.task_func = "output_t1";
  r.spread_stage = "Conv_0_n0_acc.s1";
  r.buffer = "in1";
  r.task_bytes = 589824;
  r.buffer_bytes = 9437184;
  r.locality = 3;
  r.walk_ahead_tasks = 2;
  const std::optional<TaskPrefetch> back = TaskPrefetch::from_tag(r.to_tag());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, r);
  TaskPrefetch backwards = r;
  backwards.walk_ahead_tasks = -1;
  EXPECT_FALSE(TaskPrefetch::from_tag(backwards.to_tag()));
  EXPECT_FALSE(TaskPrefetch::from_tag("func_type_and_dim: 1 2 32 1"));       // another tag
  EXPECT_FALSE(TaskPrefetch::from_tag("tensorsched.task_prefetch {"));       // not JSON
  EXPECT_FALSE(TaskPrefetch::from_tag("tensorsched.task_prefetch {\"buffer\":\"in1\"}"));  // fields missing
  TaskPrefetch empty = r;
  empty.task_bytes = 0;
  EXPECT_FALSE(TaskPrefetch::from_tag(empty.to_tag()));
}

// 256 -> 256 channels, 3x3, on 7 x 7: 2.4 MB of weights, contiguous per output block; each
// parallel task (a tile of 2 blocks) reads 288 KB of them.
TEST(TaskPrefetch, SmallImageConvsWithLargeWeightsPrefetchTheNextTasksSlice) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const Workload w = test::conv_relu_workload(test::save_conv_chain("prefetch_7x7.onnx", 16, 256, 256, 7, 7));
  const TileFacts f = only_tile(w);
  EXPECT_EQ(f.block_weight_bytes, 256 * 9 * 16 * 4);
  // Where the rule streams such weights (hosts other than Intel's), it does not prefetch them;
  // the knobs ask for the prefetching tile there. Elsewhere its rows run inside chunks of one
  // input block (the next test).
  const TilePlan p = plan_tile(f, {});
  ASSERT_EQ(p.Vt, 2);
  EXPECT_EQ(p.prefetch_next_task, p.k_block == 1);
  DefaultKnobs on, off;
  on.prefetch = 1;
  on.stream = 0;
  off.prefetch = 0;
  EXPECT_TRUE(plan_tile(f, on).prefetch_next_task);
  EXPECT_FALSE(plan_tile(f, off).prefetch_next_task);

  LoweredWorkload lw = lower_workload(w);
  apply_default_variant(lw.outputs, host_code_target(), on);
  const std::vector<TaskPrefetch> reqs = task_prefetch_requests(lw.outputs);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].task_bytes, 2 * f.block_weight_bytes);
  EXPECT_EQ(reqs[0].buffer_bytes, f.weight_bytes);
  EXPECT_EQ(reqs[0].locality, intel_host() ? 2 : 3);

  // Lowered: 7 rows x 16 input blocks x 16 input channels = 1792 chunks of 164 bytes (3 lines),
  // at the top of the innermost rolled reduction loop, inside the task's loops.
  const std::string stmt = compiled_text(w, on, false);
  EXPECT_EQ(count(stmt, "llvm.prefetch.p0i8("), 3u) << stmt;
  const std::regex spread(R"(for \(([A-Za-z0-9_$.]+\.s1\.[A-Za-z0-9_$.]+), 0, 16\) \{\s*if \()");
  EXPECT_TRUE(std::regex_search(stmt, spread)) << "no prefetch at the top of a 16-iteration reduction loop";
  EXPECT_EQ(compiled_text(w, off, false).find("llvm.prefetch"), std::string::npos);
  // And in the machine code: prefetcht0 (into L1 and L2) on AMD hosts, prefetcht1 (L2) on Intel,
  // never Halide's prefetchnta.
  const std::string s = compiled_text(w, on, true);
  EXPECT_EQ(count(s, intel_host() ? "prefetcht1" : "prefetcht0"), 3u);
  EXPECT_EQ(count(s, intel_host() ? "prefetcht0" : "prefetcht1"), 0u);
  EXPECT_EQ(count(s, "prefetchnta"), 0u);

  // prefetch=2 (never the rule's): one more prefetch per chunk site, of the slice two tasks past
  // the next one, taken where that place is among its page's first chunk bytes (once a page).
  DefaultKnobs walk = on;
  walk.prefetch = 2;
  EXPECT_FALSE(plan_tile(f, on).walk_pages_ahead);
  EXPECT_FALSE(plan_tile(f, {}).walk_pages_ahead);
  ASSERT_TRUE(plan_tile(f, walk).walk_pages_ahead);
  LoweredWorkload lw2 = lower_workload(w);
  apply_default_variant(lw2.outputs, host_code_target(), walk);
  const std::vector<TaskPrefetch> walk_reqs = task_prefetch_requests(lw2.outputs);
  ASSERT_EQ(walk_reqs.size(), 1u);
  EXPECT_EQ(walk_reqs[0].walk_ahead_tasks, kWalkAheadTasks);
  EXPECT_EQ(reqs[0].walk_ahead_tasks, 0);
  const std::string walk_stmt = compiled_text(w, walk, false);
  EXPECT_EQ(count(walk_stmt, "llvm.prefetch.p0i8("), 4u) << walk_stmt;
  // Its guard: the slice's end, and the place's offset in its page below the chunk (192 bytes).
  EXPECT_NE(walk_stmt.find("% (uint64)4096) < (uint64)192)"), std::string::npos) << walk_stmt;
  const int64_t walked = (1 + kWalkAheadTasks) * reqs[0].task_bytes;  // task t + 3's slice, from task 0
  EXPECT_NE(walk_stmt.find("(int64)" + std::to_string(walked) + ")"), std::string::npos) << walk_stmt;
  EXPECT_EQ(count(compiled_text(w, walk, true), intel_host() ? "prefetcht1" : "prefetcht0"), 4u);
}

// 256 -> 256 channels, 3x3, on 7 x 7 again: a task's slice (288 KB) is read from L2 once per row
// unless the rows run inside chunks of one input block, whose 18 KB of weights stay in L1.
TEST(TaskPrefetch, SmallImagesWithLargeSlicesRunTheirRowsInsideOneBlockChunks) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const TileFacts f = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_chunks.onnx", 16, 256, 256, 7, 7)));
  DefaultKnobs rule, no_prefetch, no_chunks;
  rule.stream = 0;  // as the rule plans on Intel hosts (others stream such weights)
  no_prefetch = rule;
  no_prefetch.prefetch = 0;
  no_chunks = rule;
  no_chunks.chunk = 0;
  const TilePlan p = plan_tile(f, rule);
  EXPECT_EQ(p.k_block, 1);
  EXPECT_GE(p.streamed, 2) << "the column tile and the rows inside the chunks";
  EXPECT_LT(p.streamed, static_cast<int>(p.outer.size()) - p.fused);
  EXPECT_TRUE(p.prefetch_next_task);
  // The chunks only come with the prefetch; without chunks the prefetch stays.
  EXPECT_EQ(plan_tile(f, no_prefetch).k_block, 0);
  EXPECT_FALSE(plan_tile(f, no_prefetch).prefetch_next_task);
  EXPECT_EQ(plan_tile(f, no_chunks).k_block, 0);
  EXPECT_TRUE(plan_tile(f, no_chunks).prefetch_next_task);
  // 1024 -> 256: 1.2 MB slices, too large for two side by side in L2: prefetched in chunks only,
  // where L2 holds the next slice alone.
  const TileFacts big = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_chunks_big.onnx", 16, 1024, 256, 7, 7)));
  const int64_t slice = 2 * big.block_weight_bytes;
  ASSERT_EQ(slice, 2 * 1024 * 9 * 16 * 4);
  const TilePlan chunked = plan_tile(big, rule);
  EXPECT_EQ(chunked.prefetch_next_task, slice <= host_l2_bytes());
  EXPECT_EQ(chunked.k_block, slice <= host_l2_bytes() ? 1 : 0);
  EXPECT_EQ(plan_tile(big, no_chunks).prefetch_next_task, 2 * slice <= host_l2_bytes() * 3 / 4);
  // Smaller slices, larger images and 1x1 convs with their tile's weights in L1 keep the task's order.
  const TileFacts small_slice = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_chunks_128.onnx", 16, 128, 256, 7, 7)));
  const TileFacts wide = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_chunks_14.onnx", 16, 256, 256, 14, 14)));
  const TileFacts light_1x1 = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_chunks_1x1_light.onnx", 16, 160, 960, 7, 7, 1)));
  for (const TileFacts* other : {&small_slice, &wide, &light_1x1}) {
    const TilePlan q = plan_tile(*other, rule);
    EXPECT_TRUE(q.prefetch_next_task);
    EXPECT_EQ(q.k_block, 0);
  }
  // A 1x1 conv of one column tile whose tile's weights exceed L1 (1024 input channels x 2 blocks:
  // 128 KB) can run in chunks of 8 input blocks (128 channels), its rows inside, still
  // prefetching; the rule takes them on Intel hosts only (slower elsewhere).
  const TileFacts one_by_one = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_chunks_1x1.onnx", 16, 1024, 512, 7, 7, 1)));
  DefaultKnobs chunks_of_8 = rule;
  chunks_of_8.chunk = 8;
  const TilePlan q = plan_tile(one_by_one, chunks_of_8);
  EXPECT_EQ(q.k_block, 8);
  EXPECT_GE(q.streamed, 2);
  EXPECT_TRUE(q.prefetch_next_task);
  const TilePlan by_rule = plan_tile(one_by_one, rule);
  EXPECT_EQ(by_rule.k_block, intel_host() ? 8 : 0);
  EXPECT_TRUE(by_rule.prefetch_next_task);
  EXPECT_EQ(by_rule.tasks, q.tasks) << "tasks of one block tile either way";
  EXPECT_EQ(plan_tile(one_by_one, no_prefetch).k_block, 0);
}

// x[rows, 512] times a constant 512 x 1024 B (2 MB), which the layout plan stores as [32][512][32]
// panels of 64 KB: each parallel task runs one panel's column tiles.
Workload panel_matmul(const std::string& file, int64_t rows) {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {rows, 512}).initializer("w", test::rand_f32({512, 1024}, 7)).node("MatMul", {"x", "w"}, {"y"}).output("y");
  Graph g = test::import_model(b.save(file));
  EXPECT_EQ(plan_layouts(g, 16).matmul_panels, 1);
  return partition_graph(g).workloads.at(0);
}

TEST(TaskPrefetch, PanelPackedMatmulsPrefetchTheNextTasksPanel) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const Workload w = panel_matmul("prefetch_mm.onnx", 128);
  const TileFacts f = only_tile(w);
  ASSERT_FALSE(f.blocked);
  EXPECT_EQ(f.block_weight_bytes, 512 * 32 * 4);
  const TilePlan p = plan_tile(f, {});
  EXPECT_EQ(p.X * f.V, 32);
  EXPECT_TRUE(p.prefetch_next_task);
  DefaultKnobs off;
  off.prefetch = 0;
  EXPECT_FALSE(plan_tile(f, off).prefetch_next_task);

  LoweredWorkload lw = lower_workload(w);
  apply_default_variant(lw.outputs, host_code_target(), {});
  const std::vector<TaskPrefetch> reqs = task_prefetch_requests(lw.outputs);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].task_bytes, 512 * 32 * 4);
  EXPECT_EQ(reqs[0].buffer_bytes, 512 * 1024 * 4);
  EXPECT_GE(count(compiled_text(w, {}, false), "llvm.prefetch.p0i8("), 1u);
  EXPECT_EQ(compiled_text(w, off, false).find("llvm.prefetch"), std::string::npos);

  // 784 rows: a task's compute hides its panel's trip from memory; the knob asks anyway.
  const TileFacts tall = only_tile(panel_matmul("prefetch_mm_tall.onnx", 784));
  EXPECT_FALSE(plan_tile(tall, {}).prefetch_next_task);
  DefaultKnobs on;
  on.prefetch = 1;
  EXPECT_TRUE(plan_tile(tall, on).prefetch_next_task);

  // 100 rows (8 row tiles, the last shifted inwards): both variants match the Measurer's reference.
  const Workload odd = panel_matmul("prefetch_mm_run.onnx", 100);
  ASSERT_TRUE(plan_tile(only_tile(odd), {}).prefetch_next_task);
  Measurer m(odd, test::check_only_options("task_prefetch_mm_cache"));
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  for (const auto& r : m.measure_batch({test::rule_variant(odd, {}), test::rule_variant(odd, off)}))
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
}

// A small image whose output blocks give 4-7 block pairs (192 channels: 6) takes one pair a task,
// prefetching the next one's slice, instead of fusing its rows in for 8 tasks; the tasks knob
// still fuses them, and both compute what the rule computes.
TEST(TaskPrefetch, FewBlockPairsTakeOneTaskAPairWhereTheyPrefetch) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const Workload w = test::conv_relu_workload(test::save_conv_chain("pf_pairs.onnx", 16, 1024, 192, 8, 8, 1));
  const TileFacts f = only_tile(w);
  const TilePlan p = plan_tile(f, {});
  EXPECT_EQ(p.tasks, 6);
  EXPECT_TRUE(p.prefetch_next_task);
  DefaultKnobs eight;
  eight.tasks = 8;
  const TilePlan rows = plan_tile(f, eight);
  EXPECT_EQ(rows.tasks, 48);
  EXPECT_FALSE(rows.prefetch_next_task);
  // Small weights (64 input channels: 48 KB) keep the rows fused: nothing to prefetch.
  EXPECT_EQ(plan_tile(only_tile(test::conv_relu_workload(test::save_conv_chain("pf_pairs_small.onnx", 16, 64, 192, 8, 8, 1))), {}).tasks, 48);
  test::expect_variants_match_rule(w, "pf_pairs_cache", {eight});
}

TEST(TaskPrefetch, LargeImagesAndSmallWeightsKeepThePlainCode) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  // 28 x 28: a task's compute hides its slice's trip from memory.
  const TileFacts wide = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_28.onnx", 16, 256, 256, 28, 28)));
  EXPECT_FALSE(plan_tile(wide, {}).prefetch_next_task);
  // 32 -> 64 channels: 74 KB of weights.
  const TileFacts light = only_tile(test::conv_relu_workload(test::save_conv_chain("prefetch_light.onnx", 16, 32, 64, 7, 7)));
  EXPECT_FALSE(plan_tile(light, {}).prefetch_next_task);
  DefaultKnobs on;
  on.prefetch = 1;
  EXPECT_TRUE(plan_tile(wide, on).prefetch_next_task);  // the knob asks anyway
}

TEST(TaskPrefetch, ThePassLeavesStatementsWithoutTheNamedLoopsAlone) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const Workload w = test::conv_relu_workload(test::save_conv_chain("prefetch_pass.onnx", 16, 256, 256, 7, 7));
  LoweredWorkload lw = lower_workload(w);
  DefaultKnobs on;
  on.prefetch = 1;
  on.stream = 0;
  apply_default_variant(lw.outputs, host_code_target(), on);
  const std::vector<TaskPrefetch> reqs = task_prefetch_requests(lw.outputs);
  ASSERT_EQ(reqs.size(), 1u);
  // A statement of one loop that names neither the task loop nor the buffer.
  using namespace Halide::Internal;
  const Stmt s = For::make("f.s0.x", 0, 8, ForType::Serial, Halide::DeviceAPI::None,
                           Evaluate::make(Call::make(Halide::Int(32), "g", {Variable::make(Halide::Int(32), "f.s0.x")}, Call::Extern)));
  int sites = -1;
  EXPECT_TRUE(insert_task_prefetch(s, reqs[0], &sites).same_as(s));
  EXPECT_EQ(sites, 0);
}

TEST(TaskPrefetch, PrefetchingAndPlainTilesComputeTheSame) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const MeasureOptions mo = test::check_only_options("task_prefetch_cache");
  // 9 wide, 17 output blocks in 9 tiles of 2, the last shifted inwards: the next-to-last task's
  // prefetches are clipped to the weights' end, the last task's are skipped. Each variant must
  // match the Measurer's reference (the rule's code).
  const Workload w = test::conv_relu_workload(test::save_conv_chain("prefetch_run.onnx", 16, 256, 272, 9, 9));
  DefaultKnobs on, off, one_block, chunked, walk;
  on.prefetch = 1;
  on.stream = 0;
  off.prefetch = 0;
  walk = on;
  walk.prefetch = 2;  // the walks three tasks ahead run past the weights' end for the last tasks: clipped
  one_block = on;
  one_block.blocks = 1;  // tasks of one block each
  chunked = on;
  chunked.chunk = 1;  // rows inside chunks of one input block
  ASSERT_TRUE(plan_tile(only_tile(w), on).prefetch_next_task);
  ASSERT_TRUE(plan_tile(only_tile(w), one_block).prefetch_next_task);
  ASSERT_EQ(plan_tile(only_tile(w), one_block).Vt, 1);
  ASSERT_TRUE(plan_tile(only_tile(w), chunked).prefetch_next_task);
  ASSERT_TRUE(plan_tile(only_tile(w), walk).walk_pages_ahead);
  ASSERT_EQ(plan_tile(only_tile(w), chunked).k_block, 1);
  Measurer m(w, mo);
  ASSERT_TRUE(m.reference().valid()) << m.reference().error_message;
  for (const auto& r : m.measure_batch({test::rule_variant(w, on), test::rule_variant(w, off),
                                        test::rule_variant(w, one_block), test::rule_variant(w, chunked),
                                        test::rule_variant(w, walk)}))
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;

  // A 1x1 conv, 640 -> 272 at 7 x 7: chunks of 8 input blocks (5 chunks) with the prefetch, the
  // last output tile shifted inwards.
  const Workload pw = test::conv_relu_workload(test::save_conv_chain("prefetch_run_1x1.onnx", 16, 640, 272, 7, 7, 1));
  DefaultKnobs pw_chunked = on;
  pw_chunked.chunk = 8;
  ASSERT_EQ(plan_tile(only_tile(pw), pw_chunked).k_block, 8);
  ASSERT_TRUE(plan_tile(only_tile(pw), pw_chunked).prefetch_next_task);
  Measurer pm(pw, mo);
  ASSERT_TRUE(pm.reference().valid()) << pm.reference().error_message;
  for (const auto& r : pm.measure_batch({test::rule_variant(pw, pw_chunked), test::rule_variant(pw, off)}))
    EXPECT_TRUE(r.valid()) << r.error_kind << ": " << r.error_message;
}

}  // namespace
}  // namespace ts
