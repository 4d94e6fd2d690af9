// The loop nest a StageSchedule gives (schedule/loop_nest.h): the structured decisions, then
// loop steps in Halide's terms (splits, including one of a fused loop, fusion, reordering,
// vector and unroll marks), with what one iteration of each loop covers.
#include "schedule/loop_nest.h"

#include <gtest/gtest.h>

#include <Halide.h>

namespace ts {
namespace {

// Original loops x (64), y (30), c (8) of a pure definition, innermost first.
std::vector<OrigLoop> xyc() { return {{"x", 0, 64, false}, {"y", 1, 30, false}, {"c", 2, 8, false}}; }

std::vector<std::string> names(const std::vector<NestLoop>& nest) {
  std::vector<std::string> out;
  for (const auto& l : nest) out.push_back(l.name);
  return out;
}

TEST(LoopNest, StepsSplitReorderFuseAndMarkLikeHalide) {
  StageSchedule ss;
  ss.func = "f";
  ss.placement = Placement::Root;
  ss.steps = {{StepKind::Split, {"x", "xo", "xi"}, 16, Tail::GuardWithIf},
              {StepKind::Reorder, {"xi", "c", "xo", "y"}, 0, Tail::Auto},
              {StepKind::Vectorize, {"xi"}, 0, Tail::Auto},
              {StepKind::Unroll, {"c"}, 0, Tail::Auto},
              {StepKind::Fuse, {"xo", "y", "t"}, 0, Tail::Auto},
              {StepKind::Split, {"t", "tt", "tg"}, 8, Tail::GuardWithIf},
              {StepKind::Parallel, {"tt"}, 0, Tail::Auto}};
  const auto nest = scheduled_nest(ss, xyc());
  ASSERT_EQ(names(nest), (std::vector<std::string>{"xi", "c", "tg", "tt"}));
  EXPECT_EQ(nest[0].kind, LoopKind::Vectorized);
  EXPECT_FALSE(nest[0].site);
  EXPECT_EQ(nest[1].kind, LoopKind::Unrolled);
  EXPECT_EQ(nest[3].kind, LoopKind::Parallel);
  // The fused loop (4 x-tiles fastest, 30 rows) split by 8: 4 tiles x 2 rows per task, 15 tasks.
  EXPECT_EQ(nest[2].extent, 8);
  EXPECT_EQ(nest[3].extent, 15);
  // One iteration of tt covers 2 rows of every x-tile and every channel.
  EXPECT_EQ(nest[3].inside, (std::vector<int64_t>{64, 2, 8}));
  EXPECT_EQ(nest[2].inside, (std::vector<int64_t>{16, 1, 8}));
}

TEST(LoopNest, VectorizeAndUnrollByAFactorSplitOffAnUnnamedLoop) {
  StageSchedule ss;
  ss.func = "f";
  ss.placement = Placement::Root;
  ss.steps = {{StepKind::Vectorize, {"x"}, 16, Tail::GuardWithIf}, {StepKind::Unroll, {"y"}, 2, Tail::GuardWithIf}};
  const auto nest = scheduled_nest(ss, xyc());
  ASSERT_EQ(names(nest), (std::vector<std::string>{"x.v", "x", "y.v", "y", "c"}));
  EXPECT_EQ(nest[0].kind, LoopKind::Vectorized);
  EXPECT_EQ(nest[0].extent, 16);
  EXPECT_EQ(nest[1].extent, 4);
  EXPECT_EQ(nest[2].kind, LoopKind::Unrolled);
  EXPECT_EQ(nest[3].extent, 15);
  EXPECT_EQ(nest[4].inside, (std::vector<int64_t>{64, 30, 1}));
}

// What a root Func computes is what its consumers need: a transposed copy read by a slice of
// one of its 13 rows and 4 of its 6 planes needs 1 row and 4 planes; a stage read through a clamp
// (not affine) needs the clamp's interval: columns 0 to 3 of 6.
TEST(LoopNest, NeededExtentsFollowWhatTheConsumersRead) {
  Halide::ImageParam in(Halide::Float(32), 3, "in");
  Halide::Var x("x"), y("y"), z("z");
  Halide::Func t("t"), sliced("sliced"), whole("whole"), clamped("clamped");
  t(x, y, z) = in(z, y, x) * 2.0f;                             // t: [20, 13, 6]
  sliced(x, y, z) = t(x, y + 7, z + 1);                        // [20, 1, 4]
  whole(x, y) = Halide::exp(in(x, y, 0));                      // [6, 13]
  clamped(x, y) = whole(Halide::clamp(x * 3, 0, 5), y) + 1.0f;  // [2, 13]
  in.dim(0).set_estimate(0, 6);
  in.dim(1).set_estimate(0, 13);
  in.dim(2).set_estimate(0, 20);
  t.set_estimate(x, 0, 20).set_estimate(y, 0, 13).set_estimate(z, 0, 6);
  sliced.set_estimate(x, 0, 20).set_estimate(y, 0, 1).set_estimate(z, 0, 4);
  whole.set_estimate(x, 0, 6).set_estimate(y, 0, 13);
  clamped.set_estimate(x, 0, 2).set_estimate(y, 0, 13);
  const auto needed = needed_extents(build_pipeline_view({sliced, clamped}));
  EXPECT_EQ(needed.at("t"), (std::vector<int64_t>{20, 1, 4}));
  EXPECT_EQ(needed.at("sliced"), (std::vector<int64_t>{20, 1, 4}));
  EXPECT_EQ(needed.at("whole"), (std::vector<int64_t>{4, 13}));
  EXPECT_EQ(needed.at("clamped"), (std::vector<int64_t>{2, 13}));
}

}  // namespace
}  // namespace ts
