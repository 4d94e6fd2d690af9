#pragma once
// The register tile of the default rule (schedule/default_schedule.h, rule 5) split in two
// halves that apply and the knob search share:
//  - TileFacts: what the rule reads from the pipeline (extents, which loop reuses loads, whether
//    the tensors are channel-blocked, the reduction's loops). Knob-independent, found once.
//  - TilePlan: the tile the rule builds from the facts and a DefaultKnobs (unset knobs: the
//    rule's own choice). Pure arithmetic, so RuleSketch can tell two knob sets apart
//    (the same plan = the same code) without touching Halide. default_tile.cpp plans the
//    register tile, the outer loops and the parallel loop; tile_cache_plan.h what those loops
//    keep in L1 and L2 (row groups, chunks, streaming, the next task's prefetch).
#include <Halide.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/pipeline_view.h"
#include "schedule/default_schedule.h"

namespace ts {

// The rule's parallel granularity. Outer loops are fused until there are kDefaultParallelTasks
// tasks. Below kDefaultParallelWork (points x reduction iterations) a stage runs on one thread,
// unless an input reaches kParallelReadBytes (below): splitting a small stage costs more than it
// saves (measure/spinning_pool.h cut the wake-ups, not the cache traffic). A parallel task gets
// kDefaultTaskWork at least (consecutive iterations grouped), keeping kDefaultGroupedTasks tasks
// for load balance: a thousand tiny tasks (a WaveNet conv's column tiles) ran slower on 2
// threads than on 1 under Halide's pool lock.
// A stage with an input of kParallelReadBytes or more runs in parallel whatever its work: a
// matrix-vector product (a squeeze-excite conv on one pixel) or a global pool is bound by one
// core's bandwidth, not its FLOPs. Below it the input stays in L2 and the task wake-ups dominate.
// The rule does not know the thread count, so at 1 thread such a parallel loop costs a little
// (measured: docs/benchmarks.md, "The default rule").
constexpr int64_t kDefaultParallelTasks = 8;
constexpr int64_t kDefaultParallelWork = int64_t{1} << 18;
constexpr int64_t kParallelReadBytes = int64_t{192} << 10;
constexpr int64_t kDefaultTaskWork = int64_t{1} << 18;
constexpr int64_t kDefaultGroupedTasks = 64;
// Vector accumulators a register tile of the rule may hold (of 32 registers: weights and
// broadcasts need some). Rule 5's tiles and the Winograd schedule's share it.
constexpr int kMaxAccumulators = 24;
// Fewest vector accumulators that keep the FMA units busy (their latency times their pipes).
constexpr int kMinAccumulators = 8;

// Whether this host's CPU is Intel's (/proc/cpuinfo vendor_id, read once): the rule streams
// blocked tiles elsewhere only (streams_by_rule) and moves the rows of tiles whose input
// exceeds L2 outermost there only (rows_outermost_by_rule), as measured (default_tile.cpp).
bool intel_host();
// The llvm.prefetch locality of the weights the next parallel task reads (schedule/task_prefetch.h):
// 3 (prefetcht0, into L1 and L2) except on Intel, 2 (prefetcht1, into L2), as measured
// (default_tile.cpp).
int weight_prefetch_locality();
// Cores of this host (hardware threads): the threads a model runs on by default.
int host_cores();
// Bytes of L2 per core on this host (sysconf), kDefaultL2Bytes' 1 MiB when it does not say.
int64_t host_l2_bytes();
// Extent of each pure argument of f (innermost first) from its estimates; 0 when unknown.
std::vector<int64_t> estimate_extents(const Halide::Internal::Function& f);
// Points of a loop nest with extents `ext` times the iterations of the reduction `rvars`.
int64_t stage_work(const std::vector<int64_t>& ext, const std::vector<Halide::Internal::ReductionVariable>& rvars);
// Consecutive iterations per task the rule groups for a parallel loop of `tasks` iterations and
// `work` in all (1 = no grouping).
int64_t default_task_grain(int64_t tasks, int64_t work);

// What the rule knows of an output o elementwise in one reduction r over the same domain, read
// from the pipeline's view (analysis/pipeline_view.h).
struct TileFacts {
  std::vector<int64_t> ext;       // extents of o's (and r's) pure loops, innermost first
  int native = 0;                 // native vector lanes of o's type
  int V = 0;                      // lanes of the vector loop (ext[0] capped by native, a power of two)
  bool blocked = false;           // channel-blocked: the innermost loop is one block's lanes
  bool streams_input = false;     // no load is reused (depthwise, pooling): padded inputs are read in place
  int u = -1;                     // the reuse loop (a conv's columns, a matmul's rows); -1 = none
  int v = -1;                     // the output-channel block loop of a blocked reduction; -1 = none
  bool dense_x = false;           // every x-dependent load is dense along x (wider plain tiles pay)
  int64_t x_panel = 0;            // dense only within panels of this many x (a panel-packed B), 0 = no limit
  std::vector<int64_t> rvar_ext;  // r's reduction loops' extents, innermost first (0 = not constant)
  int64_t work = 0;               // points x reduction iterations
  int64_t weight_bytes = 0;       // bytes of the input every column of a tile shares (a conv's weights), 0 = none
  int64_t input_bytes = 0;        // bytes of the input the columns read apart (a conv's activations), 0 = unknown
  int64_t largest_operand_bytes = 0;  // bytes of r's largest input (by estimates), 0 = unknown
  int64_t block_weight_bytes = 0; // bytes of one output block's weights (a plain tile's: one B panel's) when they are contiguous per block (the weights' outermost dimension), else 0
  std::string weights;            // the input every column of a tile shares (read through copies, not indexed by the reuse loop: a conv's weights), "" = none
  std::string weights_via;        // the Func r calls for them (the input's wrapper or the outermost copy), "" = none
  int weight_dims = 0;            // dimensions of the weights (3: a panel-packed B)
  bool operator==(const TileFacts&) const = default;
};

// One outer loop of the tile (outside its register tile), as the rule names it.
// PureGroup: the inner part of a pure loop run in groups (a row group), whose outer part is the
// Pure loop of the same dim.
enum class OuterKind { Columns, Blocks, Vectors, Pure, PureGroup };
struct OuterLoop {
  OuterKind kind = OuterKind::Pure;  // the outer part of the reuse, block or vector loop, another pure loop, or a group of one
  int dim = 0;                       // the pure loop of o it comes from
  int64_t extent = 1;                // its iterations
  bool operator==(const OuterLoop&) const = default;
};

// The tile the rule builds.
struct TilePlan {
  int U = 1;                       // register-tile extent of the reuse loop (1 = not tiled)
  int Vt = 1;                      // output-channel blocks per tile (1 = not tiled)
  bool pair_blocks = false;        // half-vector blocks paired into full vectors (Vt = 2 or 4)
  int X = 1;                       // vectors of the vector loop per tile (plain layouts)
  bool columns_outer = false;      // a plain matmul's column tiles outside its row tiles (r at the row tile, or the panel when K-blocked)
  std::vector<OuterLoop> outer;    // outer loops, innermost first (after `outermost` moved one out)
  int fused = 0;                   // outermost outer loops fused into the parallel loop (0 = serial)
  int64_t tasks = 0;               // iterations of the parallel loop
  int64_t grain = 1;               // consecutive iterations per parallel task (1 = one each)
  int unrolled_rvars = 0;          // innermost reduction loops unrolled
  int streamed = -1;               // outer loop (index in `outer`) run inside the reduction's outermost loop, -1 = none
  int k_block = 0;                 // the outermost reduction loop split in blocks of this many, streamed loop inside (plain matmul: B's slice staged), 0 = none
  bool prefetch_next_task = false; // the next parallel task's weights prefetched into L2 during this task's reduction (schedule/task_prefetch.h)
  bool walk_pages_ahead = false;   // with prefetch_next_task: the page tables of the slice three tasks ahead walked too (task_prefetch.h)
  bool operator==(const TilePlan&) const = default;
};

// The facts of output stage `o` over reduction stage `r` of the view, or nullopt when rule 5 does
// not apply (domains differ or are not estimated, no vector loop).
std::optional<TileFacts> tile_facts(const PipelineView& view, const std::string& o, const std::string& r,
                                    const Halide::Target& target);

// The tile for `facts` under `knobs` (out-of-range knobs are clamped to what the facts allow).
TilePlan plan_tile(const TileFacts& facts, const DefaultKnobs& knobs);

// The PureGroup loop of a plan whose rows run in groups, null for none.
const OuterLoop* row_group_loop(const TilePlan& p);
// Rows per group of a plan whose rows run in groups (its PureGroup loop's extent), 0 for none.
int row_group_of(const TilePlan& p);

// Bytes of the weights one tile reads, its output blocks' (a plain tile's: its B panel's) when they
// are contiguous per block (TileFacts::block_weight_bytes), else 0: a parallel task's slice.
inline int64_t task_slice_bytes(const TileFacts& f, const TilePlan& p) { return f.block_weight_bytes * p.Vt; }

// The pipeline as the rule sees it, read from its view: which Funcs are computed at root, and the
// tiled (output, reduction) pairs with their facts; every Func by name, to name their loops.
struct DefaultStructure {
  struct Tiled {
    Halide::Func o, r;        // the output and its reduction
    Halide::Func weights_via;  // TileFacts::weights_via (undefined when there are no weights)
    TileFacts facts;          // see TileFacts
  };
  std::map<std::string, Halide::Internal::Function> env;  // every Func reached from the outputs
  std::set<std::string> root;           // Funcs computed at root unless tiled (rule 2)
  std::set<std::string> output_names;   // the outputs
  std::vector<Tiled> tiles;             // rule 5's outputs, in output order
};
DefaultStructure default_structure(const PipelineView& view, const std::vector<Halide::Func>& outputs,
                                   const Halide::Target& target);
// The same, building the view of `outputs`.
DefaultStructure default_structure(const std::vector<Halide::Func>& outputs, const Halide::Target& target);

}  // namespace ts
