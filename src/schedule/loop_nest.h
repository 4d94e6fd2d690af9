#pragma once
// The loop nest a StageSchedule gives one definition, computed from the Schedule data alone (no
// Halide calls): the loops after tiling, reordering, vectorization, fusion and unrolling, with
// what one iteration of each covers. Shared by ScheduleSpace (placement candidates and the region
// a compute_at Func realizes per iteration) and the features (per-level footprints), so both
// read the same nest.
//
// Indices: original loops are numbered by Definition::loops (PipelineView order: pure loops then
// reduction loops), the columns of the access matrices; the nest's own order is the Schedule's
// (see schedule.h: the pure definition's args, an update's RVars then its pure args, innermost
// first, unless `order` says otherwise).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/pipeline_view.h"
#include "schedule/schedule.h"

namespace ts {

// How a loop of a scheduled nest runs.
enum class LoopKind { Serial, Parallel, Vectorized, Unrolled };

// An original loop of a definition (a Var or an RVar before tiling).
struct OrigLoop {
  std::string name;        // Var or RVar name
  int def_loop = 0;        // its index in Definition::loops (the access matrices' column)
  int64_t extent = 1;      // iterations per execution of the nest (a pure loop: the region computed)
  bool reduction = false;  // an RVar
};

// Definition `def` of `st`, in the Schedule's default nest order (innermost first). Pure loops
// take their extent from `region` (per dim of the stage; empty: the stage's estimates), reduction
// loops the RDom's. Unknown extents count as 1.
std::vector<OrigLoop> original_loops(const Stage& st, int def, const std::vector<int64_t>& region);

// One loop of a scheduled definition's nest.
struct NestLoop {
  std::string name;             // loop name after tiling and fusion; lanes split off a longer loop: "<loop>.v"
  int orig = 0;                 // its original loop (Definition::loops index); the fused parallel loop: its innermost member's
  int64_t extent = 1;           // iterations (the fused parallel loop: product of its members')
  LoopKind kind = LoopKind::Serial;  // serial, parallel (fused), vector lanes or unrolled
  bool reduction = false;       // a level of a reduction loop
  bool site = true;             // a Func may be computed here (not the lanes, nor a guarded vector loop)
  std::vector<int64_t> inside;  // per Definition::loops index: extent one iteration's body covers (1 = none)
};

// The index of the loop named `name` in `nest`, -1 when none is.
int find_nest_loop(const std::vector<NestLoop>& nest, const std::string& name);

// The nest `ss` gives the definition whose original loops are `orig` (original_loops()),
// innermost first. A vectorized loop longer than its width appears as two loops: the lanes
// ("<loop>.v", kind Vectorized, no site) and the serial loop named by the schedule just outside.
// Loop steps (LoopStep) then act on those loops as Halide's do: a split divides a loop's
// iterations (a fused loop's fastest member first), a fuse joins two loops into one that covers
// both. Loops the schedule names but the definition lacks are ignored (validate() rejects them).
std::vector<NestLoop> scheduled_nest(const StageSchedule& ss, const std::vector<OrigLoop>& orig);

// What the whole of nest loop `j` covers per Definition::loops index (j == nest.size(): the
// whole nest, i.e. the original extents).
std::vector<int64_t> whole_loop_cover(const std::vector<NestLoop>& nest, size_t j, const std::vector<OrigLoop>& orig);

// Per producer dim, the extent of the box that `accesses` (all of one consumer definition) read
// while the consumer's loops cover `cover` (per Definition::loops index), clamped to
// [1, full[dim]]. A dim indexed non-affinely counts 1: the space offers no split along it.
std::vector<int64_t> access_region(const std::vector<Access>& accesses, const std::vector<int64_t>& cover,
                                   const std::vector<int64_t>& full);

// Per stage, the extents of the box the pipeline's outputs need of it (Halide order), which is
// what Halide's bounds inference makes a Func computed at root compute: its full extent unless
// its consumers read only part of it (a Slice, a cropping Pad). Walked from the outputs, each
// consumer's needed box through its affine accesses (a non-affine index: its interval over the
// consumer's whole extent, Edge::footprint, or the whole dim where that is not constant).
// A tile larger than this region would shift inwards past its start and read outside.
std::map<std::string, std::vector<int64_t>> needed_extents(const PipelineView& view);

// The accesses of a producer as seen through an inlined consumer `via` (one pure definition):
// `inner` (the producer's call sites in `via`, over via's loops) composed with `outer` (via's call
// sites in its own consumer, over that consumer's definition loops), one access per pair of
// sites. A dim stays affine when its index and the via indices it uses are affine.
std::vector<Access> compose_accesses(const std::vector<Access>& inner, const Stage& via, const std::vector<Access>& outer);

// Where a producer's uses end up when the stages reading it are inlined: the one stage that every
// path of inlined stages (each with one definition) from `producer` reaches, and the producer's
// accesses there, composed along every path, a diamond such as t -> sigmoid(t) -> t * sigmoid(t)
// included. `inlined(stage)` says whether a stage is inlined, or nullopt when that is not known
// yet. Nullopt when that is not known for a stage on the way, paths end in different stages, an
// edge has no accesses, or there are more than 64 steps. Shared by the space's compute_at
// candidates and the features, so both see the same placements.
struct UsesInStage {
  std::string stage;               // the stage the uses end up in (not inlined)
  std::vector<Access> accesses;    // the producer's accesses over that stage's loops
};
std::optional<UsesInStage> uses_through_inlined(const PipelineView& view, const std::string& producer,
                                                const std::function<std::optional<bool>(const std::string&)>& inlined);

}  // namespace ts
