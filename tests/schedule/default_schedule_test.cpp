// The default schedule on a hand-written Halide pipeline (not from ONNX): it must pick the
// documented placements and loop types, and keep results unchanged.
#include "schedule/default_schedule.h"

#include <gtest/gtest.h>

#include <filesystem>


#include "api/compile_model.h"
#include "graph/layout_plan.h"
#include "graph/workload.h"
#include "lower/lower.h"
#include "measure/workload_compiler.h"
#include "runtime/compiled_model.h"
#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"

namespace ts {
namespace {

using Halide::Internal::ForType;
using test::conv_relu_workload;
using test::save_conv_chain;

bool computed_at_root(const Halide::Func& f) {
  Halide::LoopLevel l = f.function().schedule().compute_level();
  l.lock();
  return l.is_root();
}

bool has_loop_type(const Halide::Internal::Function& f, int stage, ForType t) {
  const auto& dims = stage == 0 ? f.definition().schedule().dims() : f.update(stage - 1).schedule().dims();
  for (const auto& d : dims)
    if (d.for_type == t) return true;
  return false;
}

TEST(DefaultSchedule, SoftmaxLikeReductionsStayAtRoot) {
  const int N = 37, M = 5;
  Halide::Buffer<float> in(N, M);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) in(j, i) = static_cast<float>((i * 13 + j * 7) % 17) / 4.0f;
  Halide::Var x("x"), y("y");
  Halide::RDom r(0, N, "r");
  Halide::Func sum("sum"), out("out");
  sum(x, y) = 0.0f;  // keepdims reduction: extent 1 along x, unlike the output
  sum(x, y) += in(r, y);
  sum.set_estimate(x, 0, 1).set_estimate(y, 0, M);
  out(x, y) = in(x, y) / sum(0, y);
  out.set_estimate(x, 0, N).set_estimate(y, 0, M);
  apply_default_schedule({out}, host_code_target());
  EXPECT_TRUE(computed_at_root(sum));
  Halide::Buffer<float> result = out.realize({N, M});
  for (int i = 0; i < M; i++) {
    float s = 0;
    for (int j = 0; j < N; j++) s += in(j, i);
    for (int j = 0; j < N; j++) ASSERT_FLOAT_EQ(result(j, i), in(j, i) / s);
  }
}

// A Transformer's key heads: a slice of a projection, reshaped to heads and transposed so that
// the sequence is innermost. The copy runs in tiles (vector loop x unrolled transposed loop);
// sizes not a multiple of the vector width check the tiles' guards.
TEST(DefaultSchedule, TransposingCopyRunsInTiles) {
  const int S = 100, H = 3, D = 37, W = 2 * H * D + 5;  // sequence, heads, head width, row width
  Halide::Buffer<float> in(W, S);
  for (int s = 0; s < S; s++)
    for (int x = 0; x < W; x++) in(x, s) = static_cast<float>(x * 1000 + s);
  Halide::Var a("a"), b("b"), d("d"), h("h"), s("s");
  Halide::Func slice("slice"), heads("heads"), out("out");
  slice(a, b) = in(a + H * D, b);
  heads(d, h, s) = slice(d + h * D, s);
  out(s, d, h) = heads(d, h, s);
  out.set_estimate(s, 0, S).set_estimate(d, 0, D).set_estimate(h, 0, H);
  apply_default_schedule({out}, host_code_target());
  EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Vectorized));
  EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Unrolled));
  Halide::Buffer<float> result = out.realize({S, D, H});
  for (int hh = 0; hh < H; hh++)
    for (int dd = 0; dd < D; dd++)
      for (int ss = 0; ss < S; ss++) ASSERT_EQ(result(ss, dd, hh), in(H * D + hh * D + dd, ss)) << ss << " " << dd << " " << hh;
}

// A channel-blocked tensor [N, C / 16, H, W, 16] read into a plain [N, C, H, W] (a graph
// output's conversion): each plain channel reads lane c % 16, which steps by one only within a
// block, so the copy runs in tiles of one block of channels x one vector along the row; rows not
// a multiple of the vector width check the guards.
TEST(DefaultSchedule, BlockedToPlainCopyTransposesByBlocks) {
  const int B = host_code_target().natural_vector_size(Halide::Float(32));
  const int W = 21, H = 3, C = 2 * B;
  Halide::Buffer<float> in(B, W, H, C / B);  // innermost first: lane, column, row, block
  for (int cb = 0; cb < C / B; cb++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        for (int l = 0; l < B; l++) in(l, x, y, cb) = static_cast<float>((cb * B + l) * 1000 + y * 100 + x);
  Halide::Var x("x"), y("y"), c("c");
  Halide::Func out("out");
  out(x, y, c) = in(c % B, x, y, c / B);
  out.set_estimate(x, 0, W).set_estimate(y, 0, H).set_estimate(c, 0, C);
  apply_default_schedule({out}, host_code_target());
  EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Vectorized));
  EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Unrolled));
  Halide::Buffer<float> result = out.realize({W, H, C});
  for (int cc = 0; cc < C; cc++)
    for (int yy = 0; yy < H; yy++)
      for (int xx = 0; xx < W; xx++) ASSERT_EQ(result(xx, yy, cc), static_cast<float>(cc * 1000 + yy * 100 + xx));
}

// A copy that reads along its innermost variable is not a transposing copy: no unrolled loop.
TEST(DefaultSchedule, DenseCopyIsNotTiled) {
  const int N = 300, M = 40;
  Halide::Buffer<float> in(N + 3, M);
  for (int y = 0; y < M; y++)
    for (int x = 0; x < N + 3; x++) in(x, y) = static_cast<float>(x - y);
  Halide::Var x("x"), y("y");
  Halide::Func out("out");
  out(x, y) = in(x + 3, y) * 2.0f;
  out.set_estimate(x, 0, N).set_estimate(y, 0, M);
  apply_default_schedule({out}, host_code_target());
  EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Vectorized));
  EXPECT_FALSE(has_loop_type(out.function(), 0, ForType::Unrolled));
  Halide::Buffer<float> result = out.realize({N, M});
  for (int yy = 0; yy < M; yy++)
    for (int xx = 0; xx < N; xx++) ASSERT_EQ(result(xx, yy), 2.0f * in(xx + 3, yy));
}

// A matrix-vector dot product with its lanes along K (lower/gemm.cpp's form for a classifier):
// 8 outputs accumulate together inside the K loop (an unrolled loop in the update), and an output
// count that is no multiple of 8 keeps its tail right.
TEST(DefaultSchedule, MatrixVectorDotInterleavesOutputs) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const int L = 16, KO = 24, N = 37;
  Halide::Buffer<float> a(L * KO), b(L * KO, N);
  for (int k = 0; k < L * KO; k++) a(k) = static_cast<float>(k % 7) - 3.0f;
  for (int n = 0; n < N; n++)
    for (int k = 0; k < L * KO; k++) b(k, n) = static_cast<float>((k * 5 + n * 3) % 11) / 8.0f;
  Halide::Var l("l"), n("n");
  Halide::RDom ko(0, KO, "ko"), r(0, L, "r");
  Halide::Func dot("dot"), out("out");
  dot(l, n) = 0.0f;
  dot(l, n) += a(ko * L + l) * b(ko * L + l, n);
  dot.set_estimate(l, 0, L).set_estimate(n, 0, N);
  out(n) = 0.0f;
  out(n) += dot(r, n);
  out.set_estimate(n, 0, N);
  apply_default_schedule({out}, host_code_target());
  EXPECT_TRUE(computed_at_root(dot));
  EXPECT_TRUE(has_loop_type(dot.function(), 1, ForType::Vectorized));
  EXPECT_TRUE(has_loop_type(dot.function(), 1, ForType::Unrolled));
  Halide::Buffer<float> result = out.realize({N});
  for (int nn = 0; nn < N; nn++) {
    double s = 0;
    for (int k = 0; k < L * KO; k++) s += static_cast<double>(a(k)) * b(k, nn);
    ASSERT_NEAR(result(nn), s, 1e-3) << nn;
  }
}

// An SE block's squeeze conv: one pixel (no vector loop among the outputs), output channels that
// do not block, input channels blocked by 16 (a reduction loop of one vector of lanes). The lanes
// are factored out into a vector of partial sums per output channel, 8 channels accumulating
// together (vectorized and unrolled update of the intermediate), and 37 channels (no multiple of
// 8) keep the tail right.
TEST(DefaultSchedule, ReductionWithoutVectorOutputFactorsOutItsLanes) {
  TS_SKIP_UNLESS_AVX512("the rule's tile arithmetic");
  const int L = 16, KO = 24, C = 37;
  Halide::Buffer<float> in(L, 1, KO), w(L * KO, C);  // input NCHW16c: lanes, pixel, blocks
  for (int k = 0; k < KO; k++)
    for (int l = 0; l < L; l++) in(l, 0, k) = static_cast<float>((k * L + l) % 7) - 3.0f;
  for (int c = 0; c < C; c++)
    for (int k = 0; k < L * KO; k++) w(k, c) = static_cast<float>((k * 5 + c * 3) % 11) / 8.0f;
  Halide::Var x("x"), c("c");
  Halide::RDom r(0, L, 0, KO, "r");
  Halide::Func acc("acc"), out("out");
  acc(x, c) = 0.0f;
  acc(x, c) += in(r.x, x, r.y) * w(r.y * L + r.x, c);
  acc.set_estimate(x, 0, 1).set_estimate(c, 0, C);
  out(x, c) = Halide::max(acc(x, c), 0.0f);
  out.set_estimate(x, 0, 1).set_estimate(c, 0, C);
  apply_default_schedule({out}, host_code_target());
  const auto calls = Halide::Internal::find_transitive_calls(out.function());
  // Halide names the Func after acc ("acc_intm", made unique in the process as it likes).
  const auto partial = std::find_if(calls.begin(), calls.end(), [](const auto& c) { return c.first.find("intm") != std::string::npos; });
  ASSERT_NE(partial, calls.end()) << "no partial sums factored out of acc";
  EXPECT_TRUE(has_loop_type(partial->second, 1, ForType::Vectorized));
  EXPECT_TRUE(has_loop_type(partial->second, 1, ForType::Unrolled));
  Halide::Buffer<float> result = out.realize({1, C});
  for (int cc = 0; cc < C; cc++) {
    double s = 0;
    for (int k = 0; k < KO; k++)
      for (int l = 0; l < L; l++) s += static_cast<double>(in(l, 0, k)) * w(k * L + l, cc);
    ASSERT_NEAR(result(0, cc), std::max(s, 0.0), 1e-3) << cc;
  }
}

TEST(DefaultSchedule, MatmulWithBiasAndRelu) {
  const int M = 33, N = 40, K = 200;  // 264k multiply-adds: enough work to run in parallel
  Halide::Buffer<float> a(K, M), b(N, K), bias(N);
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++) a(k, i) = static_cast<float>((i * 7 + k * 3) % 11) - 5;
  for (int k = 0; k < K; k++)
    for (int j = 0; j < N; j++) b(j, k) = static_cast<float>((k * 5 + j) % 7) - 3;
  for (int j = 0; j < N; j++) bias(j) = static_cast<float>(j % 3);

  auto build = [&](bool schedule) {
    Halide::Var x("x"), y("y");
    Halide::RDom r(0, K, "r");
    Halide::Func scaled("scaled"), acc("acc"), out("out");
    scaled(x, y) = a(x, y) * 2.0f;  // a pure producer of the reduction: root
    acc(x, y) = 0.0f;
    acc(x, y) += scaled(r, y) * b(x, r);
    acc.set_estimate(x, 0, N).set_estimate(y, 0, M);
    scaled.set_estimate(x, 0, K).set_estimate(y, 0, M);
    out(x, y) = Halide::max(acc(x, y) + bias(x), 0.0f);
    out.set_estimate(x, 0, N).set_estimate(y, 0, M);
    if (schedule) {
      apply_default_schedule({out}, host_code_target());
      // Rule 5: out is tiled (vector x unrolled rows), acc lives inside each tile.
      EXPECT_FALSE(computed_at_root(acc));
      EXPECT_TRUE(computed_at_root(scaled));
      EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Vectorized));
      EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Unrolled));
      EXPECT_TRUE(has_loop_type(out.function(), 0, ForType::Parallel));
      EXPECT_TRUE(has_loop_type(acc.function(), 1, ForType::Vectorized));
      EXPECT_TRUE(has_loop_type(acc.function(), 1, ForType::Unrolled));
    }
    Halide::Buffer<float> result = out.realize({N, M});
    return result;
  };
  Halide::Buffer<float> plain = build(false), scheduled = build(true);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) ASSERT_EQ(plain(j, i), scheduled(j, i)) << i << "," << j;
}

// The accumulator stage (the reduction) of a lowered workload scheduled by the default rule.
Halide::Internal::Function default_scheduled_accumulator(const Workload& w) {
  LoweredWorkload lw = lower_workload(w);
  apply_default_schedule(lw.outputs, Halide::Target("x86-64-linux-avx512_skylake"));
  for (const auto& [name, f] : Halide::Internal::find_transitive_calls(lw.outputs[0].function()))
    if (name.find("_acc") != std::string::npos) return f;
  ADD_FAILURE() << w.name << ": no accumulator stage";
  return {};
}

// A conv between two convs reads and writes NCHW16c: the default gives it the blocked
// micro-kernel (16 lanes x 7 columns x 2 output-channel blocks = 14 accumulators, the 3x3 taps
// unrolled inside), decided from the shapes alone.
TEST(DefaultSchedule, BlockedConvGetsTheRegisterTileMicroKernel) {
  const Workload w = conv_relu_workload(save_conv_chain("chain.onnx", 8, 64, 64, 14, 14));
  ASSERT_EQ(w.graph.tensor(w.graph.inputs[0]).layout, (Layout{1, 16}));
  const Halide::Internal::Function f = default_scheduled_accumulator(w);
  ASSERT_TRUE(f.get_contents().defined());
  const Halide::Internal::Function* acc = &f;
  ASSERT_EQ(acc->updates().size(), 1u);
  int vectorized = 0, unrolled = 0;
  for (const auto& d : acc->update(0).schedule().dims()) {
    vectorized += d.for_type == ForType::Vectorized;
    unrolled += d.for_type == ForType::Unrolled;
  }
  EXPECT_EQ(vectorized, 1);  // the 16 output-channel lanes
  EXPECT_EQ(unrolled, 4);    // 7 columns, 2 channel blocks, 3x3 taps
  EXPECT_FALSE(computed_at_root(Halide::Func(*acc)));  // inside the output's register tile
}

// Odd multiples of 8 channels (24, 40, 1000) travel in 8-lane blocks; their convs pair two
// blocks into one 16-lane accumulator vector (two vectorized loops, nested ramps) with the last
// pair shifted inwards over an odd block count, and compute what the reference does.
TEST(DefaultSchedule, HalfVectorBlocksPairIntoFullVectors) {
  // 3 blocks (one pair per tile); 5, 7 and 25 blocks (two pairs, the last tile shifted inwards)
  for (int64_t channels : {24, 40, 56, 200}) {
    const std::string path = save_conv_chain("half_blocks.onnx", 16, 16, channels, 9, 11);
    const Workload w = conv_relu_workload(path);
    ASSERT_EQ(w.graph.tensor(w.graph.outputs[0]).layout, (Layout{1, 8})) << channels;
    const Halide::Internal::Function f = default_scheduled_accumulator(w);
    ASSERT_TRUE(f.get_contents().defined());
    const Halide::Internal::Function* acc = &f;
    int vectorized = 0;
    for (const auto& d : acc->update(0).schedule().dims()) vectorized += d.for_type == ForType::Vectorized;
    EXPECT_EQ(vectorized, 2) << channels << ": the 8 lanes and the block pair";

    CompileOptions opts;
    opts.cache_root = (test::temp_dir() / "cache").string();
    CompiledModel m(test::import_model(path), opts);
    const std::map<std::string, Tensor> in = {{"x", test::rand_f32({1, 16, 9, 11}, 4)}};
    auto c = compare_tensors(m.run(in)[0], test::run_model(path, in)[0], 1e-4, 1e-5);
    EXPECT_TRUE(c.ok) << channels << ": " << c.message;
  }
}

// The lowered statement of workload w under schedule s, up to a renaming of identifiers.
std::string lowered_statement(const Workload& w, const Schedule& s) {
  LoweredWorkload lw = lower_workload(w);
  apply(s, lw.outputs, host_code_target());
  return test::renamed_statement(lw);
}

// The rule's schedule of every workload of the zoo networks (register tiles, Winograd,
// rfactor'd lane sums, staged weight blocks, prefetches) is data: it validates, survives a JSON
// round trip, and a database record of it (the JSON) replays to the very statement the rule's own
// schedule lowers to.
TEST(DefaultSchedule, EveryZooWorkloadsScheduleIsDataThatReplaysExactly) {
  const Halide::Target target = host_code_target();
  std::map<std::string, int> directives;
  int workloads = 0;
  // Every network as `run` loads it (channel-blocked layouts, Winograd convs), and two in plain
  // layouts, whose matmuls stage blocks of their weights.
  std::vector<std::pair<std::string, LoadOptions>> models;
  LoadOptions plain;
  plain.layout = "plain";
  for (const auto& file : std::filesystem::directory_iterator(std::string(TENSORSCHED_SOURCE_DIR) + "/models"))
    if (file.path().extension() == ".onnx") models.emplace_back(file.path().string(), LoadOptions{});
  for (const char* name : {"transformer.onnx", "wavenet.onnx"})
    models.emplace_back(std::string(TENSORSCHED_SOURCE_DIR) + "/models/" + name, plain);
  for (const auto& [file, options] : models) {
    for (const Workload& w : partition_graph(load_model(file, options)).workloads) {
      LoweredWorkload lw = lower_workload(w);
      const Schedule s = default_schedule(lw.outputs, target);
      ASSERT_EQ(s.validate(lw.outputs), std::nullopt) << file << " " << w.name;
      const Schedule record = Schedule::from_json(s.to_json());
      ASSERT_EQ(record, s) << file << " " << w.name;
      ASSERT_EQ(record.hash(), s.hash());
      EXPECT_EQ(lowered_statement(w, record), lowered_statement(w, s)) << file << " " << w.name << "\n" << s.to_json(2);
      for (const auto& st : s.stages) {
        directives["steps"] += !st.steps.empty();
        directives["prefetch"] += !st.prefetches.empty();
        directives["rfactor"] += !st.rfactor.empty();
        directives["staged"] += !st.staged_for.empty();
        directives["task_prefetch"] += !st.task_prefetches.empty();
      }
      workloads++;
    }
  }
  std::cout << workloads << " workloads:";
  for (const auto& [d, n] : directives) std::cout << " " << d << " " << n;
  std::cout << "\n";
  EXPECT_GT(workloads, 400);
  // Prefetches stream weights on AMD hosts only (default_tile.cpp streams_by_rule).
  for (const char* d : {"steps", "rfactor", "staged"}) EXPECT_GT(directives[d], 0) << d;
}

}  // namespace
}  // namespace ts
