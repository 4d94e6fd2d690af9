#pragma once
// Sketch: Ansor-style structured points of a ScheduleSpace. Uniform draws from the space are
// dominated by nests no engineer would write (a conv's accumulator recomputed or spilled,
// reduction loops innermost around scalar code): every one of them is slower than the default
// schedule. Ansor (Zheng et al., OSDI 2020) first derives a "sketch" -- the high-level structure
// of good programs -- from rules on the compute DAG, then samples only the low-level knobs (tile
// sizes, loop order, parallel granularity). This is that rule for tensorsched's commonest
// workload.
//
// Rule "register-blocked reduction": the pipeline's single output o is an elementwise function
// (through inlined stages, the chain) of one reduction r (a pure definition and one update)
// over the same domain (a conv or matmul followed by bias, residual add, ReLU ...). Then
//  - o is computed at root and tiled into a register tile: its innermost loop x split into
//    `vectors` unrolled vectors of `vector_width` lanes, its reuse loop u (a loop no load that
//    depends on x depends on, e.g. a conv's output channel) into an unrolled tile of
//    `reuse_tile`, its row loop y (the next loop, when not u) into an unrolled tile of
//    `row_tile`; the tile's outer loops run in `outer_order`, the outermost `parallel_loops`
//    of them fused and parallel;
//  - r is computed at the innermost outer loop, so its region is the register tile: its pure
//    loops vectorized and unrolled the same way, the reduction loops outside them, so the
//    accumulators stay in registers across the whole reduction;
//  - the chain is inlined into o; r's producers that are not renames (a pad) are computed at
//    root, vectorized along their innermost loop and parallel over their outer loops; renames
//    and other pure stages are inlined.
// With vector_width = the native width capped by the row, vectors = 1, reuse_tile = 4 and the
// parallel loops fused until there are 8 tasks this is the default rule's schedule
// (default_knobs()).
//
// Channel vectors (knob `channel_vectors`, AutoTVM's NCHW[x]c conv): when r reads a packable
// input (a weight) whose dim d follows a pure loop c alone with stride 1 (output channels), the
// vector lanes run along c, x is the unrolled reuse tile, the weight is packed once at load
// with dim d blocked by the vector width (schedule/input_layout.h) so a vector of weights is one
// dense load, and r is stored with c innermost so its accumulators are dense. A root producer
// read along c (a depthwise conv's padded input) is stored and vectorized along c: the
// channels-innermost input stage.
// This is what keeps the lanes full where rows are short (a 7x7 layer with 16-lane vectors), so
// channel tiles take the widest width only, with at least 8 accumulators.
//
// Every sketch point is a point of the space (same placement candidates, tilings, unroll
// budget), so features, mutation and the records treat it like any other schedule; the space's
// counts do not change. Draws are uniform per knob, not over the space.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace ts {

class ScheduleSpace;
struct PipelineView;
struct Stage;

// The knobs of a sketch: what a draw chooses.
struct SketchKnobs {
  bool channel_vectors = false;   // vector lanes along u (channels) and the reuse tile along x (see top)
  int vector_width = 0;           // lanes of the vector loop: x, or u with channel_vectors (0 = none)
  int vectors = 1;                // vectors along the vector loop per register tile (unrolled when > 1)
  int reuse_tile = 1;             // register-tile extent of the reuse loop: u, or x with channel_vectors (1 = not tiled)
  int row_tile = 1;               // register-tile extent of the row loop y (1 = not tiled)
  std::vector<int> outer_order;   // the permutable outer loops (Sketch::outer_loops indices), outermost first
  int parallel_loops = 0;         // outermost outer loops fused into the parallel loop (0 = serial)
  bool operator==(const SketchKnobs&) const = default;
};

class Sketch {
 public:
  // The sketch of the space's pipeline, or null when its rule does not apply.
  static std::shared_ptr<const Sketch> match(const ScheduleSpace& space);

  // What the default rule picks (see top).
  SketchKnobs default_knobs() const;
  // Knobs drawn at random: a register tile uniformly among those within the register and
  // unroll budgets, a uniform order of the outer loops, a uniform parallel depth among those
  // with at least two tasks.
  SketchKnobs draw(std::mt19937_64& rng) const;
  // `k` with one knob (the tile, the order of two adjacent outer loops, or the parallel depth)
  // changed; `k` itself when no knob has an alternative.
  SketchKnobs mutate(const SketchKnobs& k, std::mt19937_64& rng) const;
  // The complete schedule the knobs stand for. Throws Error when they are out of range.
  Schedule build(const ScheduleSpace& space, const SketchKnobs& k) const;
  // The knobs `s` was built from, or nullopt when it is not a sketch point.
  std::optional<SketchKnobs> knobs_of(const ScheduleSpace& space, const Schedule& s) const;

  // The outer loops of o's register tile whose order is a knob (extent > 1), by name before
  // tiling: x, u, y and o's other pure loops.
  const std::vector<std::string>& outer_loops() const { return outer_; }
  // One line: the rule's stages and loops.
  std::string describe() const;

 private:
  struct Tile { bool ch; int v, xv, u, y; };    // channel_vectors, vector_width, vectors, reuse_tile, row_tile
  int vector_pos(bool ch) const { return ch ? cu_ : 0; }  // out_dims_ position of the vector loop
  int reuse_pos(bool ch) const { return ch ? 0 : u_; }   // ... and of the reuse loop
  std::vector<Tile> tiles() const;              // every register tile within the budgets
  int64_t tasks(const SketchKnobs& k, int loops) const;  // iterations of the outermost `loops` outer loops
  // A root producer's nest: dim `inner` innermost (in storage too when not 0), vectorized,
  // parallel over the outer loops.
  StageSchedule root_default(const ScheduleSpace& space, size_t i, int inner = 0) const;
  // match()'s steps: sorts the other stages into chain_, root_producers_ and inlined_ (false:
  // the chain from r to o is read from outside it); finds u_ and y_; finds the channel vectors
  // (packed_, cu_, channel_producers_).
  bool classify_stages(const ScheduleSpace& space, const Stage& o, const Stage& r);
  void find_reuse_loops(const PipelineView& v, const Stage& r);
  void find_channel_vectors(const ScheduleSpace& space, const Stage& r);
  // build()'s steps: throws when the knobs are not one of draw()'s; o's stage (its outer loops,
  // outermost first, into `outer`); r's two definitions at o's innermost outer loop, into s.
  void check_knobs(const ScheduleSpace& space, const SketchKnobs& k) const;
  StageSchedule output_stage(const ScheduleSpace& space, const SketchKnobs& k, std::vector<std::string>& outer) const;
  void add_reduction(const ScheduleSpace& space, const SketchKnobs& k, const StageSchedule& os,
                     const std::vector<std::string>& outer, Schedule& s) const;

  size_t out_ = 0, red_ = 0;                    // decision indices of o and r
  std::vector<size_t> chain_;                   // decisions inlined into o
  std::vector<size_t> root_producers_;          // decisions computed at root with a default nest
  std::vector<size_t> inlined_;                 // other decisions inlined (renames, pure stages)
  std::vector<std::string> out_dims_, red_dims_;  // pure loops of o and r, innermost first
  std::vector<int64_t> extents_;                // their extents (equal by position)
  std::vector<std::string> rvars_;              // r's reduction loops, innermost first
  int u_ = -1, y_ = -1;                         // positions of the reuse and row loops (-1 = none)
  std::optional<InputLayout> packed_;           // channel vectors: the weight's layout for the native width (block set per draw)
  int64_t packed_extent_ = 0;                   // extent of the weight's blocked dim
  int cu_ = -1;                                 // channel vectors: position of the loop indexing the weight's blocked dim (-1 = none)
  std::vector<std::pair<size_t, int>> channel_producers_;  // root producers read along cu_: (decision, dim stored innermost)
  int native_ = 0;                              // native vector lanes of o's type
  int max_unroll_ = 16;                         // the space's largest unrolled extent
  int max_parallel_ = 3;                        // the space's largest parallel group
  std::string out_name_, red_name_;             // schedule names of o and r
  std::vector<std::string> outer_;              // see outer_loops()
  std::vector<std::string> fixed_outer_;        // o's outer loops of extent 1: outermost, in dims order
};

}  // namespace ts
