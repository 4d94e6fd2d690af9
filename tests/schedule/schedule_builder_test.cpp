// ScheduleBuilder and the directives it records beyond the structured stage decisions (loop
// steps, prefetch, rfactor, staging copies, task prefetches): JSON round trip, Halide source,
// validation that names the bad step or stage on a restructured copy (the caller's pipeline left
// as it was), and real JIT compiles that compute what the unscheduled pipeline computes.
#include "schedule/schedule_builder.h"

#include <gtest/gtest.h>

#include "graph/error.h"
#include "measure/workload_compiler.h"
#include "schedule/restructure.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

constexpr int M = 24, N = 40, K = 32;

// out(x, y) = max(sum_k a(k, y) * w(x, k), 0) over ImageParams a and b, with w a rename of b
// (the Func the reduction reads its weights through, as lowered workloads do). Fresh Funcs on
// every call: scheduling mutates them.
struct Dot {
  Halide::ImageParam a{Halide::Float(32), 2, "a"}, b{Halide::Float(32), 2, "b"};
  Halide::Buffer<float> av{K, M}, bv{N, K};
  Halide::Var x{"x"}, y{"y"};
  Dot() {
    for (int i = 0; i < M; i++)
      for (int k = 0; k < K; k++) av(k, i) = static_cast<float>((i * 7 + k * 3) % 11) - 5;
    for (int k = 0; k < K; k++)
      for (int j = 0; j < N; j++) bv(j, k) = static_cast<float>((k * 5 + j) % 7) - 3;
    a.set(av);
    b.set(bv);
    a.dim(0).set_estimate(0, K).dim(1).set_estimate(0, M);
    b.dim(0).set_estimate(0, N).dim(1).set_estimate(0, K);
  }
  std::vector<Halide::Func> build() const {
    Halide::RDom r(0, K, "r");
    Halide::Func w("w"), acc("acc"), out("out");
    w(x, y) = b(x, y);
    acc(x, y) = 0.0f;
    acc(x, y) += a(r, y) * w(x, r);
    out(x, y) = Halide::max(acc(x, y), 0.0f);
    w.set_estimate(x, 0, N).set_estimate(y, 0, K);
    acc.set_estimate(x, 0, N).set_estimate(y, 0, M);
    out.set_estimate(x, 0, N).set_estimate(y, 0, M);
    return {out};
  }
  Halide::Buffer<float> realize(const std::vector<Halide::Func>& outs) const {
    return Halide::Func(outs[0]).realize({N, M}, Halide::get_jit_target_from_environment());
  }
};

void expect_same(const Halide::Buffer<float>& got, const Halide::Buffer<float>& want) {
  for (int y = 0; y < M; y++)
    for (int x = 0; x < N; x++) ASSERT_EQ(got(x, y), want(x, y)) << "at " << x << ", " << y;
}

// Whether a Func of the pipeline has `fragment` in its name (Halide names the Funcs rfactor and
// Func::in make after their sources, made unique in the process its own way).
bool has_func(const std::vector<Halide::Func>& outs, const std::string& fragment) {
  for (const auto& [name, fn] : pipeline_funcs(outs))
    if (name.find(fragment) != std::string::npos) return true;
  return false;
}

// The output in vector tiles run in parallel over rows, the reduction computed per tile with its
// K loop split, the weights staged per block of K and prefetched a row ahead.
Schedule tiled_schedule(const Dot& d) {
  ScheduleBuilder sb;
  Halide::Var xo("xo"), xi("xi");
  Halide::RVar r("r$x"), ro("ro"), ri("ri");
  FuncRef out = sb.func("out"), acc = sb.func("acc");
  out.compute_root().split(d.x, xo, xi, 8, Halide::TailStrategy::GuardWithIf).vectorize(xi).parallel(d.y);
  acc.compute_at(out, xo).vectorize(d.x);
  acc.update(0).split(r, ro, ri, 4).reorder(d.x, ri, ro, d.y).vectorize(d.x).prefetch(d.a.name(), ro, ro, 1,
                                                                                      Halide::PrefetchBoundStrategy::NonFaulting);
  sb.func("w").in(acc).compute_at(acc, ro, 1).vectorize(d.x, 8, Halide::TailStrategy::GuardWithIf);
  return sb.schedule;
}

TEST(ScheduleBuilder, RecordsHalideCallsAsData) {
  const Dot d;
  const Schedule s = tiled_schedule(d);
  const StageSchedule* out = s.find("out");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->placement, Placement::Root);
  ASSERT_EQ(out->steps.size(), 3u);
  EXPECT_EQ(out->steps[0], (LoopStep{StepKind::Split, {"x", "xo", "xi"}, 8, Tail::GuardWithIf}));
  EXPECT_EQ(out->steps[2], (LoopStep{StepKind::Parallel, {"y"}, 0, Tail::Auto}));
  const StageSchedule* copy = s.find(staged_copy_name("w", "acc"));
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->compute_at, (ConsumerLoop{"acc", 1, "ro"}));
  EXPECT_EQ(s.find("w")->staged_for, std::vector<std::string>{"acc"});
  ASSERT_EQ(s.find("acc", 1)->prefetches.size(), 1u);
  EXPECT_EQ(s.find("acc", 1)->prefetches[0], (PrefetchDirective{"a", "ro", "ro", 1, PrefetchBound::NonFaulting}));
}

TEST(ScheduleBuilder, NewDirectivesRoundTripThroughJson) {
  Schedule s = tiled_schedule(Dot{});
  StageSchedule& acc = *s.find("acc", 1);
  acc.rfactor.push_back({"r$x", "u"});
  TaskPrefetch q;
  q.task_func = "out";
  q.task_loop = "y";
  q.spread_stage = "acc.s1";
  q.buffer = "b";
  q.task_bytes = 4096;
  q.buffer_bytes = 8192;
  s.find("out")->task_prefetches.push_back(q);
  const std::string j = s.to_json();
  const Schedule back = Schedule::from_json(j);
  EXPECT_EQ(back, s);
  EXPECT_EQ(back.hash(), s.hash());
  EXPECT_EQ(back.to_json(), j);
  const std::string src = s.to_halide_source();
  EXPECT_NE(src.find(".split(x, xo, xi, 8, TailStrategy::GuardWithIf)"), std::string::npos) << src;
  EXPECT_NE(src.find(".prefetch(a, ro, ro, 1, PrefetchBoundStrategy::NonFaulting)"), std::string::npos) << src;
  EXPECT_NE(src.find("Func w_in_acc = w.in(acc);"), std::string::npos) << src;
  EXPECT_NE(src.find("Func acc_intm = acc.update(0).rfactor({{r_x, u}});"), std::string::npos) << src;
  EXPECT_NE(src.find("prefetches the next task's 4096 bytes of b"), std::string::npos) << src;
}

TEST(ScheduleBuilder, BadStepsAreRefusedNamingTheStep) {
  EXPECT_TRUE(test::throws_naming<Error>(
      [] { Schedule::from_json(R"({"format":1,"stages":[{"func":"out","placement":"root","steps":[{"split":["x","xo"],"factor":8}]}]})"); },
      {"step 0"}));
  const Dot d;
  ScheduleBuilder sb;
  sb.func("out").compute_root().split(Halide::Var("q"), Halide::Var("qo"), Halide::Var("qi"), 4);
  const auto why = sb.schedule.validate(d.build());
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("step 0"), std::string::npos) << *why;
  EXPECT_NE(why->find("no loop 'q'"), std::string::npos) << *why;
  ScheduleBuilder par;
  par.func("acc").compute_root();
  par.func("acc").update(0).parallel(Halide::RVar("r$x"));
  const auto race = par.schedule.validate(d.build());
  ASSERT_TRUE(race);
  EXPECT_NE(race->find("reduction loop 'r$x'"), std::string::npos) << *race;
}

TEST(ScheduleBuilder, StagedCopyAndPrefetchComputeWhatTheDefaultComputes) {
  const Dot d;
  const Halide::Buffer<float> want = d.realize(d.build());
  const Schedule s = tiled_schedule(d);
  const auto outs = d.build();
  // Validation restructures a copy: the caller's pipeline has no staging copy afterwards.
  EXPECT_EQ(s.validate(outs), std::nullopt);
  EXPECT_FALSE(has_func(outs, "_in_"));
  for (const auto& [name, fn] : pipeline_funcs(outs)) EXPECT_TRUE(fn.wrappers().empty()) << name;
  apply(s, outs, host_code_target());
  const auto env = pipeline_funcs(outs);
  bool staged = false, prefetched = false;
  for (const auto& [name, fn] : env) {
    staged |= func_base_name(name) == "w" && fn.wrappers().size() == 1;
    prefetched |= func_base_name(name) == "acc" && fn.update(0).schedule().prefetches().size() == 1;
  }
  EXPECT_TRUE(staged);
  EXPECT_TRUE(prefetched);
  expect_same(d.realize(outs), want);
}

TEST(ScheduleBuilder, RfactorMakesAFuncItsOwnEntriesSchedule) {
  const Dot d;
  const Halide::Buffer<float> want = d.realize(d.build());
  ScheduleBuilder sb;
  Halide::Var u("u");
  sb.func("acc").compute_root();
  FuncRef partial = sb.func("acc").update(0).rfactor(Halide::RVar("r$x"), u);
  EXPECT_EQ(partial.func(), "acc_intm");
  partial.compute_root().reorder_storage(u, d.x, d.y);
  partial.update(0).reorder(u, d.x, d.y).vectorize(d.x, 8, Halide::TailStrategy::GuardWithIf);
  const auto outs = d.build();
  EXPECT_EQ(sb.schedule.validate(outs), std::nullopt);
  EXPECT_FALSE(has_func(outs, "_intm"));
  apply(sb.schedule, outs, host_code_target());
  EXPECT_TRUE(has_func(outs, "_intm"));
  expect_same(d.realize(outs), want);

  // An RVar the update does not have, and a staging copy for a Func that does not read it.
  ScheduleBuilder bad;
  bad.func("acc").update(0).rfactor(Halide::RVar("nope"), u);
  auto why = bad.schedule.validate(d.build());
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("stage 'acc.update(0)'"), std::string::npos) << *why;
  EXPECT_NE(why->find("rfactor"), std::string::npos) << *why;
  ScheduleBuilder stray;
  stray.func("w").in(stray.func("out"));
  why = stray.schedule.validate(d.build());
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("does not read 'w'"), std::string::npos) << *why;
}

}  // namespace
}  // namespace ts
