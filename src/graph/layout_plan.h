#pragma once
// The layout plan: which tensors of a model travel between workloads channel-blocked
// (NCW[x]c, NCHW[x]c, NCDHW[x]c), what ONNX Runtime's NCHWc transformer and TVM's AlterOpLayout do.
// A blocked activation lets a conv read a block of input channels and write a vector of output
// channels with dense loads and stores, and lets the pools and elementwise ops between convs
// work block by block, with no transposes at workload boundaries.
//
// Rule (per activation tensor t): t is blocked by `block` (or by half of it when only that
// divides C: 24 or 40 channels with 16 lanes) when it is float32 of rank 3 to 5 (N, C,
// spatial...), it is neither a graph input, a graph output nor
// a constant, and both its producer and every consumer work on blocked tensors without
// conversion: Conv (any group as producer; as consumer group 1, depthwise, or groups of whole
// input and output blocks), MaxPool,
// AveragePool, the global pools, BatchNormalization, Concat over channels, Pad of spatial dims
// only and the fusable elementwise ops (same-shaped operands). Everything else (Reshape, Flatten, Transpose,
// Softmax, Gemm, ...) reads and writes plain tensors (except a one-pixel [N, C, 1, 1] tensor,
// which any consumer may read blocked: converting C values costs nothing); where a plain consumer reads a blocked
// tensor its workload converts on the fly (lower/ reads logical indices through the layout).
// An elementwise op whose output would be blocked while a same-shaped operand stays plain
// would gather that operand: its output stays plain too (repeated to a fixed point).
// The weight of a Conv with a blocked output is packed OIHW[x]o ({axis 0, block}) once at load
// when it is a constant read only by such convs. The model's inputs and outputs keep their
// declared layouts.
//
// Graph inputs and outputs at convs: a graph input whose channels fill whole vectors and that a
// conv (group 1 or depthwise) reads, or such a graph output that a conv computes (directly or
// through elementwise ops), gets a blocked twin and an Identity step converting between the two
// (ONNX Runtime's ReorderInput / ReorderOutput): the conv then runs blocked. Other readers of an
// output read its twin; a twin the rule leaves plain is removed again. Only where the conversion
// pays (kMinReductionToConvert, kMinConvFlopsPerConvertedValue below).
//
// Grouped convs narrower than a block: a Conv with a constant weight whose groups hold fewer input
// channels than a block (C_in / group = 4 or 8 with 16 lanes) is widened first: f = block /
// (C_in / group) neighbouring groups become one (f at most kMaxGroupWidening), the weight [C_out,
// block, k...] zero outside each original group. It then reads whole blocks; the f-fold multiplies
// cost less than a gather per vector (ResNeXt-50 32x4d's grouped convs).
//
// Channels padded to a block: a Conv (group 1) whose output channels do not block (R(2+1)D's 230,
// 460, 921) gets zero filters (and zero biases) up to the next whole block when the padding is
// at most 1 / kMaxChannelPadding of its channels and only unary ops that keep zeros finite (ReLU,
// Clip, ...) lead to group-1 Convs, whose weights get zero input channels: the tensors between
// are then blocked like any other (plain, such a conv ran far below the blocked kernel's rate).
//
// Convs that run slowly plain: a Conv (group 1, constant weight) whose output the rule leaves
// plain (channels that do not block, a reader that reads plain only: Reshape, a graph output)
// with a reduction of at least kMinReductionToConvert and kMinConvertedConvFlops, whose rows are
// narrow or which reads an activation with kMinConvFlopsPerConvertedValue FLOPs per output value
// (as convert_outputs_at_convs decides at a graph output), writes a blocked twin instead, its channels padded with zero filters to
// whole blocks (half blocks where those pad far fewer), and a conversion step writes the plain
// tensor: an Identity, or a Slice of the real channels (marked kUnpadAttr, the only Slice that
// reads a blocked tensor). Plain, such a conv vectorizes along rows of 1-3 outputs: a 5x1 conv
// over 246 channels of a 21 x 5 map ran at 3.4 GFLOP/s with 73 channels, 72 with 80 blocked;
// with wide rows, plain, it gathers its blocked input per vector (a 3x3 conv of 64 -> 128
// channels over 80 x 80 read by a Reshape: 36 GFLOP/s plain, 277 blocked).
//
// Matmul panels: the constant B of a MatMul or Gemm of more than 4 rows whose N is a multiple of
// the panel width (two vectors: a register tile's columns) is stored transposed, [N, K], with N
// blocked by the panel ({axis 0, panel}), i.e. [N / panel][K][panel]: a tile of panel columns
// streams one contiguous K x panel slab of B, as ONNX Runtime's MLAS prepacks it. Plain [K, N]
// rows lie N floats apart, and in a network, where the weights come from memory, they were
// fetched row by row. A Gemm then reads B with transB = 1; a MatMul is marked with kTransposedBAttr.
#include <cstdint>

#include "graph/graph.h"

namespace ts {

struct LayoutPlanStats {
  int blocked_activations = 0;  // activation tensors stored channel-blocked
  int packed_weights = 0;       // conv weights packed by output-channel block
  int matmul_panels = 0;        // matmul / gemm weights stored as panels (see above)
  int widened_groups = 0;       // grouped convs widened to whole channel blocks (see above)
  int padded_channels = 0;      // conv outputs padded to whole channel blocks (see above)
  int io_conversions = 0;       // graph inputs / outputs converted to / from blocked twins (see above)
  int slow_plain_convs = 0;     // convs that write a blocked twin rather than run plain (see above)
};

inline constexpr int64_t kMaxGroupWidening = 4;   // most groups merged into one (multiplies x this)
inline constexpr int64_t kMaxChannelPadding = 8;  // channels padded: at most 1 / this of them
// Which graph inputs and outputs pay for a conversion: those of convs that run slowly plain,
// with output rows narrower than two vectors (plain, a conv vectorizes along rows) or a
// reduction (input channels per group x kernel taps) of at least kMinReductionToConvert, and
// outputs of convs with narrow rows or that read an activation (a converted input's twin
// included) with at least kMinConvFlopsPerConvertedValue FLOPs per output value. Short
// reductions over wide rows and convs of plain graph inputs (3 channels: ResNet's stem) run
// plain, where the conversion costs more than it saves
// (measured: docs/benchmarks.md, "The default rule").
inline constexpr int64_t kMinReductionToConvert = 64;
inline constexpr double kMinConvFlopsPerConvertedValue = 48;
inline constexpr int64_t kMinConvertedConvFlops = int64_t{1} << 20;  // a conversion step costs a launch
inline constexpr const char* kUnpadAttr = "ts_unpad";  // Slice attribute: 1 = drops a blocked twin's padded channels
inline constexpr const char* kTransposedBAttr = "ts_transposed_b";  // MatMul attribute: 1 = B is stored [N, K]

// Sets TensorInfo::layout of g's tensors by the rule above (block >= 2: the vector lanes of a
// float32 register, 16 for AVX-512; matmul panels are 2 x block wide). Idempotent; plain
// layouts are reset first.
LayoutPlanStats plan_layouts(Graph& g, int64_t block);

}  // namespace ts
