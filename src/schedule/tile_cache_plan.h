#pragma once
// The cache half of the default rule's tile plan (schedule/default_tile.h): where a register
// tile's data lives between its loops. default_tile.cpp plans the register tile and the outer
// loops; these decide, from the same TileFacts, what the outer loops keep in L1 and L2:
//  - row groups: a rows-outermost tile's rows in groups inside its block loop (the weights read
//    once per group, not per row);
//  - block tasks: one output-block tile a parallel task where the tasks then prefetch;
//  - streaming and chunks: the reduction's outermost loop split so a slice of the weights serves
//    every column (and row) of a task from L1; a plain matmul's K in blocks;
//  - the task prefetch: the next parallel task's weights into L2 (schedule/task_prefetch.h).
// Internal to schedule/: plan_tile() calls them in that order.
#include <cstdint>
#include <optional>

#include "schedule/default_schedule.h"
#include "schedule/default_tile.h"

namespace ts {

// L2 per core the rule plans for where the host does not say (1 MiB).
constexpr int64_t kDefaultL2Bytes = int64_t{1} << 20;

// The knob's value clamped to [lo, hi], or the rule's when the knob is unset.
int clamp_knob(const std::optional<int>& knob, int rule, int lo, int64_t hi);
// Whether the rule streams a blocked tile's weights (hosts other than Intel's; tile_cache_plan.cpp).
bool streams_by_rule(const TileFacts& f);

// The rows of a rows-outermost blocked tile in groups inside its block loop (knob row_group, else
// the rule): called after the outer loops are ordered, before the parallel loop is fused.
void plan_row_groups(const TileFacts& f, const DefaultKnobs& k, TilePlan& p);
// The parallel loop cut back to the tile's output blocks where those tasks would prefetch (the
// rule's; called by the parallel loop's planning when no tasks or grain knob is set).
void prefer_block_tasks(const TileFacts& f, TilePlan& p);
// The streamed loop, the chunks of the reduction's outermost loop or a matmul's blocks of K.
void plan_streaming(const TileFacts& f, const DefaultKnobs& k, TilePlan& p);
// Whether each parallel task prefetches the next one's weights (knob prefetch, else the rule).
void plan_task_prefetch(const TileFacts& f, const DefaultKnobs& k, TilePlan& p);

}  // namespace ts
