#pragma once
// The schedule Halide holds for a pipeline, read back into Schedule data: what an autoscheduler
// (Adams2019, Li2018, Mullapudi2016) chose once its choice is applied, so that its schedules are
// records like any other, replayed by apply() and seen by the features. Every directive Schedule
// covers is read (placement, storage level, order and memory, splits, fusion, the loop order,
// vector, unroll and parallel loops, prefetches, outputs bounded to their estimates); one using one
// it does not (rfactor or staging copies made outside a Schedule, compute_with, storage folding or
// alignment, other bounds, GPU loops, async, memoization) is refused naming the directive and the
// stage.
#include <Halide.h>

#include <optional>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace ts {

// The stage schedules of every Func `outputs` reach, as Halide holds them now, or nullopt with
// the reason in `why`. Loop names are the short names the scheduling calls gave (Halide's
// "x.xo" is "xo"); a stage Halide left at its default nest has no loop steps. The result bounds
// the outputs to their estimates (Schedule::bound_outputs) only when they are bounded so now: the
// autoschedulers do not bound them.
std::optional<Schedule> read_halide_schedule(const std::vector<Halide::Func>& outputs, std::string& why);

}  // namespace ts
