#pragma once
// Pointwise convs over flattened pixels: a plain 1x1 conv is a matmul of its weights by the
// input's [C, H * W] pixels, which NCHW stores as one dense row per channel. Lowered as a 2-D conv
// its vectors run along one image row of W pixels: ShuffleNetV2's 14- and 28-wide rows (116 and
// 58 channels, which do not block) got 8-lane or single vectors; over [N, C, H * W] the same conv
// tiles 2 x 16 pixels by 8 output channels (ONNX Runtime computes a 1x1 conv as such a GEMM too).
//
// Rule: a Conv whose output is a plain rank-4 float tensor (after the layout plan), with a
// constant weight, a 1x1 kernel, unit strides, no padding, H > 1 and a single group
// becomes Reshape [N, C, H * W] -> Conv (1-D, kernel 1) -> Reshape [N, C_out, H, W]; the
// elementwise ops that follow it on the same shape with scalar constants as other operands (ReLU,
// Clip, ...) move inside, so they still fuse into the conv's workload. The Reshapes of plain
// tensors cost nothing at run time: the executor views the same bytes (runtime/compiled_model.cpp)
// or the Reshape joins a copy that runs anyway (graph/partition.cpp).
//
// A blocked input (a pool's or a depthwise conv's output that other convs read blocked) is first
// converted by an Identity, a copy step (a Reshape straight from blocked to pixels divided each
// lane's index by the row width): read blocked while the vectors run along plain output pixels,
// every vector was a gather (ShuffleNetV2's 24 -> 58 convs after its max pool). The copy costs a
// pass over the input, the gathers one per tile of output channels: with fewer than
// kMinChannelsToConvert outputs (FCN's 512 -> 21 classifier) the conv reads the blocked input as
// before (measured: docs/benchmarks.md, "The default rule").
//
// Convs one column wide: a plain conv whose output is one column wide with no padding along the
// width (a 1-D conv exported as [N, C, T, 1] with a [k, 1] kernel, or one whose kernel spans its
// input's width) ran its vectors along that one column: one lane of 16 did the work (3 GFLOP/s).
// It becomes a 1-D conv over H in the same way: the columns its taps read are sliced out where
// they are not all of them, and more than one fold into the input channels (Transpose to
// [N, C, kw, H], Reshape to [N, C * kw, H]), so its vectors run along H.
#include <cstdint>

#include "graph/graph.h"

namespace ts {

inline constexpr int64_t kMinChannelsToConvert = 32;  // output channels for which a blocked input is converted

// Whether n is a 2-D Conv with a 1x1 kernel, unit strides, no padding and one group (any layout).
bool is_pointwise_conv(const Graph& g, const Node& n);
// Applies both rules above to g in place; returns the convs rewritten. Idempotent (a rewritten
// conv is rank 3).
int flatten_plain_convs(Graph& g);

}  // namespace ts
