#pragma once
// Graph passes that run after import, each in place and idempotent.
#include "graph/graph.h"

namespace ts {

// Folds every node whose inputs are all constant (see const_eval.h); returns nodes removed.
int fold_constants(Graph& g);
// Whether Dropout n computes the identity: inference mode, or training with a ratio of 0.
bool dropout_is_identity(const Graph& g, const Node& n);
// Removes Identity and Dropout that is the identity by rewiring their consumers; returns nodes
// removed.
int remove_identity_ops(Graph& g);
// Folds BatchNormalization into the Conv that feeds it when the Conv has no other consumer and
// both have constant parameters; other BatchNormalizations stay as their own op. Returns folds.
int fold_batchnorm_into_conv(Graph& g);
// A Conv (constant weights) whose kernel has taps that read only padding, for every output (a
// dilation wider than the map, a 7x7 kernel over a 1-wide map, a stride that skips the input),
// is cut to the taps that read the input: kernel, weights and pads shrink, the output stays.
// A tap cut to one needs no dilation. Such taps otherwise ran every MAC on zeros (a 3x3 conv of
// dilation 24 over a 14 x 14 map computes 9 taps of which 1 reads the map). Returns the convs cut.
int drop_padding_taps(Graph& g);
// The share of Conv n's (output position, kernel tap) pairs whose tap reads the input rather than
// its padding: the multiply-adds that do work. 1 for other ops and for convs it cannot read.
double conv_tap_read_fraction(const Graph& g, const Node& n);
// A strided ConvTranspose (one group, constant weights and bias, pads that only cut) becomes one
// Conv per output phase (graph/conv_transpose_phases.cpp): a stride-1 Conv of Cout x S output
// channels (S = the product of the strides) whose ceil(K / s) taps per axis are the kernel's taps
// of that phase, flipped; Reshape, Transpose and Reshape interleave the phases (one copy step)
// and a Slice drops the pads. Lowered directly it was a correlation over the input stuffed with
// zeros, S times the multiply-adds, most of them on zeros. A stride-1 ConvTranspose (any groups)
// whose pads do not crop becomes a Conv with the kernel flipped, which the conv rules tile
// (lowered as itself it ran at 20% of the peak). Returns the rewrites.
int transposed_convs_to_phases(Graph& g);
// Gemm with transB = 1 and a constant B over more than 4 rows of A: B is transposed once here
// and transB cleared, so the product reads B's rows along the output columns (dense vectors)
// instead of gathering a column per vector. Returns the Gemms rewritten.
int pretranspose_gemm_weights(Graph& g);
// A conv that cuts an image (at most 4 channels) into disjoint patches (kernel = strides, no
// padding or dilation, one group, C * kh * kw >= 256: ViT's 16 x 16 patch embedding) becomes a
// matmul of the patches as rows, [N * Ho * Wo, C * kh * kw], by the weights as B: Reshape,
// Transpose and Reshape gather the rows (one copy step, graph/partition.cpp), MatMul and Add
// the bias, Reshape and Transpose return [N, Cout, Ho, Wo]. As a conv its few input channels
// left it a plain conv vectorized along 14 output columns that read the input 16 apart. Returns
// the convs rewritten.
int patches_to_matmul(Graph& g);
// The layer norm that exporters before opset 17 spell out (PyTorch's F.layer_norm):
//   m = ReduceMean(x, A); d = x - m; v = ReduceMean(Pow(d, 2), A);
//   y = d / Sqrt(v + eps) [* gamma] [+ beta]
// with A the last axes of x, keepdims, and eps, gamma and beta constant, becomes one
// LayerNormalization(x, gamma, beta, axis = rank - |A|, epsilon = eps) when the intermediate
// tensors feed nothing else. Otherwise its 5 workloads each pass the tensor through memory, and
// on 2 threads each serial step that reads what the other core wrote waits for the transfer
// between the cores. Returns fusions.
int fuse_layer_norm(Graph& g);
// GELU as PyTorch exports it before opset 20 (nn.GELU()):
//   y = (x * (Erf(x / sqrt(2)) + 1)) * 0.5   (the Add's and Muls' operands in either order)
// becomes one Gelu node (ONNX opset 20, approximate = "none") when the intermediate tensors feed
// nothing else. Spelled out, x feeds two of the nodes, so the chain could not fuse into the
// MatMul before it and ran as its own workload, through memory (ConvNeXt-T, ViT). Returns fusions.
int fuse_gelu(Graph& g);
// MatMul of A [d0, ..., K] (rank > 2, more than one batch of rows) by a constant 2-D B [K, N] is
// one [M, K] x [K, N] product, M the product of A's leading dims, as ONNX Runtime computes it.
// Lowered as numpy's batched matmul, the leading dims were batches of a few rows each: ConvNeXt-T's
// channels-last [1, 14, 14, 384] activations ran 14-row matmuls that re-read the 2.4 MB B from
// L3 for every batch. The pass widens the region to the row-wise ops around
// the MatMul (LayerNormalization over the last axis, elementwise ops with one-row constants,
// further MatMuls by constant 2-D Bs), runs it on [M, C] tensors and puts a Reshape at each end:
// only where both ends meet a data-movement op (a Transpose), whose copy the Reshape joins
// (graph/partition.cpp), so no copy is added. Returns the regions rewritten.
int flatten_matmul_rows(Graph& g);
// ReduceMean over every spatial axis of a float [N, C, spatial...] tensor (x.mean([2, 3]) in
// PyTorch: MNASNet, ShuffleNetV2) becomes GlobalAveragePool, followed by Flatten when keepdims is
// 0: the same sums, but a pool reads channel-blocked tensors, so the conv before it can write a
// blocked layout (a plain 1x1 conv over 7x7 pixels vectorizes along its 7-wide rows). Returns
// rewrites.
int reduce_mean_to_global_pool(Graph& g);
// Whether `name` is one of g's outputs.
bool is_graph_output(const Graph& g, const std::string& name);
// A Reshape node of `from` to `to` (shape `s`); its shape constant and `to`'s info are added to
// g (the caller inserts the node).
Node reshape_node(Graph& g, const std::string& from, const std::string& to, const Shape& s);
// A Transpose node of `from` to `to` by `perm`; `to`'s info is added to g.
Node transpose_node(Graph& g, const std::string& from, const std::string& to, std::vector<int64_t> perm);
// A Slice node of `from` to `to` along `axes` (bounds as attributes before opset 10, constant
// inputs from it; `steps` empty: 1, and needs opset 10); `to`'s info is added to g.
Node slice_node(Graph& g, const std::string& from, const std::string& to, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, const std::vector<int64_t>& axes, const std::vector<int64_t>& steps = {});
// Removes nodes whose outputs nothing reads; returns nodes removed.
int remove_dead_nodes(Graph& g);

// All of the above in order (fuse_layer_norm before reduce_mean_to_global_pool, which would
// otherwise take its ReduceMeans).
void run_default_passes(Graph& g);

}  // namespace ts
