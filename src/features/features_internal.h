#pragma once
// Internal to src/features: the feature layouts (name -> offset), what the extractor precomputes
// per pipeline, and the analytical model of one definition's loop nest. See features.h.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "features/features.h"
#include "schedule/loop_nest.h"

namespace ts::fdetail {

constexpr int kLevels = 6;        // innermost loop levels described one by one (then the root)
constexpr int kProducers = 3;     // producer slots per definition
constexpr int kThresholds = 16;   // context-relation thresholds 2^0, 2^2, ..., 2^30 points
constexpr int kLineBytes = 64;    // cache line
constexpr int64_t kStackLimit = 64 * 1024;  // allocations below this, inside a loop, go on the stack

// log2(1 + x) for counts (x >= 0), as floats.
float lg(double x);

// ---- layouts: offsets of named values, in name order ----

struct LevelIdx { int points, read_bytes, write_bytes, read_lines, write_lines, reused_bytes, intensity; };
struct IProducerIdx { int present, is_input, bytes, sites, loads, stride_inner, non_affine, transposed, broadcast_loops, footprint; };
struct AProducerIdx { int present, loads, stride_inner, dense, broadcast, gather, reuse_distance, root_lines, local; };

struct StageLayout {
  std::vector<std::string> names;
  int acquired_begin = 0;  // values before it are intrinsic (kept for undecided stages)
  // intrinsic
  int i_update, i_output, i_bytes, i_elements, i_points, i_reduction_points, i_loops, i_reduction_loops;
  int i_loop_extent[kLevels];
  int i_ops_begin;  // 22 per-point op counts, OpHistogram order
  int i_flops, i_int_ops, i_flops_per_load, i_intensity;
  IProducerIdx i_prod[kProducers];
  // acquired
  int a_inline, a_root, a_compute_at, a_store_outside, a_executions, a_points, a_recompute, a_loops;
  int a_loop_extent[kLevels], a_loop_reduction[kLevels];
  int a_parallel_depth, a_unroll_extent, a_vector_lanes, a_vec_frac;
  int a_vec_float_ops, a_scalar_float_ops, a_vec_int_ops, a_scalar_int_ops, a_vec_loads, a_scalar_loads,
      a_vec_stores, a_scalar_stores;
  int a_vec_loads_dense, a_vec_loads_broadcast, a_vec_loads_strided, a_vec_loads_gather;
  int a_inlined_stages, a_inlined_ops;
  LevelIdx level[kLevels + 1];  // kLevels: the root (every execution of the nest)
  AProducerIdx a_prod[kProducers];
  int a_out_stride_inner, a_out_reuse_distance;
  int a_tasks, a_core_util, a_launches, a_false_sharing;
  int a_alloc_bytes, a_allocs, a_heap, a_stack, a_page_faults;
  int a_prefetches, a_prefetch_ahead, a_prefetch_lines, a_task_prefetches, a_rfactor, a_staged_copies;
  int d_vec_ops_per_byte, d_loads_per_op, d_bytes_per_line, d_ops_per_task;
};
const StageLayout& stage_layout();

struct FlatLayout {
  std::vector<std::string> names;
  int anchor = 0;  // the anchor's StageFeatures::values start here
  int output = 0;  // the output's (its last definition's) values start here
  int s_decided, s_inline, s_root, s_compute_at, s_points, s_recompute, s_vec_frac;
  int s_vec_float_ops, s_scalar_float_ops, s_vec_int_ops, s_scalar_int_ops, s_vec_loads, s_scalar_loads;
  int s_read_bytes, s_write_bytes, s_read_lines, s_write_lines;
  int s_alloc_bytes, s_allocs, s_heap_allocs, s_page_faults, s_false_sharing, s_launches, s_min_core_util;
  int cr_begin;  // [buffer 0..3][curve touch, bytes, reuse][threshold]
};
const FlatLayout& flat_layout();

// ---- precomputed pipeline ----

// One dimension of an index into a buffer, over a definition's loops (Definition::loops order).
struct Idx {
  std::vector<int64_t> coeff;  // per loop (meaningless when !affine)
  int64_t constant = 0;        // constant term
  bool affine = true;          // coeff/constant describe the index exactly
  uint64_t deps = 0;           // loops the index mentions (bit k: Definition::loops[k])
};

// One call site: a buffer (stage index, or stages + input index) indexed per dimension.
struct Read {
  int buf = 0;
  std::vector<Idx> dims;
};

// A buffer's layout in this schedule: allocated extents and strides (elements) per dim.
struct Geom {
  int bytes = 4;
  std::vector<int64_t> ext, stride;
  std::vector<int> order;  // storage order, innermost first
};
// Strides follow `order` (empty: dims in order).
Geom make_geom(int bytes, std::vector<int64_t> ext, std::vector<int> order = {});

struct DefInfo {
  int stage = 0, def = 0;           // view stage index, definition index
  std::vector<Read> reads;          // direct call sites, the accumulator included
  std::vector<Read> static_reads;   // the same through rename stages (always inlined)
  Read store;                       // the stage's own index written
  std::vector<float> intrinsic;     // the intrinsic block of the row (stage_layout().acquired_begin values)
};

struct StageInfo {
  std::string name;                 // schedule (base) name
  int decision = 0;                 // index in ScheduleSpace::decisions()
  int first_def = 0;                // its definitions: defs[first_def + d]
  std::vector<int64_t> full;        // extent per dim (>= 1)
  std::vector<int> dim_of_loop;     // definition 0's loop k -> dim
  std::vector<int> consumers;       // consumer stage indices
};

struct Pipeline {
  const ScheduleSpace* space = nullptr;
  int num_stages = 0;
  std::vector<StageInfo> stages;    // view order
  std::vector<DefInfo> defs;        // stage by stage, definition order
  std::vector<Geom> input_geom;     // per input: its layout (dims in order, full extents)
  int anchor = 0;                   // defs index with the most points
  int output_def = 0;               // defs index of the first output's last definition
  int cores = 1;                    // hardware threads
  std::vector<int> stage_of_decision;                   // decision index -> stage
  std::unordered_map<std::string, int> stage_of_name;   // schedule name -> stage
  std::vector<std::vector<std::pair<int, const Edge*>>> out_edges;  // per stage: (consumer, edge)
  // Where a stage's uses end up through inlined consumers (uses_through_inlined), by stage and
  // the inlined flags of the stages decided before it, kept across extractions: a search's
  // schedules repeat a few inlining patterns, and composing accesses is a third of an extraction.
  mutable std::mutex uses_mutex;
  mutable std::map<std::pair<int, std::vector<bool>>, std::optional<UsesInStage>> uses_cache;
};

// ---- per-extraction state ----

// What pass 1 (placements, decision order) leaves for a Func.
struct FuncState {
  bool decided = false;
  bool inlined = false;             // folded into its consumers (decided inline, or an undecided rename)
  Placement placement = Placement::Inline;
  std::vector<int64_t> region;      // extent per dim computed per execution
  double executions = 1;            // times each definition's nest runs
  double enclosing_tasks = 0;       // parallel tasks of a consumer loop around the compute site (0: none)
  double allocs = 0;                // allocations over the run (0: none, e.g. outputs)
  int64_t alloc_elems = 0;          // elements per allocation
  bool local = false;               // allocated inside a consumer loop
  Geom geom;                        // storage as consumers see it
  std::vector<std::vector<OrigLoop>> orig;   // per definition
  std::vector<std::vector<NestLoop>> nest;   // per definition
  double calls = 0;                 // inline: evaluations over the run
  double calls_scalar = 0;          // inline: of which outside vector lanes
  double ops_vec = 0, ops_scalar = 0;  // inline: its float ops as vector instructions / scalar ops
  double ints_vec = 0, ints_scalar = 0;  // the same for integer and bool ops
};

// Per-level memory of one buffer (for context relations).
struct BufLevels {
  std::vector<double> touches, elems;  // per nest level: accesses, unique elements (whole loop k)
  int elem_bytes = 0;                  // bytes per element (0: no such buffer)
};

// What the model computes for one definition, beyond its row.
struct DefResult {
  std::vector<double> level_points;    // per nest level: points of the whole loop
  std::vector<BufLevels> bufs;         // the anchor's context buffers: producers 0..2, output
  double vec_float = 0, scalar_float = 0, vec_int = 0, scalar_int = 0, vec_loads = 0, scalar_loads = 0;
  double points = 0, needed = 0, read_bytes = 0, write_bytes = 0, read_lines = 0, write_lines = 0;
  double launches = 0, false_sharing = 0, core_util = 1, vec_frac = 0;
};

// The read `r` (into inline stage P, over the caller's `nloops` loops) followed by P's read `q`
// (over P's pure loops, `dim_of_loop` mapping them to P's dims): q rewritten over the caller's loops.
Read compose(const Read& r, const Read& q, const std::vector<int>& dim_of_loop, size_t nloops);

// Footprint (elements, unique cache lines) of reads of one buffer while the loops cover `cover`
// (per Definition::loops index): per dim the union of the reads' affine boxes.
struct Foot {
  double elems = 0, lines = 0;
};
Foot footprint(const std::vector<const Read*>& rs, const Geom& g, const std::vector<int64_t>& cover);
// Address step (elements) of a read when loop j advances; `gather`: a non-affine dim uses j.
int64_t address_step(const Read& r, const Geom& g, int j, bool& gather);
// No read of `rs` depends on loop j.
bool invariant(const std::vector<const Read*>& rs, int j);

// Fills the acquired and derived values of definition `di` (decided, not inlined) into `row`.
// Adds inline producers' calls and ops to `funcs`.
DefResult model_definition(const Pipeline& p, const Schedule& s, int di, std::vector<FuncState>& funcs,
                           std::vector<float>& row);

}  // namespace ts::fdetail
