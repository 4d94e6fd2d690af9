#pragma once
// Blocked layouts of workload inputs (NCHW[x]c-style packing), chosen by a schedule and applied
// once when a model is loaded. A conv whose accumulator is vectorized over output channels reads
// its weight [O, I, KH, KW] with stride I*KH*KW along the vector: a gather per vector. Packed as
// [O/16, I, KH, KW, 16] the same read is one dense vector load. The packing is a calling
// convention of the compiled code: its ImageParam takes the packed tensor, and whoever calls it
// (CompiledModel at load for constant weights, the Measurer before its timed runs) packs first.
//
// Dimensions are Halide's (0 = innermost = the last ONNX axis). Blocking dim d by b: the packed
// buffer has Halide dims [b, dims 0..r-1 with dim d's extent divided by b], i.e. ONNX shape
// [..., shape[a] / b, ..., b] with a = r-1-d, and
//   packed(i mod b, x0, ..., x_d / b, ..., x_{r-1}) = original(x0, ..., x_d = i, ..., x_{r-1}).
#include <Halide.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace ts {

struct InputLayout {
  std::string input;  // the pipeline input (ImageParam; a workload graph input such as "in1")
  int dim = 0;        // Halide dimension blocked (0 = innermost)
  int64_t block = 0;  // its inner block, moved innermost: >= 2, divides the dim's extent
  bool operator==(const InputLayout&) const = default;
  bool operator<(const InputLayout& o) const { return input < o.input; }
};

// Why `l` cannot pack a tensor of `shape` (ONNX order), or "" when it can.
std::string layout_error(const InputLayout& l, const Shape& shape);
// The packed tensor's shape (ONNX order). Throws Error naming the input when layout_error().
Shape packed_shape(const InputLayout& l, const Shape& shape);
// t packed by l (any dtype). Throws Error naming the input when layout_error().
Tensor pack_tensor(const InputLayout& l, const Tensor& t);
// The same into `dst`, which has the packed shape and t's dtype (its storage is kept: buffers
// viewing it stay valid).
void pack_into(const InputLayout& l, const Tensor& t, Tensor& dst);
// The layout of `input` in `layouts`, null when it keeps its own.
const InputLayout* find_layout(const std::vector<InputLayout>& layouts, const std::string& input);
// One line: "in1: dim 3 blocked by 16".
std::string describe(const InputLayout& l);

// The element at Halide coordinates `x` of the original input, read from `packed` (an input of
// rank x.size() + 1 laid out by l).
Halide::Expr packed_access(const InputLayout& l, const Halide::ImageParam& packed, const std::vector<Halide::Expr>& x);

}  // namespace ts
