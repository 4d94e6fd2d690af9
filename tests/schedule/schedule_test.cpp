// Schedule as plain data: JSON round trip, stable hash, Halide C++ source, validation of every
// invalid combination before any Halide call, and application to a hand-written matmul (JIT,
// bit-identical to the unscheduled pipeline) and to a lowered ONNX Conv+Relu workload (AOT
// through compile_workload).
#include "schedule/schedule.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <iostream>
#include <random>

#include "graph/error.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "measure/workload_code.h"
#include "lower/lower.h"
#include "support/onnx_builder.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

constexpr int M = 33, N = 40, K = 20;

// A matmul with a scaled left operand and a ReLU: scaled (pure) -> acc (init + update over r)
// -> out. Fresh Funcs on every call (scheduling mutates them).
struct Matmul {
  Halide::Buffer<float> a{K, M}, b{N, K};
  Matmul() {
    for (int i = 0; i < M; i++)
      for (int k = 0; k < K; k++) a(k, i) = static_cast<float>((i * 7 + k * 3) % 11) - 5;
    for (int k = 0; k < K; k++)
      for (int j = 0; j < N; j++) b(j, k) = static_cast<float>((k * 5 + j) % 7) - 3;
  }
  std::vector<Halide::Func> build() const {
    Halide::Var x("x"), y("y");
    Halide::RDom r(0, K, "r");
    Halide::Func scaled("scaled"), acc("acc"), out("out");
    scaled(x, y) = a(x, y) * 2.0f;
    acc(x, y) = 0.0f;
    acc(x, y) += scaled(r, y) * b(x, r);
    out(x, y) = Halide::max(acc(x, y), 0.0f);
    scaled.set_estimate(x, 0, K).set_estimate(y, 0, M);
    acc.set_estimate(x, 0, N).set_estimate(y, 0, M);
    out.set_estimate(x, 0, N).set_estimate(y, 0, M);
    return {out};
  }
};

StageSchedule stage(const std::string& func, int definition = 0, Placement p = Placement::Inline) {
  StageSchedule s;
  s.func = func;
  s.definition = definition;
  s.placement = p;
  return s;
}

// out tiled 16 x 2 (vectorized, rows unrolled, parallel over row tiles); acc computed in each
// tile with its update reordered around the RVar; scaled at root.
Schedule tiled_schedule() {
  Schedule s;
  StageSchedule out = stage("out", 0, Placement::Root);
  out.tiling = {{"x", {16}, Tail::ShiftInwards}, {"y", {2}, Tail::GuardWithIf}};
  out.order = {"x_i", "y_i", "x_o", "y_o"};
  out.vectorize = "x_i";
  out.vector_width = 16;
  out.unroll = {"y_i"};
  out.parallel = "y_o";
  s.set(out);
  StageSchedule acc = stage("acc", 0, Placement::ComputeAt);
  acc.compute_at = {"out", 0, "x_o"};
  acc.vectorize = "x";
  acc.vector_width = 8;
  s.set(acc);
  StageSchedule upd = stage("acc", 1);
  upd.tiling = {{"x", {8}, Tail::Auto}, {"y", {2}, Tail::GuardWithIf}};
  upd.order = {"x_i", "y_i", "r$x", "x_o", "y_o"};
  upd.vectorize = "x_i";
  upd.vector_width = 8;
  upd.unroll = {"y_i"};
  s.set(upd);
  StageSchedule scaled = stage("scaled", 0, Placement::Root);
  scaled.tiling = {{"y", {2, 4}, Tail::GuardWithIf}};
  scaled.vectorize = "x";
  scaled.vector_width = 4;
  scaled.unroll = {"y_i"};
  scaled.parallel = "y_m";
  scaled.parallel_fused = {"y_o"};
  s.set(scaled);
  return s;
}

TEST(Schedule, JsonRoundTripAndStableHash) {
  Schedule s = tiled_schedule();
  const std::string text = s.to_json();
  Schedule back = Schedule::from_json(text);
  EXPECT_EQ(back, s);
  EXPECT_EQ(back.to_json(), text);
  EXPECT_EQ(Schedule::from_json(s.to_json(2)), s);
  EXPECT_EQ(s.hash(), back.hash());
  EXPECT_EQ(s.hash().size(), 16u);
  EXPECT_EQ(s.hash(), "75da48e63d446088");  // FNV-1a 64 of the canonical JSON: the same everywhere

  // Insertion order does not matter; any decision does.
  Schedule reversed;
  for (auto it = s.stages.rbegin(); it != s.stages.rend(); ++it) reversed.stages.push_back(*it);
  EXPECT_EQ(reversed.hash(), s.hash());
  Schedule changed = s;
  changed.find("out")->tiling[0].factors[0] = 8;
  EXPECT_NE(changed.hash(), s.hash());

  // A partial schedule is a value like any other.
  Schedule partial;
  partial.set(stage("out", 0, Placement::Root));
  EXPECT_EQ(Schedule::from_json(partial.to_json()), partial);
  EXPECT_TRUE(partial.is_complete({"out"}));
  EXPECT_FALSE(partial.is_complete({"out", "acc"}));
  EXPECT_TRUE(s.is_complete({"out", "acc", "acc.update(0)", "scaled"}));
  EXPECT_FALSE(s.is_complete({"scaled.update(0)"}));
}

TEST(Schedule, FromJsonRejectsBadInputNamingTheField) {
  auto error_of = [](const std::string& text) { return test::error_message<Error>([&] { Schedule::from_json(text); }); };
  EXPECT_NE(error_of("{").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"format":2,"stages":[]})").find("format 2"), std::string::npos);
  EXPECT_NE(error_of(R"({"format":1,"stages":[{"func":"f","definition":0,"placement":"here"}]})").find("placement 'here'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":1,"stages":[{"func":"f","definition":1,"placement":"root"}]})").find("f.update(0)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":1,"stages":[{"func":"f","placement":"root","tiles":[]}]})").find("'tiles'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format":1,"stages":[{"func":"f","placement":"root","tiling":[{"loop":"x","factors":[2],"tail":"up"}]}]})")
                .find("tail 'up'"),
            std::string::npos);
}

TEST(Schedule, HalideSource) {
  Schedule s;
  StageSchedule out = stage("out", 0, Placement::Root);
  out.tiling = {{"x", {16}, Tail::ShiftInwards}};
  out.order = {"x_i", "y", "x_o"};
  out.vectorize = "x_i";
  out.vector_width = 16;
  out.parallel = "y";
  s.set(out);
  StageSchedule acc = stage("acc", 0, Placement::ComputeAt);
  acc.compute_at = {"out", 0, "x_o"};
  s.set(acc);
  StageSchedule upd = stage("acc", 1);
  upd.order = {"x", "r$x", "y"};
  s.set(upd);
  StageSchedule scaled = tiled_schedule().stages.back();
  ASSERT_EQ(scaled.func, "scaled");
  s.set(scaled);
  EXPECT_EQ(s.to_halide_source(),
            "acc.compute_at(out, x_o);\n"
            "acc.update(0).reorder(x, r_x, y);\n"
            "out.compute_root().split(x, x_o, x_i, 16, TailStrategy::ShiftInwards).reorder(x_i, y, x_o).vectorize(x_i)"
            ".parallel(y);\n"
            "scaled.compute_root().split(y, y_o, y_mi, 8, TailStrategy::GuardWithIf).split(y_mi, y_m, y_i, 2)"
            ".vectorize(x, 4, TailStrategy::GuardWithIf).unroll(y_i).fuse(y_m, y_o, y_m_y_o_f).parallel(y_m_y_o_f);\n");
}

// The reason validate() gives for the tiled matmul schedule after `edit` ("valid" when none).
std::string reason_after(const std::function<void(Schedule&)>& edit) {
  Matmul mm;
  Schedule s = tiled_schedule();
  edit(s);
  auto why = s.validate(mm.build());
  return why ? *why : "valid";
}

void expect_reason(const std::function<void(Schedule&)>& edit, const std::vector<std::string>& parts) {
  const std::string why = reason_after(edit);
  for (const auto& p : parts) EXPECT_NE(why.find(p), std::string::npos) << "reason: " << why << "\nexpected to contain: " << p;
}

void clear_loops(StageSchedule& s) {
  s.tiling.clear();
  s.order.clear();
  s.vectorize.clear();
  s.vector_width = 0;
  s.parallel.clear();
  s.parallel_fused.clear();
  s.unroll.clear();
}

TEST(Schedule, ValidateAcceptsValidSchedules) {
  EXPECT_EQ(reason_after([](Schedule&) {}), "valid");
  // A producer computed inside a loop of an update definition (not the consumer's last stage).
  EXPECT_EQ(reason_after([](Schedule& s) {
              StageSchedule& sc = *s.find("scaled");
              clear_loops(sc);
              sc.placement = Placement::ComputeAt;
              sc.compute_at = {"acc", 1, "x_o"};
              sc.store_at = "y_o";
            }),
            "valid");
  // Computed inside the output's tile through acc (which is computed there), stored per row tile.
  EXPECT_EQ(reason_after([](Schedule& s) {
              StageSchedule& sc = *s.find("scaled");
              clear_loops(sc);
              sc.placement = Placement::ComputeAt;
              sc.compute_at = {"out", 0, "x_o"};
            }),
            "valid");
  // A partial schedule: only the output decided.
  Matmul mm;
  Schedule partial;
  partial.set(*tiled_schedule().find("out"));
  EXPECT_EQ(partial.validate(mm.build()), std::nullopt);
}

TEST(Schedule, ValidateRejectsUnknownStagesAndLoops) {
  expect_reason([](Schedule& s) { s.set(stage("nope", 0, Placement::Root)); }, {"stage 'nope'", "no Func 'nope'"});
  expect_reason([](Schedule& s) { s.set(stage("acc", 2)); }, {"acc.update(1)", "1 update definition"});
  expect_reason([](Schedule& s) { s.find("out")->order[3] = "zz"; }, {"stage 'out'", "'zz'", "does not exist"});
  expect_reason([](Schedule& s) { s.find("acc", 1)->tiling[0].loop = "r$y"; }, {"acc.update(0)", "'r$y'"});
  expect_reason([](Schedule& s) { s.find("out")->vectorize = "x_ii"; }, {"stage 'out'", "'x_ii'"});
  expect_reason([](Schedule& s) { s.find("out")->order.pop_back(); }, {"leaves out loop 'y_o'"});
  expect_reason([](Schedule& s) { s.find("out")->parallel = "y"; }, {"parallel loop 'y' does not exist"});
  expect_reason([](Schedule& s) { s.find("acc")->compute_at.loop = "x_oo"; }, {"stage 'acc'", "'x_oo'", "does not exist"});
  expect_reason([](Schedule& s) { s.find("acc")->store_at = "x_i"; }, {"stage 'acc'", "'x_i'", "inside its compute loop"});
  expect_reason([](Schedule& s) { s.find("acc", 1)->placement = Placement::Root; },
                {"acc.update(0)", "belong to the pure definition"});
}

TEST(Schedule, ValidateRejectsBadSplits) {
  expect_reason([](Schedule& s) { s.find("out")->tiling[0].factors = {0}; }, {"stage 'out'", "factor 0", "'x'"});
  expect_reason([](Schedule& s) { s.find("out")->tiling.push_back({"x", {4}, Tail::Auto}); }, {"stage 'out'", "'x' twice"});
  expect_reason([](Schedule& s) { s.find("out")->tiling[0].factors = {2, 2, 2}; }, {"'x'", "3 factors"});
  expect_reason([](Schedule& s) { s.find("acc", 1)->tiling[0].tail = Tail::ShiftInwards; },
                {"acc.update(0)", "'x'", "shift_inwards"});
  expect_reason([](Schedule& s) { s.find("acc", 1)->tiling.push_back({"r$x", {4}, Tail::RoundUp}); },
                {"acc.update(0)", "reduction loop 'r$x'"});
  expect_reason([](Schedule& s) { s.find("out")->tiling[0].factors = {64}; }, {"'x'", "exceeds its extent 40"});
  expect_reason(
      [](Schedule& s) {
        StageSchedule& u = *s.find("acc", 1);
        u.tiling.push_back({"r$x", {4}, Tail::GuardWithIf});
        u.order = {"x_i", "y_i", "r$x_o", "r$x_i", "x_o", "y_o"};
      },
      {"acc.update(0)", "reduction loop 'r$x_o'", "relative order"});
}

TEST(Schedule, ValidateRejectsBadLoopTypes) {
  expect_reason([](Schedule& s) { s.find("acc", 1)->parallel = "r$x"; }, {"acc.update(0)", "reduction loop 'r$x'"});
  expect_reason([](Schedule& s) { s.find("acc", 1)->vectorize = "r$x"; }, {"acc.update(0)", "reduction loop 'r$x'"});
  expect_reason([](Schedule& s) { s.find("out")->vector_width = 3; }, {"stage 'out'", "vector width 3", "'x_i'"});
  expect_reason([](Schedule& s) { s.find("out")->vector_width = 128; }, {"vector width 128"});
  expect_reason([](Schedule& s) { s.find("out")->unroll.push_back("x_o"); }, {"'x_o'", "not a constant"});
  expect_reason([](Schedule& s) { s.find("scaled")->parallel_fused = {"x"}; }, {"stage 'scaled'", "'x'", "next loop outside"});
}

TEST(Schedule, ValidateRejectsBadPlacements) {
  expect_reason([](Schedule& s) { s.find("out")->placement = Placement::Inline; }, {"output 'out' cannot be inlined"});
  expect_reason(
      [](Schedule& s) {
        StageSchedule& a = *s.find("acc");
        clear_loops(a);
        a.placement = Placement::Inline;
        a.compute_at = {};
      },
      {"stage 'acc'", "update definitions", "cannot be inlined"});
  expect_reason([](Schedule& s) { s.find("acc")->compute_at = {"scaled", 0, "x"}; },
                {"stage 'acc'", "'scaled' is not a consumer of 'acc'"});
  expect_reason(
      [](Schedule& s) {
        s.stages.erase(s.stages.begin() + (s.find("scaled") - s.stages.data()));
        s.find("acc")->compute_at = {"scaled", 0, "x"};
      },
      {"stage 'acc'", "'scaled', which is inlined"});
  expect_reason(
      [](Schedule& s) {
        StageSchedule& sc = *s.find("scaled");
        sc.placement = Placement::ComputeAt;
        sc.compute_at = {"acc", 0, "x"};
      },
      {"stage 'scaled'", "'acc' is not a consumer of 'scaled'"});
  expect_reason(
      [](Schedule& s) {
        StageSchedule& sc = *s.find("scaled");
        clear_loops(sc);
        sc.placement = Placement::ComputeAt;
        sc.compute_at = {"out", 0, "x_o"};
        sc.store_root = true;
      },
      {"stage 'scaled'", "parallel loop 'y_o' of 'out'", "race"});
  expect_reason([](Schedule& s) { s.find("acc")->compute_at.loop = "x_i"; }, {"stage 'acc'", "vectorized loop 'x_i'"});
}

bool has_loop_type(const Halide::Internal::Function& f, int definition, Halide::Internal::ForType t) {
  const auto& dims = definition == 0 ? f.definition().schedule().dims() : f.update(definition - 1).schedule().dims();
  for (const auto& d : dims)
    if (d.for_type == t) return true;
  return false;
}

TEST(Schedule, ApplyTiledMatmulIsBitIdentical) {
  using Halide::Internal::ForType;
  Matmul mm;
  Halide::Buffer<float> plain = mm.build()[0].realize({N, M});
  Schedule variant = tiled_schedule();
  StageSchedule& sc = *variant.find("scaled");
  clear_loops(sc);
  sc.placement = Placement::ComputeAt;
  sc.compute_at = {"acc", 1, "x_o"};
  sc.store_at = "y_o";
  for (const Schedule& s : {tiled_schedule(), variant}) {
    SCOPED_TRACE(s.to_halide_source());
    auto outputs = mm.build();
    apply(s, outputs, host_code_target());
    const auto& out = outputs[0].function();
    EXPECT_TRUE(has_loop_type(out, 0, ForType::Vectorized));
    EXPECT_TRUE(has_loop_type(out, 0, ForType::Unrolled));
    EXPECT_TRUE(has_loop_type(out, 0, ForType::Parallel));
    Halide::Internal::Function acc;  // "acc", or "acc$N" when the name was used before
    for (const auto& [name, fn] : Halide::Internal::find_transitive_calls(out))
      if (name.rfind("acc", 0) == 0) acc = fn;
    EXPECT_TRUE(has_loop_type(acc, 1, ForType::Vectorized));
    EXPECT_TRUE(has_loop_type(acc, 1, ForType::Unrolled));
    Halide::Buffer<float> got = outputs[0].realize({N, M});
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) ASSERT_EQ(plain(j, i), got(j, i)) << i << "," << j;
  }
}

TEST(Schedule, ApplyRejectsBeforeAnyHalideCall) {
  Matmul mm;
  auto outputs = mm.build();
  Schedule bad = tiled_schedule();
  bad.find("acc", 1)->parallel = "r$x";
  EXPECT_THROW(apply(bad, outputs, host_code_target()), Error);
  const auto& out = outputs[0].function();
  EXPECT_TRUE(out.definition().schedule().splits().empty());  // nothing was scheduled
  EXPECT_FALSE(has_loop_type(out, 0, Halide::Internal::ForType::Vectorized));
  apply(tiled_schedule(), outputs, host_code_target());
  EXPECT_TRUE(test::throws_naming<Error>([&] { apply(tiled_schedule(), outputs, host_code_target()); }, {"already scheduled"}));
}

// A random schedule of the matmul: many are invalid, most choices are plausible.
Schedule random_schedule(std::mt19937& g) {
  auto pick = [&](const std::vector<std::string>& v) { return v[g() % v.size()]; };
  auto is_r = [](const std::string& l) { return l[0] == 'r'; };
  auto decide = [&](StageSchedule s, const std::vector<std::string>& original) {
    std::vector<std::string> loops;
    for (const auto& l : original) {
      if (g() % 2) {
        loops.push_back(l);
        continue;
      }
      const Tail tail = s.definition > 0 ? Tail::GuardWithIf : static_cast<Tail>(g() % 3);
      LoopTiling t{l, {int64_t{1} << (g() % 5)}, tail};
      if (g() % 3 == 0) t.factors.push_back(1 + g() % 4);
      for (const auto& n : t.level_names()) loops.push_back(n);
      s.tiling.push_back(t);
    }
    if (g() % 2) {  // a shuffle keeping the reduction loops in order
      std::vector<std::string> r;
      for (const auto& l : loops)
        if (is_r(l)) r.push_back(l);
      std::shuffle(loops.begin(), loops.end(), g);
      size_t k = 0;
      for (auto& l : loops)
        if (is_r(l)) l = r[k++];
      s.order = loops;
    }
    std::vector<std::string> pure, inner;
    for (const auto& l : loops) {
      if (!is_r(l)) pure.push_back(l);
      if (is_r(l) || l.ends_with("_i") || l.ends_with("_m")) inner.push_back(l);
    }
    if (g() % 2 && !pure.empty()) {
      s.vectorize = pick(pure);
      s.vector_width = 2 << (g() % 3);
    }
    if (g() % 2 && !inner.empty() && (s.unroll = {pick(inner)})[0] == s.vectorize) s.unroll.clear();
    if (g() % 2) {
      const size_t p = g() % loops.size();
      s.parallel = loops[p];
      if (p + 1 < loops.size() && g() % 2) s.parallel_fused = {loops[p + 1]};
    }
    return s;
  };
  const std::vector<std::string> levels = {"x", "y", "x_i", "x_o", "y_i", "y_o", "x_m", "y_m", "r$x", "r$x_o"};
  Schedule s;
  s.set(decide(stage("out", 0, Placement::Root), {"x", "y"}));
  StageSchedule acc = decide(stage("acc", 0, g() % 3 ? Placement::ComputeAt : Placement::Root), {"x", "y"});
  if (acc.placement == Placement::ComputeAt) {
    acc.compute_at = {"out", 0, pick(levels)};
    if (g() % 4 == 0) acc.store_root = true;
    else if (g() % 3 == 0) acc.store_at = pick(levels);
  }
  s.set(acc);
  s.set(decide(stage("acc", 1), {"r$x", "x", "y"}));
  if (g() % 2) {
    StageSchedule sc = decide(stage("scaled", 0, g() % 2 ? Placement::ComputeAt : Placement::Root), {"x", "y"});
    if (sc.placement == Placement::ComputeAt) sc.compute_at = g() % 2 ? ConsumerLoop{"acc", 1, pick(levels)} : ConsumerLoop{"out", 0, pick(levels)};
    s.set(sc);
  }
  return s;
}

// Random schedules (fixed seed): validate() answers every one without calling Halide, and Halide
// accepts (schedules and compiles) every one it calls valid.
TEST(Schedule, RandomValidSchedulesCompile) {
  Matmul mm;
  std::mt19937 g(7);
  int valid = 0;
  for (int it = 0; it < 120; it++) {
    Schedule s = random_schedule(g);
    auto outputs = mm.build();
    if (s.validate(outputs)) continue;
    valid++;
    EXPECT_NO_THROW({
      apply(s, outputs, host_code_target());
      outputs[0].compile_jit();
    }) << s.to_halide_source();
  }
  EXPECT_GE(valid, 10);
  std::cout << valid << " of 120 random schedules valid\n";
}

Workload conv_relu_workload() {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 12, 12})
      .initializer("w", test::rand_f32({8, 3, 3, 3}, 1))
      .initializer("bias", test::rand_f32({8}, 2))
      .node("Conv", {"x", "w", "bias"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  Graph g = test::import_model(b.save("conv.onnx"));
  Partition p = partition_graph(g);
  EXPECT_EQ(p.workloads.size(), 1u);
  return p.workloads.at(0);
}

// Output tiled (8 wide vectors x 4 channels), the accumulator inside each tile, the padded
// input computed per output row inside the accumulator's update.
Schedule conv_schedule() {
  Schedule s;
  StageSchedule out = stage("output_t1", 0, Placement::Root);  // args d3 (W) d2 (H) d1 (C) d0 (N)
  out.tiling = {{"d3", {8}, Tail::ShiftInwards}, {"d1", {4}, Tail::Auto}};
  out.order = {"d3_i", "d1_i", "d3_o", "d2", "d1_o", "d0"};
  out.vectorize = "d3_i";
  out.vector_width = 8;
  out.unroll = {"d1_i"};
  out.parallel = "d1_o";
  out.parallel_fused = {"d0"};
  s.set(out);
  StageSchedule acc = stage("Conv_0_n0_acc", 0, Placement::ComputeAt);  // args d0 (W) d1 (H) d2 (C) d3 (N)
  acc.compute_at = {"output_t1", 0, "d3_o"};
  acc.vectorize = "d0";
  acc.vector_width = 8;
  s.set(acc);
  StageSchedule upd = stage("Conv_0_n0_acc", 1);
  upd.tiling = {{"d0", {8}, Tail::GuardWithIf}, {"d2", {4}, Tail::GuardWithIf}};
  upd.order = {"d0_i", "d2_i", "Conv_0_n0_r$x", "Conv_0_n0_r$y", "Conv_0_n0_r$z", "d0_o", "d1", "d2_o", "d3"};
  upd.vectorize = "d0_i";
  upd.vector_width = 8;
  upd.unroll = {"d2_i", "Conv_0_n0_r$x"};
  s.set(upd);
  StageSchedule pad = stage("Conv_0_n0_pad", 0, Placement::ComputeAt);
  pad.compute_at = {"Conv_0_n0_acc", 1, "d1"};
  pad.vectorize = "d3";
  pad.vector_width = 4;
  s.set(pad);
  return s;
}

// JIT-runs w with `sched` (null: unscheduled) on deterministic inputs, packed as the schedule's
// layouts say.
Halide::Buffer<float> run_conv_workload(const Workload& w, const Schedule* sched) {
  LoweredWorkload lw = lower_workload(w, sched ? sched->layouts : std::vector<InputLayout>{});
  if (sched) {
    auto why = sched->validate(lw.outputs);
    EXPECT_EQ(why, std::nullopt) << *why;
    apply(*sched, lw.outputs, host_code_target());
  }
  std::vector<Tensor> inputs;  // the buffers view them
  for (size_t i = 0; i < w.graph.inputs.size(); i++) {
    const auto& info = w.graph.tensor(w.graph.inputs[i]);
    Tensor t(info.dtype, info.shape);
    for (int64_t k = 0; k < t.size(); k++) t.data<float>()[k] = static_cast<float>((k * 7 + static_cast<int64_t>(i) * 3) % 13) / 4.0f - 1.5f;
    const InputLayout* l = sched ? find_layout(sched->layouts, w.graph.inputs[i]) : nullptr;
    inputs.push_back(l ? pack_tensor(*l, t) : t);
  }
  for (size_t i = 0; i < inputs.size(); i++) lw.params[i].set(tensor_buffer(inputs[i], w.graph.inputs[i]));
  const Shape& oshape = w.graph.tensor(w.graph.outputs[0]).shape;
  return lw.pipeline.realize(std::vector<int>(oshape.rbegin(), oshape.rend()));
}

TEST(Schedule, AppliesToLoweredConvReluWorkload) {
  Workload w = conv_relu_workload();
  const Schedule s = conv_schedule();
  // JIT: bit-identical to the unscheduled pipeline on the same inputs (reduction order kept).
  auto run = [&](const Schedule* sched) { return run_conv_workload(w, sched); };
  Halide::Buffer<float> plain = run(nullptr), got = run(&s);
  ASSERT_EQ(plain.number_of_elements(), got.number_of_elements());
  got.for_each_element([&](const int* pos) {
    ASSERT_EQ(got(pos), plain(pos)) << pos[0] << "," << pos[1] << "," << pos[2] << "," << pos[3];
  });

  // AOT through the code cache, keyed by the schedule's hash.
  CodeCache cache = CodeCache::open_default(host_code_target(), (test::temp_dir() / "cache").string());
  compile_workload(w, schedule_fn(s), s.hash(), cache);
  EXPECT_TRUE(std::filesystem::exists(cache.object_path(w, s.hash()))) << cache.object_path(w, s.hash());
}

}  // namespace
}  // namespace ts

namespace ts {
namespace {

TEST(Schedule, LayoutsPackAnInputAtLoadAndComputeTheSameValues) {
  Workload w = conv_relu_workload();
  ASSERT_EQ(w.constant_inputs, (std::vector<std::string>{"in1", "in2"}));  // weight [8,3,3,3], bias
  Schedule s = conv_schedule();
  s.layouts = {{"in1", 3, 4}};  // output channels blocked by 4: [2, 3, 3, 3, 4]
  const Schedule back = Schedule::from_json(s.to_json());
  EXPECT_EQ(back, s);
  EXPECT_NE(back.hash(), conv_schedule().hash());
  EXPECT_NE(s.to_halide_source().find("in1 packed at load"), std::string::npos) << s.to_halide_source();

  // The packed lowering reads the rank-5 weight through the same Funcs: same values.
  LoweredWorkload packed = lower_workload(w, s.layouts);
  EXPECT_EQ(packed.params[1].dimensions(), 5);
  Halide::Buffer<float> plain = run_conv_workload(w, nullptr), got = run_conv_workload(w, &s);
  got.for_each_element([&](const int* pos) {
    ASSERT_EQ(got(pos), plain(pos)) << pos[0] << "," << pos[1] << "," << pos[2] << "," << pos[3];
  });

  // Rejected with the reason, before anything compiles.
  LoweredWorkload lw = lower_workload(w);
  auto why = [&](std::vector<InputLayout> ls) {
    Schedule b = conv_schedule();
    b.layouts = std::move(ls);
    auto r = b.validate(lw.outputs);
    return r ? *r : std::string("valid");
  };
  EXPECT_NE(why({{"in1", 3, 3}}).find("block 3 does not divide dim 3's extent 8"), std::string::npos);
  EXPECT_NE(why({{"nope", 1, 4}}).find("no input of that name"), std::string::npos);
  EXPECT_NE(why({{"in1", 4, 4}}).find("dim 4"), std::string::npos);
  EXPECT_EQ(why({{"in1", 2, 3}}), "valid");
  EXPECT_THROW(lower_workload(w, {{"in1", 3, 3}}), Error);
}

}  // namespace
}  // namespace ts
