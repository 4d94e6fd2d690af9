#pragma once
// Refit: carries a schedule tuned for one workload to another workload of the same class (the
// same operation sequence, other sizes), as tuning-reuse (Gibson and Cano) needs: a 3x3 conv's
// register tile and loop order tried on every other 3x3 conv of a new model.
//
// What changes and what does not
//  - Stage, loop and Func names follow the operation sequence, not the sizes, so placements,
//    loop orders, parallel loops and compute_at sites carry as they are.
//  - Split factors are re-fitted to the target's extents (per iteration of the compute loop for
//    a compute_at Func): a shift-inwards split at most the extent at root and half of it in a
//    compute_at region (as the space prunes), a round-up split (updates, reduction loops) a
//    divisor; the largest such factor not above the donor's is kept.
//  - A vectorized tiling level stays a multiple of its width; where the target is narrower than
//    one vector the width halves until it fits (or the loop is no longer vectorized).
//  - Unrolled loops whose target extent exceeds the space's unroll limit are no longer
//    unrolled, and the unroll budget (kMaxUnrollBits) is kept by dropping the longest.
//  - Packed input layouts keep their dim; the block becomes the largest power of two not above
//    the donor's that divides the target extent (dropped below 2).
//  - An autoscheduler recipe carries unchanged: it is re-run on the target.
// Every change is reported as one line. A schedule that names a loop or definition the target
// lacks, or that the target's validate() rejects after re-fitting, is not carried: the result's
// `error` says why. Nothing here throws for a schedule that does not fit.
#include <Halide.h>

#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/schedule_space.h"

namespace ts {

struct RefitResult {
  Schedule schedule;                 // the re-fitted schedule (valid on the target when ok())
  std::vector<std::string> changes;  // what was adjusted, one line each ("Conv_0_n0: x split by 7 (was 28)")
  std::string error;                 // why it cannot be carried; "" when it can

  bool ok() const { return error.empty(); }
};

// `s`, a schedule of some workload of the class, re-fitted to the pipeline `outputs` whose space
// (its view and options) is `to`.
RefitResult refit(const Schedule& s, const ScheduleSpace& to, const std::vector<Halide::Func>& outputs);

}  // namespace ts
