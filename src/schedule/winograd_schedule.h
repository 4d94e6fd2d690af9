#pragma once
// The default rule's schedule of a Winograd conv workload (lower/winograd_conv.cpp's stages):
// per tile row (4 output rows, the parallel task) the input transform of every input channel
// block, then the 36 matmuls in register tiles of `columns` output tiles x `blocks` output-channel
// vectors (the products of that row stay in L2), then per 4x4 output tile the output transform
// with the workload's epilogue (bias, residual add, activation) stored straight to the output.
#include <Halide.h>

#include <optional>
#include <vector>

#include "schedule/default_schedule.h"

namespace ts {

// What the tile plan reads from a Winograd workload.
struct WinogradFacts {
  int64_t tiles_wide = 0;    // output tiles per tile row
  int64_t tile_rows = 0;     // tile rows
  int64_t blocks = 0;        // output-channel blocks
  int64_t weight_bytes = 0;  // bytes of the transformed weights
  int64_t frames = 1;        // output frames of a 3-D conv (its tiles are tiles_wide x tile_rows x frames)
  int64_t taps = 1;          // temporal taps of a 3-D conv (its products reduce over taps x input channels)
  bool operator==(const WinogradFacts&) const = default;
};

// The register tile and task split of Winograd workload `f`: knobs.columns, knobs.blocks and
// knobs.stream when set (clamped), else the rule's.
struct WinogradTile {
  int columns = 1;            // output tiles per register tile (unrolled)
  int blocks = 1;             // output-channel vectors per register tile (unrolled)
  bool weights_once = false;  // tasks over output-channel blocks, each streaming its weights once (knob "stream")
  bool operator==(const WinogradTile&) const = default;
};
WinogradTile plan_winograd_tile(const WinogradFacts& f, const DefaultKnobs& knobs, int cores);

// The facts of the pipeline's Winograd conv when winograd_schedule would schedule it.
std::optional<WinogradFacts> winograd_facts(const std::vector<Halide::Func>& outputs);

class ScheduleBuilder;

// Records the schedule of the pipeline in `sb` when it holds one Winograd conv whose output (with
// its fused epilogue) is the pipeline's only, channel-blocked output; returns false, recording
// nothing, otherwise.
bool winograd_schedule(ScheduleBuilder& sb, const std::vector<Halide::Func>& outputs, const DefaultKnobs& knobs);

}  // namespace ts
