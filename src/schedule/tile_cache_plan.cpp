#include "schedule/tile_cache_plan.h"

#include <algorithm>

namespace ts {

// Weights larger than L2 (ResNet's 3x3 convs of 512 channels: 9.4 MB, read once per inference
// from memory, since a network's 47 MB of weights evict each other from L3) arrive at the pace
// the first row of a tile consumes them: in a network ResNet-18's 7x7 convs ran at 155 GFLOP/s
// against 217 alone. So the rule moves the tile's first outer loop of more than one iteration
// (its rows) inside the reduction's outermost loop (blocks of input channels): each slice of the
// weights serves every row while it is in L1, the accumulators of all rows live in L1, and the
// next slice is prefetched (default_schedule.cpp). Pure loops only: a column loop would unroll.
// The rule streams where a slice holds kMinStreamedSlice reduction iterations or more: a 1x1
// conv's 16 (one input block) left the accumulators' loads and stores in L1 a tenth of the work,
// and ResNet-50's 1x1 convs of 4-8 MB ran 4-38% slower streamed.
// On an Intel Xeon (Emerald Rapids, 2 MiB L2, 260 MiB L3) every streamed direct conv measured
// ran slower than the plain loop order (bench_knob_sweep, weights evicted before each run, 1 / 2
// threads): ResNet-50's layer4 7-row 3x3 convs 1.5 / 2.2x (3.10 -> 1.96 ms, 2.31 -> 1.03),
// ResNet-18's and ResNet-50's stride-2 14x14 3x3 convs 1.41 / 1.35x and 1.35x, Inception-v3's
// 8x8 convs 1.75-1.91 / 2.0x, R3D-18's 14x14x2 3-D convs 1.95-2.73 / 2.71x. So the rule streams
// on other hosts only (Zen 5, where it was measured the gain).
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
// is beyond L2 and K is at least kMinStreamedK. Measured on the Transformer's 128-row matmuls
// (bench_knob_sweep, 1 thread, Zen 5): K = 2048 (B 4 MB) 2.01-2.12 -> 1.50 ms, with blocks of
// 128 or 256 alike; K = 512 ran 5-18% slower streamed (A's 256 KB stays in L2 unstreamed).
// A panel-packed B is contiguous per tile already: streamed, K = 2048 ran 1.55 ms against 1.42
// unstreamed with B evicted before each run (as in a network), 1.34 against 1.37 with B cached.
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
// per weight, a task computes 2 FLOP per output pixel, so at ~10 GB/s from memory against ~165
// GFLOP/s its first row waits (33 / pixels) of its compute (7 x 7: 67%, 14 x 14: 17%), less what
// the hardware prefetchers cover; and where this task's slice and the next one fit in L2 side
// by side (three quarters of it). Measured
// (bench_knob_sweep, 1 thread, weights evicted before each run, Intel Xeon with 2 MiB of L2), rule
// against prefetch=0 on all 46 convs of 12 zoo networks it picked before the L2 limit: 7 x 7 and
// 8 x 8 convs with 0.3-9 MB of weights 1.16-1.39x (ResNet-50's layer4 1.16-1.29x, 1.14-1.32x
// at 2 threads), 14 x 14 ones 1.05-1.30x, SqueezeNet's 13 x 13 classifier 1.05x; R3D-18's
// 512-channel 3x3x3 convs (1.77 MB slices: two evict each other and the rows' reuse) 0.72-0.77x
// and its 885 KB one 1.01x, which the L2 limit now leaves unprefetched.
//
// A plain matmul whose B is stored in panels (graph/layout_plan.h) runs one panel a task (its
// column tiles outermost): the same slices. Measured the same way, rule against prefetch=0, 1 / 2
// threads: the Transformer's four (128 rows, B of 1-4 MB) 1.17-1.19x / 1.14-1.22x (95-99% of
// peak at 1 thread); ConvNeXt-T's at 7 x 7 and 14 x 14 1.02-1.34x; ViT-B/16's with 197 rows
// 1.06-1.16x, so plain tiles prefetch up to kMaxPrefetchedRows; ConvNeXt-T's with 784 and 3136
// rows 0.99-1.02x.
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
constexpr int64_t kChunkWeightBytes = 48 * 1024;      // L1d of Zen 5 and of the Xeons measured
constexpr int64_t kMaxChunkedAccumulatorBytes = 512 * 1024;  // r stays well inside L2

// A prefetching task of a small image (7 x 7, 8 x 8) with a large slice, not a 1x1 conv, runs its
// rows inside chunks of one input block (plan_reduction_chunks): the chunk's weights (a 3x3's
// 18 KB for 2 output blocks) serve all rows from L1, where each row re-read the whole slice from
// L2 while the next task's slice was arriving there. Measured (bench_knob_sweep, weights evicted
// before each run, Intel Xeon with 2 MiB of L2, 5 rounds), chunks of one block with the prefetch
// against the prefetch alone, 1 / 2 threads: ResNet-50's and ResNet-18's 512-channel 3x3 convs at
// 7 x 7 (590 KB slices) 1.08-1.13x / 1.09-1.13x, ResNet-18's stride-2 256 -> 512 (295 KB)
// 1.01-1.04x / 1.03x, Inception-v3's 448 -> 384 at 8 x 8 (516 KB) 1.03-1.10x / 0.98x; chunks of
// 4 blocks (72 KB, beyond L1) 0.88-1.04x. Without the prefetch the chunks ran 0.81-0.89x. Slices
// of 147-221 KB (GoogLeNet's and Inception-v3's 3x3, 1x3 convs) 0.92-1.01x, 14 x 14 convs
// 0.60-0.88x (two column tiles a row), 1x1 convs at 7 x 7 0.89-1.07x: those keep their order.
// In chunks, slices too large for two in L2 prefetch too: R3D-18's layer4 3x3x3 convs (1.77 MB
// and 885 KB slices), chunks with the prefetch against the plain order, 1.21-1.47x (chunks alone
// 1.10-1.31x, the prefetch alone 0.67-1.06x).
// A prefetching 1x1 conv of one column tile (7 or 8 wide) whose tile's weights exceed L1 can run
// in the chunks of kChunkChannels the multi-column ones take (below); the rule takes them on
// Intel only. Chunks of 8 blocks with the prefetch against the prefetch alone (1 thread, 3-5
// rounds, noisy), Intel Xeon with 2 MiB of L2: ResNet-50's 512 -> 2048 1.13x, 1024 -> 2048
// stride 2 1.06-1.08x, 2048 -> 512 1.00-1.48x (1.08x at 2 threads), ResNeXt-50's,
// EfficientNet-B0's and MobileNetV2's with 960-2048 input channels 1.02-1.07x; MobileNetV2's
// 160 -> 960 (20 KB of tile weights, in L1) 0.90-0.92x, so it keeps its order. On Zen 5 (1 MiB
// of L2) the prefetch alone ran faster on 19 of 21 such convs of 9 networks at 1 thread and 18
// of 21 at 2 (bench_knob_sweep, weights cold, 5 rounds, chunk=0 against chunks of 8): ResNet-50's
// 1.02-1.03x / 0.99-1.08x, ResNeXt-50's 1.03-1.09x / 1.00-1.03x, Inception-v3's 8 x 8 ones
// 1.06-1.08x / 1.03-1.07x, DenseNet-121's, EfficientNet-B0's, MobileNetV2's and V3's
// 1.01-1.14x; GoogLeNet's 832 -> 384 0.96x / 1.05-1.07x (9 rounds; 2-thread runs bimodal).
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
// input channels by 128 so). Measured (bench_knob_sweep, 1 thread, weights cold, Intel Xeon,
// chunks of 8 blocks): ResNet-50's 28 x 28 512 -> 256 conv 1.41 -> 1.33 ms, its 14 x 14
// 1024 -> 256 1.05x, its stride-2 1024 -> 2048 1.07x, its 14 x 14 1024 -> 512 and 28 x 28
// 512 -> 128 1.00x; 256 input channels (weights in L1) 0.89-0.97x, so they keep the plain
// order; 3x3 convs (ResNet-18's stride-2 ones) and 7-wide ones (one column tile) 0.98-1.04x.
// Intel only: on Zen 5 (1 MiB L2, whose bandwidth serves the re-reads) the plain order measured
// faster on 24 of 30 such convs of 7 networks (bench_knob_sweep, weights cold, 3 rounds, chunk=0
// against the rule, 1 thread): ResNet-50's 1.02-1.14x, FCN-ResNet50's 0.98-1.11x,
// EfficientNet-B4's 1.07-1.09x, DenseNet-121's 1.01-1.04x, GoogLeNet's 0.97-1.09x,
// Inception-v3's 0.93-1.23x; at 2 threads 0.98-1.32x (5 rounds where 3 were noisy).
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
// Measured (bench_knob_sweep, weights cold, Intel Xeon with 2 MiB of L2), groups of all 28 rows
// against rows outermost, 1 / 2 threads: FCN-ResNet50's 1024 -> 2048 1.35 / 1.24x (114 -> 154
// GFLOP/s), 2048 -> 512 1.17 / 1.14x, 1024 -> 512 1.15 / 1.11x; groups of 4-14 rows 1.05-1.30x.
// ResNet-50's 256-channel 1x1 convs at 56 x 56 (tile weights in L1, no chunks) 0.96-1.00x: they
// keep their rows outermost.
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
// task re-read its block's whole slice, unprefetched. Measured (bench_knob_sweep, weights cold,
// Intel Xeon), one block pair a task against the rows fused in, 1 / 2 threads: Inception-v3's
// 8 x 8 convs of 6 block pairs (1x1 from 2048 and 1280 channels, 3x3 stride 2 from 17 x 17)
// 1.23-1.48x / 1.46-1.54x; EfficientNet-B0's, MobileNetV2's and DenseNet-121's 1x1 convs at
// 7 x 7 of 4-6 pairs (chunks of 8 blocks with the prefetch) 1.19-1.29x / 1.15-1.23x, GoogLeNet's
// 832 -> 160 1.25x / 0.71x (one noisy 2-thread sweep of a 0.05 ms workload); GoogLeNet's 7 x 7
// ones of 4 pairs with 0.1-0.2 MB of weights (no prefetch) 0.87-1.01x, which keep the rows, as
// do chunked 1x1 convs at 14 x 14 (no prefetch: within noise, 0.1 ms each).
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
