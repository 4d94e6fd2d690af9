// The loop nest a StageSchedule gives (schedule/loop_nest.h): the structured decisions, then
// loop steps in Halide's terms (splits, including one of a fused loop, fusion, reordering,
// vector and unroll marks), with what one iteration of each loop covers.
#include "schedule/loop_nest.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ts
