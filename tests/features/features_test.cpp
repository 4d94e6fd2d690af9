// FeatureExtractor on real pipelines: a hand-built 64x64 matmul whose tile-level bytes and cache
// lines are computed by hand below, partial schedules, and random schedules of ResNet-18
// workloads (fixed layout, finite values, deterministic).
#include "features/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <random>
#include <set>

#include "api/compile_model.h"
#include "graph/error.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "support/small_workloads.h"
#include "analysis/pipeline_view.h"
#include "schedule/schedule_builder.h"
#include "support/onnx_builder.h"
#include "schedule/default_schedule.h"
#include "schedule/default_tile.h"
#include "schedule/loop_nest.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

float value(const std::vector<float>& row, const std::string& name) {
  const auto& names = stage_feature_names();
  for (size_t k = 0; k < names.size(); k++)
    if (names[k] == name) return row.at(k);
  ADD_FAILURE() << "no feature " << name;
  return NAN;
}

float lg(double x) { return static_cast<float>(std::log2(1 + x)); }

const StageFeatures& row_of(const ScheduleFeatures& f, const std::string& stage, int def) {
  for (const auto& s : f.stages)
    if (s.stage == stage && s.definition == def) return s;
  throw Error("no row " + stage);
}

// C(i, j) = sum_k A(k, j) * B(i, k), 64 x 64 x 64, float. A's rows (k) and B's rows (i) are
// contiguous (dim 0 is innermost in memory).
std::vector<Halide::Func> matmul64() {
  Halide::ImageParam A(Halide::Float(32), 2, "A"), B(Halide::Float(32), 2, "B");
  for (auto* p : {&A, &B}) {
    p->dim(0).set_estimate(0, 64);
    p->dim(1).set_estimate(0, 64);
  }
  Halide::Var i("i"), j("j");
  Halide::RDom k(0, 64, "k");
  Halide::Func C("C");
  C(i, j) = 0.0f;
  C(i, j) += A(k, j) * B(i, k);
  C.set_estimate(i, 0, 64).set_estimate(j, 0, 64);
  return {C};
}

// The update tiled 8 x 8 (i_i vectorized by 8 innermost, then k, then j_i), tiles in parallel
// over j_o; or untiled (Halide's default nest: k innermost, then i, then j).
Schedule matmul_schedule(bool tiled, bool vectorize) {
  Schedule s;
  StageSchedule c0;
  c0.func = "C";
  c0.placement = Placement::Root;
  s.set(c0);
  StageSchedule c1;
  c1.func = "C";
  c1.definition = 1;
  if (tiled) {
    c1.tiling = {{"i", {8}, Tail::Auto}, {"j", {8}, Tail::Auto}};
    c1.order = {"i_i", "k$x", "j_i", "i_o", "j_o"};
    c1.parallel = "j_o";
    if (vectorize) c1.vectorize = "i_i", c1.vector_width = 8;
  } else {
    c1.order = {"k$x", "i", "j"};
    if (vectorize) c1.order = {"i", "k$x", "j"}, c1.vectorize = "i", c1.vector_width = 8;
  }
  s.set(c1);
  return s;
}

TEST(Features, MatmulTileLevelBytesLinesAndOps) {
  const auto outs = matmul64();
  ScheduleSpace space(build_pipeline_view(outs));
  FeatureExtractor fx(space);
  const Schedule s = matmul_schedule(true, true);
  ASSERT_FALSE(s.validate(outs)) << *s.validate(outs);
  const ScheduleFeatures f = fx.extract(s);
  ASSERT_EQ(f.stages.size(), 2u);
  const auto& u = row_of(f, "C", 1).values;
  EXPECT_TRUE(row_of(f, "C", 1).decided);

  // Nest, innermost first: i_i (8 vector lanes), k (64), j_i (8), i_o (8), j_o (8, parallel).
  EXPECT_EQ(value(u, "a_loops"), 5);
  EXPECT_EQ(value(u, "a_vector_lanes"), 8);
  EXPECT_FLOAT_EQ(value(u, "a_loop1_extent"), lg(64));
  EXPECT_EQ(value(u, "a_loop1_reduction"), 1);
  EXPECT_EQ(value(u, "a_parallel_depth"), 5);
  EXPECT_FLOAT_EQ(value(u, "a_tasks"), lg(8));

  // Level 2 = the whole j_i loop = one 8 x 8 tile with all of k inside: 8 * 8 * 64 = 4096 points.
  //  A(k, j): 8 rows j of 64 k = 512 floats; whole rows are adjacent, so one run of 2048 B = 32 lines.
  //  B(i, k): 64 rows k of 8 i = 512 floats in 64 runs of 32 B: 64 lines.
  //  C(i, j) read (accumulator) and written: 8 rows of 8 floats: 8 runs of 32 B = 8 lines each.
  //  Read bytes: 4096 points x 3 loads x 4 B = 49152; written: 4096 x 4 B = 16384.
  //  Unique bytes: 2048 (A) + 2048 (B) + 256 (C) = 4352; reused: 49152 + 16384 - 4352 = 61184.
  //  Intensity: 2 flops x 4096 / ((104 + 8) lines x 64 B).
  EXPECT_FLOAT_EQ(value(u, "a_L2_points"), lg(4096));
  EXPECT_FLOAT_EQ(value(u, "a_L2_read_lines"), lg(32 + 64 + 8));
  EXPECT_FLOAT_EQ(value(u, "a_L2_write_lines"), lg(8));
  EXPECT_FLOAT_EQ(value(u, "a_L2_read_bytes"), lg(49152));
  EXPECT_FLOAT_EQ(value(u, "a_L2_write_bytes"), lg(16384));
  EXPECT_FLOAT_EQ(value(u, "a_L2_reused_bytes"), lg(61184));
  EXPECT_FLOAT_EQ(value(u, "d_L2_intensity"), 2.0f * 4096 / (112 * 64));
  // Level 1 = the whole k loop (8 lanes x 64 k): A one row of 64 floats = 256 B = 4 lines; B 64
  // runs of 32 B = 64 lines; C one run of 8 floats = 1 line.
  EXPECT_FLOAT_EQ(value(u, "a_L1_read_lines"), lg(4 + 64 + 1));
  // Level 0 = the lanes: one line of each.
  EXPECT_FLOAT_EQ(value(u, "a_L0_read_lines"), lg(3));
  // Root: all of A, B (64 x 64 floats = 256 lines each) and C (256 lines), read once each.
  EXPECT_FLOAT_EQ(value(u, "a_root_read_lines"), lg(3 * 256));
  EXPECT_FLOAT_EQ(value(u, "a_root_points"), lg(64 * 64 * 64));

  // Ops: one add and one multiply per point, all in 8-lane vectors: 2 x 64^3 / 8 instructions.
  EXPECT_EQ(value(u, "i_op_f_add"), 1);
  EXPECT_EQ(value(u, "i_op_f_mul"), 1);
  EXPECT_EQ(value(u, "i_op_loads"), 3);
  EXPECT_FLOAT_EQ(value(u, "a_vec_float_ops"), lg(2.0 * 64 * 64 * 64 / 8));
  EXPECT_EQ(value(u, "a_scalar_float_ops"), 0);
  EXPECT_EQ(value(u, "a_vec_frac"), 1);
  // Along the lanes (i): B and C are dense (stride 1), A is a broadcast (does not use i).
  EXPECT_FLOAT_EQ(value(u, "a_vec_loads_dense"), lg(2.0 * 64 * 64 * 64 / 8));
  EXPECT_FLOAT_EQ(value(u, "a_vec_loads_broadcast"), lg(1.0 * 64 * 64 * 64 / 8));
  // Producer slots: A then B (one site each). A is read along rows k: transposed w.r.t. the
  // default innermost loop (k innermost for the update: A's dim 0 uses k, so not transposed;
  // B's dim 0 uses i, not k: transposed).
  EXPECT_EQ(value(u, "i_p0_present"), 1);
  EXPECT_EQ(value(u, "i_p0_transposed"), 0);
  EXPECT_EQ(value(u, "i_p1_transposed"), 1);
  EXPECT_EQ(value(u, "i_p0_broadcast_loops"), 1);  // A does not use i
  EXPECT_EQ(value(u, "a_p0_broadcast"), 1);
  EXPECT_EQ(value(u, "a_p1_dense"), 1);
  // The allocation: C is the output (the caller's buffer), nothing allocated.
  EXPECT_EQ(value(row_of(f, "C", 0).values, "a_alloc_bytes"), 0);
}

TEST(Features, LoopNestKindsForTheTiledMatmul) {
  const auto outs = matmul64();
  ScheduleSpace space(build_pipeline_view(outs));
  const Stage& st = space.view().stages.at(0);
  const auto orig = original_loops(st, 1, {64, 64});
  ASSERT_EQ(orig.size(), 3u);
  EXPECT_EQ(orig[0].name, "k$x");  // an update's RVars come first
  const auto nest = scheduled_nest(*matmul_schedule(true, true).find("C", 1), orig);
  ASSERT_EQ(nest.size(), 5u);
  EXPECT_EQ(nest[0].kind, LoopKind::Vectorized);
  EXPECT_FALSE(nest[0].site);
  EXPECT_TRUE(nest[1].reduction);
  EXPECT_EQ(nest[4].kind, LoopKind::Parallel);
  // One iteration of j_i covers 8 i (lanes) and all 64 k.
  EXPECT_EQ(nest[3].inside, (std::vector<int64_t>{8, 8, 64}));
  // Vectorizing a 64-long loop by 8: the lanes split off, the serial loop keeps the name.
  const auto flat = scheduled_nest(*matmul_schedule(false, true).find("C", 1), orig);
  ASSERT_EQ(flat.size(), 4u);
  EXPECT_EQ(flat[0].name, "i.v");
  EXPECT_EQ(flat[1].name, "i");
  EXPECT_EQ(flat[1].extent, 8);
  EXPECT_TRUE(flat[1].site);
}

TEST(Features, VectorizingAndTilingMoveTheFeaturesTheRightWay) {
  const auto outs = matmul64();
  ScheduleSpace space(build_pipeline_view(outs));
  FeatureExtractor fx(space);
  for (bool tiled : {false, true}) {
    const auto v = fx.extract(matmul_schedule(tiled, true)).stages.at(1).values;
    const auto s = fx.extract(matmul_schedule(tiled, false)).stages.at(1).values;
    EXPECT_GT(value(v, "a_vec_frac"), value(s, "a_vec_frac"));
    EXPECT_LT(value(v, "a_scalar_float_ops"), value(s, "a_scalar_float_ops"));
  }
  // At the level of 4096 points (tiled: an 8 x 8 tile with k; untiled: a row of C with k),
  // the tile touches fewer lines: 112 against 4 (A) + 256 (B) + 4 + 4 (C) = 268.
  auto lines_at_4096 = [&](const Schedule& s) {
    const auto v = fx.extract(s).stages.at(1).values;
    for (int k = 0; k < 6; k++)
      if (value(v, "a_L" + std::to_string(k) + "_points") == lg(4096))
        return value(v, "a_L" + std::to_string(k) + "_read_lines") + value(v, "a_L" + std::to_string(k) + "_write_lines");
    ADD_FAILURE() << "no level of 4096 points";
    return 0.f;
  };
  EXPECT_LT(lines_at_4096(matmul_schedule(true, false)), lines_at_4096(matmul_schedule(false, false)));
  EXPECT_FLOAT_EQ(lines_at_4096(matmul_schedule(false, false)), lg(4 + 256 + 4) + lg(4));
}

TEST(Features, PartialSchedulesZeroUndecidedAndKeepDecidedStages) {
  const auto outs = test::scaled_matmul_pipeline();
  ScheduleSpace space(build_pipeline_view(outs));
  FeatureExtractor fx(space);
  const size_t acquired = stage_intrinsic_features();
  EXPECT_EQ(stage_feature_names().at(acquired), "a_inline");
  std::mt19937_64 rng(3);
  int compared = 0;
  for (int draw = 0; draw < 60; draw++) {
    const Schedule full = space.sample(rng);
    const ScheduleFeatures ff = fx.extract(full);
    for (size_t k = 0; k <= space.decisions().size(); k++) {
      Schedule part;
      for (size_t i = 0; i < k; i++)
        for (const auto& e : full.stages)
          if (e.func == space.schedule_name(i)) part.set(e);
      const ScheduleFeatures pf = fx.extract(part);
      ASSERT_EQ(pf.stages.size(), ff.stages.size());
      for (size_t r = 0; r < pf.stages.size(); r++) {
        const auto& row = pf.stages[r];
        const bool decided = part.find(row.stage) != nullptr;
        EXPECT_EQ(row.decided, decided) << row.stage;
        // Intrinsic features are the same either way.
        for (size_t c = 0; c < acquired; c++) ASSERT_EQ(row.values[c], ff.stages[r].values[c]);
        if (!decided) {
          for (size_t c = acquired; c < row.values.size(); c++)
            ASSERT_EQ(row.values[c], 0.f) << row.stage << " " << stage_feature_names()[c];
          continue;
        }
        // A decided stage whose producers (stages) are all at root in the full schedule does
        // not depend on their decisions: an undecided producer counts as a root buffer.
        bool independent = true;
        // Rows name stages by schedule name, the view by Halide name ("acc$2" when an earlier
        // test of this process built the same pipeline).
        const Stage* st = nullptr;
        for (size_t i = 0; i < space.decisions().size(); i++)
          if (space.schedule_name(i) == row.stage) st = space.view().stage(space.decisions()[i]);
        ASSERT_NE(st, nullptr) << row.stage;
        for (const auto& p : st->producers) {
          const StageSchedule* ps = full.find(func_base_name(p));
          if (ps && (ps->placement != Placement::Root || !ps->storage_order.empty())) independent = false;
        }
        if (!independent) continue;
        EXPECT_EQ(row.values, ff.stages[r].values) << row.stage << "." << row.definition << " with " << k << " decisions";
        compared++;
      }
    }
  }
  EXPECT_GT(compared, 100);
}

TEST(Features, RandomSchedulesOfResNet18AndEfficientNetHaveAFixedFiniteDeterministicLayout) {
  std::vector<Workload> ws = test::zoo_workloads("resnet18.onnx");
  ASSERT_GE(ws.size(), 4u);
  ws.resize(4);
  // SiLU gates: the accumulator reaches the output through an inlined diamond (t, sigmoid(t),
  // t * sigmoid(t)); its compute_at region is composed along both paths.
  for (const auto& w : test::zoo_workloads("efficientnet_b0.onnx"))
    if (w.name == "Conv+Sigmoid+Mul" && ws.size() < 6) ws.push_back(w);
  ASSERT_EQ(ws.size(), 6u);
  SpaceOptions so;
  so.vector_bytes = 32;
  const size_t nflat = flat_feature_names().size(), nstage = stage_feature_names().size();
  int compute_at = 0;
  for (size_t w = 0; w < ws.size(); w++) {
    LoweredWorkload lw = lower_workload(ws[w]);
    ScheduleSpace space(build_pipeline_view(lw.outputs), space_options_for(ws[w], so));
    FeatureExtractor fx(space);
    SpaceOptions sk = so;
    sk.sampling = Sampling::Sketch;  // every other draw a sketch point: the accumulator computed
    ScheduleSpace sketch(space.view(), sk);  // at the output through its inlined bias/ReLU
    ASSERT_NE(sketch.sketch(), nullptr) << ws[w].name;
    std::mt19937_64 rng(w);
    for (int k = 0; k < 50; k++) {
      const Schedule s = (k % 2 ? sketch : space).sample(rng);
      const ScheduleFeatures f = fx.extract(s);
      ASSERT_EQ(f.flat.size(), nflat);
      for (size_t i = 0; i < nflat; i++)
        ASSERT_TRUE(std::isfinite(f.flat[i])) << ws[w].name << " " << flat_feature_names()[i] << "\n" << s.to_json(1);
      for (const auto& r : f.stages) {
        ASSERT_EQ(r.values.size(), nstage);
        ASSERT_TRUE(r.decided);
        for (size_t i = 0; i < nstage; i++)
          ASSERT_TRUE(std::isfinite(r.values[i])) << r.stage << " " << stage_feature_names()[i];
      }
      const ScheduleFeatures g = fx.extract(s);
      ASSERT_EQ(f.flat, g.flat);
      ASSERT_EQ(fx.flat(s), f.flat);
      // A compute_at Func allocates the region the space computes for it.
      for (size_t i = 0; i < space.decisions().size(); i++) {
        const StageSchedule* e = s.find(space.schedule_name(i));
        if (!e || e->placement != Placement::ComputeAt) continue;
        const Stage& st = *space.view().stage(space.decisions()[i]);
        double bytes = st.bytes * st.num_values;
        for (int64_t r : space.region(s, i)) bytes *= static_cast<double>(r);
        EXPECT_FLOAT_EQ(value(row_of(f, space.schedule_name(i), 0).values, "a_alloc_bytes"), lg(bytes));
        compute_at++;
      }
    }
  }
  EXPECT_GT(compute_at, 100);
}

// An extractor keeps what it learned of inlining patterns across extractions: the features of a
// schedule do not depend on what it extracted before (a Winograd conv's chain of compute_at
// stages and a direct conv's, in two orders).
TEST(Features, DoNotDependOnWhatWasExtractedBefore) {
  const Workload wino = test::winograd_conv_relu_workload("features_order.onnx");
  ASSERT_FALSE(wino.name.empty());
  for (const Workload& w : {wino, test::zoo_workloads("resnet18.onnx").at(0)}) {
    const LoweredWorkload lw = lower_workload(w);
    const ScheduleSpace space(lw.outputs, host_code_target(), space_options_for(w));
    std::mt19937_64 rng(23);
    std::vector<Schedule> ss = {*space.rule_schedule()};
    for (int k = 0; k < 40; k++) ss.push_back(k % 4 ? space.sample(rng) : *space.sample_rule(rng));
    const FeatureExtractor forward(space), backward(space);
    std::vector<std::vector<float>> f(ss.size());
    for (size_t k = 0; k < ss.size(); k++) f[k] = forward.flat(ss[k]);
    for (size_t k = ss.size(); k-- > 0;) ASSERT_EQ(backward.flat(ss[k]), f[k]) << w.name << "\n" << ss[k].to_json(1);
  }
}

TEST(Features, NamesAreUniqueAndJsonHasEveryValue) {
  for (const auto* names : {&stage_feature_names(), &flat_feature_names()}) {
    std::set<std::string> u(names->begin(), names->end());
    EXPECT_EQ(u.size(), names->size());
  }
  const auto outs = matmul64();
  ScheduleSpace space(build_pipeline_view(outs));
  FeatureExtractor fx(space);
  const std::string j = fx.extract(matmul_schedule(true, true)).to_json();
  EXPECT_NE(j.find("\"version\":" + std::to_string(kFeaturesVersion)), std::string::npos);
  EXPECT_NE(j.find("\"a_L2_read_lines\""), std::string::npos);
  EXPECT_NE(j.find("\"cr.p0.bytes.le2^0\""), std::string::npos);
}

TEST(Features, RecipesAndUnplaceableSchedulesThrow) {
  const auto outs = test::scaled_matmul_pipeline();
  ScheduleSpace space(build_pipeline_view(outs));
  FeatureExtractor fx(space);
  Schedule recipe;
  recipe.autoscheduler = AutoschedulerRecipe{"Adams2019", {}};
  EXPECT_TRUE(test::throws_naming<Error>([&] { fx.extract(recipe); }, {"stage decisions"}));
  // acc computed at a loop out's nest does not have.
  Schedule s;
  StageSchedule o;
  o.func = "out";
  o.placement = Placement::Root;
  s.set(o);
  StageSchedule a;
  a.func = "acc";
  a.placement = Placement::ComputeAt;
  a.compute_at = {"out", 0, "nope"};
  s.set(a);
  EXPECT_TRUE(test::throws_naming<Error>([&] { fx.extract(s); }, {"'acc'", "nope"}));
}

// The default rule's schedules are data the features see: every workload of networks whose
// kernels cover register tiles, Winograd (products computed at the output's task loop, read by
// the transform inside it), rfactor'd lane sums and prefetches has finite features, and its
// register tile moves them as a tile should (its accumulator per tile, not per output).
TEST(Features, EveryDefaultScheduleOfZooNetworksHasFeatures) {
  int workloads = 0, computed_at = 0, prefetching = 0, task_prefetching = 0, rfactored = 0;
  for (const char* file : {"resnet50.onnx", "inception_v3.onnx", "efficientnet_b0.onnx", "transformer.onnx"}) {
    for (const Workload& w : partition_graph(load_model(std::string(TENSORSCHED_SOURCE_DIR) + "/models/" + file)).workloads) {
      LoweredWorkload lw = lower_workload(w);
      SpaceOptions so;
      so.vector_bytes = native_vector_bytes(Halide::get_host_target());
      ScheduleSpace space(lw.outputs, host_code_target(), so);
      FeatureExtractor fx(space);
      const Schedule s = default_schedule(lw.outputs, host_code_target());
      ScheduleFeatures f;
      ASSERT_NO_THROW(f = fx.extract(s)) << file << " " << w.name << "\n" << s.to_json(1);
      // The Funcs rfactor makes have rows of their own.
      for (const StageSchedule& ss : s.stages)
        if (!ss.rfactor.empty()) EXPECT_NO_THROW(row_of(f, rfactor_func_name(ss.func), 1)) << w.name;
      for (size_t i = 0; i < f.flat.size(); i++)
        ASSERT_TRUE(std::isfinite(f.flat[i])) << file << " " << w.name << " " << flat_feature_names()[i];
      for (const auto& r : f.stages) {
        EXPECT_TRUE(r.decided) << file << " " << w.name << " " << r.stage;
        // The directives beyond loops are the acquired values of the rows that issue them.
        if (const StageSchedule* d = s.find(r.stage, r.definition)) {
          EXPECT_EQ(value(r.values, "a_prefetches"), static_cast<float>(d->prefetches.size())) << w.name << " " << r.stage;
          EXPECT_EQ(value(r.values, "a_rfactor"), static_cast<float>(d->rfactor.size())) << w.name << " " << r.stage;
          if (!d->prefetches.empty()) {
            EXPECT_GT(value(r.values, "a_prefetch_lines"), 0) << w.name << " " << r.stage << ": it reads what it prefetches";
            EXPECT_GE(value(r.values, "a_prefetch_ahead"), 1);
          }
          if (r.definition == 0)
            EXPECT_EQ(value(r.values, "a_task_prefetches"), static_cast<float>(d->task_prefetches.size()));
          prefetching += !d->prefetches.empty();
          rfactored += !d->rfactor.empty();
          task_prefetching += r.definition == 0 && !d->task_prefetches.empty();
        }
        const StageSchedule* e = s.find(r.stage, 0);
        if (r.definition == 0 && e && e->placement == Placement::ComputeAt) {
          // Allocated once per iteration of a consumer loop: a tile, smaller than the stage.
          for (const Stage& st : space.view().stages)
            if (func_base_name(st.name) == r.stage) {
              const float alloc = value(r.values, "a_alloc_bytes"), whole = lg(static_cast<double>(st.bytes) * st.elements);
              EXPECT_LE(alloc, whole) << w.name << " " << r.stage;
              computed_at += alloc < whole;
            }
        }
      }
      workloads++;
    }
  }
  EXPECT_GT(workloads, 150);
  EXPECT_GT(computed_at, 100);
  // The rule prefetches inside a tile's loops where it measured a gain: not on Intel hosts
  // (tile_cache_plan.cpp), whose zoo schedules have none.
  if (!intel_host()) EXPECT_GT(prefetching, 0);
  EXPECT_GT(task_prefetching, 0);
  EXPECT_GT(rfactored, 0) << "efficientnet's lane sums";
}


// The Funcs a schedule makes have rows of their own: the K-blocked matmul's staged block of B
// (computed inside each block of K, vectorized) and an rfactor'd reduction's intermediate, under
// the names the schedule gives them; the rfactor'd update's row keeps counting its directive.
TEST(Features, FuncsASchedulesMakesHaveRowsOfTheirOwn) {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {64, 1024}).initializer("w", test::rand_f32({1024, 1024}, 5)).node("MatMul", {"x", "w"}, {"y"}).output("y");
  const Workload w = partition_graph(test::import_model(b.save("features_staged.onnx"))).workloads.at(0);
  LoweredWorkload lw = lower_workload(w);
  const ScheduleSpace space(lw.outputs, host_code_target());
  const FeatureExtractor fx(space);
  DefaultKnobs stream;
  stream.stream = 1;
  const Schedule staged = default_schedule(lw.outputs, host_code_target(), stream);
  const StageSchedule* source = nullptr;
  for (const StageSchedule& ss : staged.stages)
    if (!ss.staged_for.empty()) source = &ss;
  ASSERT_NE(source, nullptr) << "the rule stages no block of B:\n" << staged.to_json(1);
  const ScheduleFeatures f = fx.extract(staged);
  const std::string copy = staged_copy_name(source->func, source->staged_for.at(0));
  const StageFeatures& row = row_of(f, copy, 0);
  EXPECT_TRUE(row.decided);
  EXPECT_EQ(value(row.values, "a_compute_at"), 1.f) << "computed inside each block of K";
  EXPECT_GT(value(row.values, "a_vector_lanes"), 0.f);
  EXPECT_GT(value(row.values, "a_executions"), lg(1)) << "once per block";
  for (const float v : row.values) EXPECT_TRUE(std::isfinite(v));
  // The same schedule over the space's view alone: no row for the copy, the count stays.
  const ScheduleSpace view_only(build_pipeline_view(lw.outputs));
  const ScheduleFeatures counted = FeatureExtractor(view_only).extract(staged);
  EXPECT_TRUE(std::none_of(counted.stages.begin(), counted.stages.end(), [&](const StageFeatures& r) { return r.stage == copy; }));

  // rfactor: acc's update factored over r$x into acc_intm.
  const std::vector<Halide::Func> pipeline = test::scaled_matmul_pipeline();
  const ScheduleSpace hand(pipeline, host_code_target());
  ScheduleBuilder sb;
  sb.func("out").compute_root();
  sb.func("acc").compute_root();
  FuncRef partial = sb.func("acc").update(0).rfactor(Halide::RVar("r$x"), Halide::Var("u"));
  partial.compute_root();
  sb.inline_the_rest(pipeline);
  ASSERT_EQ(sb.schedule.validate(pipeline), std::nullopt);
  const ScheduleFeatures rf = FeatureExtractor(hand).extract(sb.schedule);
  const StageFeatures& intm = row_of(rf, rfactor_func_name("acc"), 1);
  EXPECT_TRUE(intm.decided);
  EXPECT_EQ(value(intm.values, "a_root"), 1.f);
  EXPECT_GT(value(intm.values, "a_points"), 0.f);
  EXPECT_EQ(value(row_of(rf, "acc", 1).values, "a_rfactor"), 1.f);
}

}  // namespace
}  // namespace ts
