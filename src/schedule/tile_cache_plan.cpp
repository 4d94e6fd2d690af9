#include "schedule/tile_cache_plan.h"

#include <algorithm>

namespace ts {

// Weights larger than L2 (ResNet's 3x3 convs of 512 channels: 9.4 MB) are read from memory once
// per inference, since a network's weights evict each other from L3, and arrive at the pace the
// first row of a tile consumes them. So the rule moves the tile's first outer loop of more than
// one iteration (its rows) inside the reduction's outermost loop (blocks of input channels): each
// slice of the weights serves every row while it is in L1, the accumulators of all rows live in
// L1, and the next slice is prefetched (default_schedule.cpp). Pure loops only: a column loop
// would unroll.
// The rule streams where a slice holds kMinStreamedSlice reduction iterations or more: a 1x1
// conv's 16 (one input block) leaves the accumulators' loads and stores in L1 a tenth of the
// work. Intel hosts keep the plain loop order, which ran faster there on every streamed direct
// conv (measured: docs/benchmarks.md, "The default rule").
constexpr int64_t kMinStreamedSlice = 64;
// Whether the rule streams a blocked tile's weights (see above).
bool streams_by_rule(const TileFacts& f) {
  if (!f.blocked || f.rvar_ext.size() < 2 || f.weight_bytes <= kDefaultL2Bytes || intel_host()) return false;
  int64_t slice = 1;
  for (size_t i = 0; i + 1 < f.rvar_ext.size(); i++) slice *= std::max<int64_t>(f.rvar_ext[i], 1);
  return slice >= kMinStreamedSlice;
}

namespace {

// Whether outer loop l runs the tile's output-channel blocks (its block tiles, or the blocks
// themselves when a tile holds one).
bool is_block_loop(const TileFacts& f, const TilePlan& p, const OuterLoop& l) {
  return l.kind == OuterKind::Blocks || (p.Vt == 1 && l.kind == OuterKind::Pure && l.dim == f.v);
}

// Bytes of r's accumulators for one row of the tile's columns (a blocked tile: Vt blocks of V lanes).
int64_t row_accumulator_bytes(const TileFacts& f, const TilePlan& p) { return f.ext[f.u] * p.Vt * f.V * 4; }

// A plain matmul streams the same way with its one reduction loop (K) split in blocks of
// kMatmulKBlock: per column panel, for each block of K, every row tile runs over the block, so
// the panel's K-block of B (kMatmulKBlock x 2 vectors, 16 KB, staged contiguous: B's rows are N
// apart and would collide in L1's sets) serves all rows from L1, and the accumulators of all rows
// (M x 2 vectors) stay in L1 between blocks (ONNX Runtime's MLAS packs B in such panels). Where B
// is beyond L2 and K is at least kMinStreamedK (a shorter K's A stays in L2 unstreamed). A
// panel-packed B is contiguous per tile already and is not streamed
// (measured: docs/benchmarks.md, "The default rule").
constexpr int64_t kMatmulKBlock = 128;
constexpr int64_t kMinStreamedK = 1024;
void plan_matmul_streaming(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  const bool rule = f.weight_bytes > kDefaultL2Bytes && f.rvar_ext[0] >= kMinStreamedK && f.x_panel == 0;
  // The row tiles are p.outer[0] when columns are outer, never fused (plan_outer_loops fuses
  // from outer[1] out), so r can be computed outside them.
  if (!p.columns_outer || f.u < 0 || p.outer.size() < 2 || p.outer[0].extent < 2 || !clamp_knob(k.stream, rule, 0, 1))
    return;
  p.streamed = 0;
  p.k_block = static_cast<int>(std::min<int64_t>(kMatmulKBlock, f.rvar_ext[0]));
}
// A blocked tile whose parallel tasks are its output-block tiles (the loops fused with them one
// iteration each, one tile a task) and whose weights are contiguous per block, or a plain tile
// whose tasks are its vector tiles, one B panel each, can prefetch the next task's slice of the
// weights into L2 while it computes (schedule/task_prefetch.h).
bool tasks_are_block_tiles(const TileFacts& f, const TilePlan& p) {
  if (f.block_weight_bytes <= 0 || p.fused < 1 || p.grain != 1 || p.tasks < 2) return false;
  const int last = static_cast<int>(p.outer.size()) - 1, first_fused = last - p.fused + 1;
  const OuterLoop& first = p.outer[first_fused];
  const bool one_slice = f.blocked ? is_block_loop(f, p, first)
                                   : first.kind == OuterKind::Vectors && f.x_panel == p.X * f.V;  // one B panel
  if (!one_slice) return false;
  for (int j = first_fused + 1; j <= last; j++)
    if (p.outer[j].extent != 1) return false;
  return true;
}

// The rule prefetches where a task's compute is short against its slice's trip from memory:
// per weight, a task computes 2 FLOP per output pixel, so the fewer its pixels the larger the
// share of its compute its first row waits for the weights, less what the hardware prefetchers
// cover; and where this task's slice and the next one fit in L2 side by side (three quarters of
// it). Blocked tiles of up to kMaxPrefetchedPixels pixels, with kMinPrefetchedWeightBytes of
// weights or more, gain; larger slices evict each other and the rows' reuse.
//
// A plain matmul whose B is stored in panels (graph/layout_plan.h) runs one panel a task (its
// column tiles outermost): the same slices. Plain tiles prefetch up to kMaxPrefetchedRows rows
// (measured: docs/benchmarks.md, "The default rule").
constexpr int64_t kMaxPrefetchedPixels = 14 * 14;
constexpr int64_t kMaxPrefetchedRows = 256;
constexpr int64_t kMinPrefetchedWeightBytes = 256 * 1024;
int64_t output_pixels(const TileFacts& f) {
  int64_t pixels = 1;
  for (size_t d = 1; d < f.ext.size(); d++)
    if (static_cast<int>(d) != f.v) pixels *= f.ext[d];
  return pixels;
}
// Whether the tile's tasks may prefetch: L2 holds this task's slice and the next one side by side
// (three quarters of it), or, where the rows run inside one-block chunks (`in_chunks`: their
// reuse then lives in L1), the next slice.
bool prefetch_fits(const TileFacts& f, const TilePlan& p, bool in_chunks) {
  const int64_t task_bytes = task_slice_bytes(f, p);
  const bool fits_l2 = in_chunks ? task_bytes <= host_l2_bytes() : 2 * task_bytes <= host_l2_bytes() * 3 / 4;
  return tasks_are_block_tiles(f, p) && output_pixels(f) <= (f.blocked ? kMaxPrefetchedPixels : kMaxPrefetchedRows) &&
         f.weight_bytes >= kMinPrefetchedWeightBytes && fits_l2;
}

// Reduction iterations inside the outermost reduction loop (one input block's: a 1x1 conv's 16
// lanes, a 3x3's 144).
int64_t inner_reduction(const TileFacts& f) {
  int64_t inner = 1;
  for (size_t i = 0; i + 1 < f.rvar_ext.size(); i++) inner *= f.rvar_ext[i];
  return inner;
}

constexpr int64_t kChunkChannels = 128;
constexpr int64_t kChunkWeightBytes = 48 * 1024;      // a core's L1d (48 KiB)
constexpr int64_t kMaxChunkedAccumulatorBytes = 512 * 1024;  // r stays well inside L2

// A prefetching task of a small image (up to kMaxChunkedPrefetchPixels) with a slice of
// kMinChunkedPrefetchSliceBytes or more, not a 1x1 conv, runs its rows inside chunks of one input
// block (plan_reduction_chunks): the chunk's weights (a 3x3's 18 KB for 2 output blocks) serve all
// rows from L1, where each row re-read the whole slice from L2 while the next task's slice was
// arriving there. In chunks, slices too large for two in L2 prefetch too. Smaller slices, wider
// images and chunks beyond L1 keep their order.
// A prefetching 1x1 conv of one column tile (7 or 8 wide) whose tile's weights exceed L1 can run
// in the chunks of kChunkChannels the multi-column ones take (below); the rule takes them on Intel
// only: elsewhere the prefetch alone ran faster (measured: docs/benchmarks.md, "The default rule").
constexpr int64_t kMaxChunkedPrefetchPixels = 8 * 8;
constexpr int64_t kMinChunkedPrefetchSliceBytes = 256 * 1024;
int64_t tile_weight_bytes(const TileFacts& f, const TilePlan& p) {
  return inner_reduction(f) * f.rvar_ext.back() * p.Vt * f.V * 4;
}
// The chunks (of the outermost reduction loop) a prefetching task can run its rows in, 0 for
// none; the rule takes them where prefetch_chunk says.
int prefetch_chunk_size(const TileFacts& f, const TilePlan& p) {
  if (output_pixels(f) > kMaxChunkedPrefetchPixels) return 0;
  if (inner_reduction(f) != f.V)
    return task_slice_bytes(f, p) >= kMinChunkedPrefetchSliceBytes && prefetch_fits(f, p, true) ? 1 : 0;
  const bool one_column_tile = p.outer.size() >= 2 && p.outer[1].kind == OuterKind::Columns && p.outer[1].extent == 1;
  return one_column_tile && tile_weight_bytes(f, p) > kChunkWeightBytes && prefetch_fits(f, p, false)
             ? static_cast<int>(kChunkChannels / f.V)
             : 0;
}
// The chunks the rule runs a prefetching task's rows in, 0 for none: a 1x1 conv's on Intel only.
int prefetch_chunk(const TileFacts& f, const TilePlan& p) {
  return inner_reduction(f) == f.V && !intel_host() ? 0 : prefetch_chunk_size(f, p);
}

// Tiles in chunks or streamed keep their own order, but for the chunks prefetch_chunk_size makes
// (the rule's or the chunk knob's).
bool prefetch_by_rule(const TileFacts& f, const TilePlan& p) {
  const bool own_order = p.k_block == 0 && p.streamed < 0;
  return (own_order && prefetch_fits(f, p, false)) || (p.k_block > 0 && p.k_block == prefetch_chunk_size(f, p));
}

// A blocked 1x1 conv (one input block's lanes inside its outermost reduction loop) whose tile's
// weights exceed L1 (512 or more input channels x 2 output blocks: 64 KB) runs its column tiles,
// and the task's other serial outer loops (its rows), inside chunks of kChunkChannels input
// channels of that loop, r holding the accumulators of all of them: a chunk's slice of the
// weights (16 KB) then serves every column of the task from L1, where each tile ran the whole
// reduction and re-read the tile's weights from L2 (MLAS's NCHWc pointwise kernel batches its
// input channels by 128 so). Tiles whose weights fit in L1 (256 input channels) and one-column
// tiles keep the plain order. Intel only: elsewhere L2's bandwidth serves the re-reads and the
// plain order ran faster (measured: docs/benchmarks.md, "The default rule").
bool chunks_columns_by_rule(const TileFacts& f, const TilePlan& p) {
  return intel_host() && inner_reduction(f) == f.V && tile_weight_bytes(f, p) > kChunkWeightBytes && p.outer.size() >= 2 &&
         p.outer[1].kind == OuterKind::Columns && p.outer[1].extent >= 2;
}
int chunk_by_rule(const TileFacts& f, const DefaultKnobs& k, const TilePlan& p) {
  const int64_t inner = inner_reduction(f);
  // Tiles the stream rule takes (hosts other than Intel's) keep to it.
  if (const int chunk = prefetch_chunk(f, p))
    return clamp_knob(k.prefetch, 1, 0, 1) && !clamp_knob(k.stream, streams_by_rule(f), 0, 1) ? chunk : 0;
  return chunks_columns_by_rule(f, p) ? static_cast<int>(kChunkChannels / inner) : 0;
}

// A blocked tile whose rows run outermost (rows_outermost_by_rule: its input exceeds L2) reads
// every output block's weights once per row. Where its column tiles run in chunks (above), its
// rows run in groups inside its block loop instead, as many as keep r's accumulators within
// kMaxChunkedAccumulatorBytes (all 28 rows of a 28-wide, 2-block tile: 100 KB): each chunk's
// slice of the weights then serves the group's rows from L1, and each block's weights come from
// L3 once per group instead of once per row (FCN-ResNet50's 1x1 convs at 28 x 28 re-read 4-8 MB
// of weights 28 times).
// The input, read once per block pair, streams in chunks of contiguous input-block planes.
// Tiles whose weights fit in L1 (no chunks) keep their rows outermost
// (measured: docs/benchmarks.md, "The default rule").
int row_group_by_rule(const TileFacts& f, const DefaultKnobs& k, const TilePlan& p) {
  if (!chunks_columns_by_rule(f, p) || (k.chunk && *k.chunk == 0)) return 0;
  const int64_t rows = p.outer.back().extent;
  for (int64_t group = rows; group >= 2; group--)
    if (rows % group == 0 && group * row_accumulator_bytes(f, p) <= kMaxChunkedAccumulatorBytes) return static_cast<int>(group);
  return 0;
}

bool plan_reduction_chunks(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  const int64_t reduction_outer = f.rvar_ext.back();
  const int chunk = clamp_knob(k.chunk, chunk_by_rule(f, k, p), 0, reduction_outer);
  if (chunk <= 0 || chunk >= reduction_outer || p.pair_blocks || f.u < 0) return false;
  const int serial = static_cast<int>(p.outer.size()) - p.fused;  // outer loops outside the parallel one
  if (serial < 2 || p.outer.size() < 3 || p.outer[0].extent != 1 || p.outer[1].kind != OuterKind::Columns ||
      p.unrolled_rvars >= static_cast<int>(f.rvar_ext.size()))
    return false;
  // The column tiles inside, then each further serial loop while r's accumulators stay small
  // (r is computed at the first loop outside them, which may be the parallel one).
  int64_t acc_bytes = row_accumulator_bytes(f, p);
  p.streamed = 1;
  while (p.streamed + 1 < serial && p.streamed + 2 < static_cast<int>(p.outer.size()) &&
         acc_bytes * p.outer[p.streamed + 1].extent <= kMaxChunkedAccumulatorBytes)
    acc_bytes *= p.outer[++p.streamed].extent;
  p.k_block = chunk;
  return true;
}

}  // namespace

// The rows of a rows-outermost blocked tile in groups inside its block loop (the row_group
// knob, else the rule above); the outermost loop keeps the groups.
void plan_row_groups(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  const OuterLoop rows = p.outer.back();
  if (!f.blocked || f.u < 0 || rows.kind != OuterKind::Pure || rows.extent < 2 || p.outer.size() < 3) return;
  const auto block_loop =
      std::find_if(p.outer.begin() + 1, p.outer.end() - 1, [&](const OuterLoop& l) { return is_block_loop(f, p, l); });
  if (block_loop == p.outer.end() - 1) return;
  const int group = clamp_knob(k.row_group, row_group_by_rule(f, k, p), 0, rows.extent);
  if (group < 2) return;
  p.outer.back().extent = (rows.extent + group - 1) / group;
  p.outer.insert(block_loop, {OuterKind::PureGroup, rows.dim, group});
}

// The rule never walks pages ahead (prefetch=2 is the knob's alone): measured in the network it
// pays on some workloads and costs on others of the same shape (task_prefetch.h).
void plan_task_prefetch(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  const int prefetch = tasks_are_block_tiles(f, p) ? clamp_knob(k.prefetch, prefetch_by_rule(f, p) ? 1 : 0, 0, 2) : 0;
  p.prefetch_next_task = prefetch > 0;
  p.walk_pages_ahead = prefetch == 2;
}

void plan_streaming(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  if (!f.blocked && f.rvar_ext.size() == 1 && f.rvar_ext[0] > 0) return plan_matmul_streaming(f, k, p);
  if (f.rvar_ext.size() < 2) return;
  if (f.blocked && plan_reduction_chunks(f, k, p)) return;
  size_t j = 0;
  while (j < p.outer.size() && p.outer[j].extent == 1) j++;
  if (!clamp_knob(k.stream, streams_by_rule(f), 0, 1)) return;
  const size_t serial = p.outer.size() - p.fused;
  if (j + 1 < p.outer.size() && j < serial && p.outer[j].kind == OuterKind::Pure) p.streamed = static_cast<int>(j);
}

// A tile whose output blocks give at least kMinBlockTasks tasks, one block tile each, and whose
// tasks would then prefetch the next one's slice (small images, large weights: below), stops
// fusing there rather than splitting its rows among tasks for kDefaultParallelTasks: each row
// task re-read its block's whole slice, unprefetched. Tiles whose tasks would not prefetch keep
// their rows fused (measured: docs/benchmarks.md, "The default rule").
constexpr int64_t kMinBlockTasks = 4;
void prefer_block_tasks(const TileFacts& f, TilePlan& p) {
  const int last = static_cast<int>(p.outer.size()) - 1;
  int lo = last;
  while (lo > 1 && p.outer[lo].extent == 1) lo--;
  const OuterLoop& l = p.outer[lo];
  if (!is_block_loop(f, p, l) || l.extent < kMinBlockTasks || l.extent >= p.tasks) return;
  TilePlan q = p;
  q.fused = last - lo + 1;
  q.tasks = l.extent;
  q.grain = 1;
  // As plan_task_prefetch will: in its own order, or in the chunks prefetch_chunk_size makes.
  if ((prefetch_fits(f, q, false) && !chunks_columns_by_rule(f, q)) || prefetch_chunk_size(f, q) > 0) p = q;
}

}  // namespace ts
