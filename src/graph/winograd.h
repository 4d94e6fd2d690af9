#pragma once
// Winograd convolution F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural
// Networks", 2016): a stride-1 3x3 conv computes each 4x4 output tile from a 6x6 input tile as
//   Y = AT [ (G g GT) .* (BT d B) ] A,
// summed over input channels, so the 36 element-wise products become 36 independent matmuls
// (tiles x Cin by Cin x Cout) with 2.25 multiplies per output and input channel instead of 9.
// It runs faster than the direct NCHW16c micro-kernel (ONNX Runtime's MLAS computes these convs
// directly) on 56x56, 28x28 and 14x14 layers and slower on 7x7 ones (too few tiles to reuse the
// 4x larger transformed weights): the plan below picks where it pays.
//
// The plan (plan_winograd) marks such a Conv with the attribute kWinogradAttr = 4 (the output
// tile) and replaces its weight by the transformed one, computed once at load:
//   U[co][i][j][ci] = (G w[co][ci] GT)[i][j],  shape [Cout, 6, 6, Cin], stored with Cout blocked
// by the output's block (layout {0, b}): the matmul of position (i, j) streams one contiguous
// [Cin][b] slab per output-channel block, and an output block's 36 slabs lie together, so a task
// of whole blocks (the weights-once schedule) streams one contiguous run, which the hardware
// prefetchers follow; position-major ([6, 6, Cout, Cin], 36 runs a task) ran slower in the
// network, with or without software prefetches of the next task's run. A 3-D conv's U is
// [Cout, KD, 6, 6, Cin] (each temporal tap's, an output block's taps together). lower/ computes
// BT d B and AT M A.
#include <cstdint>

#include "graph/graph.h"

namespace ts {

inline constexpr const char* kWinogradAttr = "ts_winograd";  // Conv attribute: output tile edge (4)
inline constexpr int kWinogradTile = 4;                      // m in F(m x m, 3 x 3)
inline constexpr int kWinogradAlpha = 6;                     // input tile edge m + 3 - 1
inline constexpr int64_t kWinogradMinTiles = 16;             // fewer output tiles: the direct conv is faster
// A dilated conv is marked only where its tiles multiply no more than the direct conv's taps
// that read the input do. Dilation d splits the outputs into d interleaved
// grids, each tiled on its own: with d = 24 over 33 outputs a grid holds 1-2 outputs, its 4x4
// tiles are mostly empty, and the 576 tiles multiplied 8x the direct conv's work (DeepLabV3's
// ASPP conv at 2.3% of the FMA peak, the network 0.30x ONNX Runtime). An undilated 3x3 conv's
// tiles multiply 0.25x; dilation 2 over 13 x 11 outputs 0.57x, dilation 4 over 20 x 20 0.85x. The
// bound is not a measured crossover: it keeps those and refuses grids of one or two outputs.
inline constexpr double kWinogradMostDilatedWork = 1.0;
// Where the transformed weights stream from (winograd_weights_once; schedule/winograd_schedule.cpp):
//  - once per tile row: a task computes the tiles of 4 output rows, transforming their input
//    itself, with every output-channel block; the weights are re-read per row, from L2 or L3;
//  - once: tasks over output-channel blocks each compute every tile, reading the whole input
//    transform, computed first by all cores.
// Per row is the rule up to kWinogradWeightsOnceBytes (the weights stay in L2). Beyond it, per
// row still, unless the conv has at most kWinogradOnceMostTiles tiles (little work per row to
// hide re-reading the weights) or more than kWinogradRowMostWeightBytes of weights (re-read per
// row from L3). Tasks over blocks scale poorly on 2 threads where the shared input transform is
// large (measured: docs/benchmarks.md, "The default rule").
// A dilated conv is marked only where its weights stream once: with dilation d, 4 output rows
// lie in 4 interleaved tile rows, and a per-row task would compute all of them.
inline constexpr int64_t kWinogradWeightsOnceBytes = int64_t{1} << 20;
inline constexpr int64_t kWinogradOnceMostTiles = 64;
inline constexpr int64_t kWinogradRowMostWeightBytes = int64_t{6} << 20;

// Whether the rule streams a Winograd conv's transformed weights once (see above), for
// `weight_bytes` of them and `tiles` output tiles.
inline bool winograd_weights_once(int64_t weight_bytes, int64_t tiles) {
  return weight_bytes > kWinogradWeightsOnceBytes &&
         (tiles <= kWinogradOnceMostTiles || weight_bytes > kWinogradRowMostWeightBytes);
}

// Winograd's transformed weights hold 36 floats per channel pair, 4x the direct conv's 9, and in
// a network (whose weights exceed the L3) they stream from memory once per run; the direct conv
// is compute-bound. So Winograd pays only while streaming its weights takes less than the direct
// conv computes on `threads` cores:
//   144 Cin Cout / B  <  18 H W Cin Cout / (threads R)   <=>   H W > 8 threads R / B,
// with B the rate at which the Winograd product streams its weights and R the direct conv's
// rate per core, both measured in the network on ResNet-50's 14x14x256 conv
// (measured: docs/benchmarks.md, "The default rule"). On 1 thread every conv with
// kWinogradMinTiles tiles passes; on 2 the 14x14 convs run directly.
inline constexpr double kWinogradWeightStreamBytesPerSecond = 12.4e9;
inline constexpr double kDirectConvFlopsPerCore = 193e9;

// The transforms with interpolation points 0, +-1, +-2 and infinity.
extern const float kWinogradBT[kWinogradAlpha][kWinogradAlpha];  // input:  V = BT d B
extern const float kWinogradG[kWinogradAlpha][3];                // weight: U = G g GT
extern const float kWinogradAT[kWinogradTile][kWinogradAlpha];   // output: Y = AT M A

// Bytes of the transformed float32 weights of a [cout, cin, 3, 3] conv (36 floats a channel pair),
// or of a [cout, cin, taps, 3, 3] one with `taps` temporal taps.
inline int64_t winograd_weight_bytes(int64_t cout, int64_t cin, int64_t taps = 1) {
  return int64_t{kWinogradAlpha} * kWinogradAlpha * cout * cin * taps * 4;
}

// Output tiles along an axis of `out` outputs and dilation d: d interleaved grids of outputs
// (r, r + d, ...), each in tiles of kWinogradTile.
int64_t winograd_tiles(int64_t out, int64_t d);

// Whether node n is a Conv the plan marked (its weight is then the transformed one).
bool is_winograd_conv(const Node& n);

// U (see above) of a [Cout, Cin, 3, 3] float32 weight, accumulated in double: [Cout, 6, 6, Cin];
// of a [Cout, Cin, KD, 3, 3] one, each temporal tap's: [Cout, KD, 6, 6, Cin].
Tensor winograd_weights(const Tensor& w);

// Marks every Conv of g that runs faster as Winograd: float32 [Cout, Cin, 3, 3] constant weight,
// group 1, unit strides, any dilation (dilated: weights streamed once, see above), explicit pads of at
// most 2 x the dilation, 4-D input and output both channel-blocked
// (plan_layouts ran), at least kWinogradMinTiles output tiles, and enough output pixels that its
// weights stream faster than the direct conv computes on `threads` cores (see above). Returns
// how many it marked. Idempotent: a marked conv is left alone.
// A 3-D conv [Cout, Cin, KD, 3, 3] (R3D's 3x3x3, R(2+1)D's 1x3x3) qualifies the same way with unit
// dilations and temporal pads below KD: each output frame sums KD frames' 2-D Winograd convs, so
// the frames' input transforms are shared by the KD taps and the products reduce over KD x Cin
// (lower/winograd_conv.cpp); its pixels and tiles count every frame.
int plan_winograd(Graph& g, int threads);

}  // namespace ts
