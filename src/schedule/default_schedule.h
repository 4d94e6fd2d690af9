#pragma once
// tensorsched's untuned baseline schedule, applied to any Halide pipeline whose Funcs carry
// estimates of their extents (define_tensor sets them from the fixed shapes):
//  1. A pure stage that only renames another Func's value (input wrappers) stays inline.
//  2. Reduction stages (with update definitions) and pure stages read by a reduction (padded
//     inputs) are computed at root; other pure stages (elementwise followers) are inlined into
//     the output, i.e. computed inside its tiles.
//  3. Every root stage vectorizes its innermost pure loop by the native vector width (with a
//     guarded tail) when that loop is at least half a vector long, and runs in parallel over
//     its outermost pure loops, fused until there are enough tasks for the cores, when it has
//     enough work (points x reduction iterations >= 2^18) to pay for waking the thread pool.
//  4. Update definitions keep the vectorized pure loop innermost, the reduction loops next, and
//     the remaining pure loops (parallel) outside.
//  5. Exception to 2-4: an output whose value is elementwise in one reduction over the same
//     domain (conv/matmul + bias + activation) is tiled: a vector of the innermost loop times
//     up to 4 iterations (unrolled) of the loop whose loads the vector reuses (a conv's output
//     channel, a matmul's row), with the reduction computed inside each tile so that its
//     accumulators live in registers. Over channel-blocked tensors (graph/layout_plan.h) the
//     tile is the NCHWc micro-kernel: the lane vector x up to 8 columns x 2 output-channel
//     blocks, the innermost reduction loops unrolled; where no load is reused (depthwise,
//     pooling) the padded input is read in place instead of copied.
#include <Halide.h>

#include <vector>

namespace ts {

void apply_default_schedule(const std::vector<Halide::Func>& outputs, const Halide::Target& target);

// Bounds every output's loops to its estimates (the workload's fixed shape, from 0): every loop
// extent and every per-tile allocation becomes a constant, so an accumulator tile lives on the
// stack instead of a heap allocation per tile (a depthwise conv's tile sized by a fused parallel
// loop's batch index was malloc'ed 2,352 times per call). The default schedule and the sketch's
// schedules call it; Halide's autoschedulers do not: an Adams2019 schedule of a conv gave wrong
// values under fixed output bounds in Halide 14 (tests/schedule/autoscheduler_test.cpp).
void bound_outputs_to_estimates(const std::vector<Halide::Func>& outputs);

}  // namespace ts
