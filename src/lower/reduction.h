#pragma once
// Reduction over a subset of a tensor's axes: the shared piece behind Reduce*, Softmax,
// LayerNormalization, InstanceNormalization and ArgMax. The result is one Halide stage with a
// pure init and one update over an RDom of the reduced extents, so the schedule space sees a
// plain reduction loop nest.
#include <set>

#include "lower/lower.h"

namespace ts {

using Idx = std::vector<Halide::Expr>;

struct ReduceSpec {
  Shape in_shape;                 // shape being reduced
  std::set<int> axes;             // axes reduced (normalized, non-empty)
  bool keepdims = true;           // reduced axes stay as extent 1
  DType acc_type = DType::Float32;
};

// Shape of the result of `spec`.
Shape reduced_shape(const ReduceSpec& spec);

// name(out) = init; name(out) = combine(name(out), value(in_idx)) over every in_idx that maps to
// out. `value` receives full input indices (RDom variables on reduced axes).
LTensor reduce_tensor(const std::string& name, const ReduceSpec& spec, Halide::Expr init,
                      const std::function<Halide::Expr(Halide::Expr acc, Halide::Expr v)>& combine,
                      const std::function<Halide::Expr(const Idx& in_idx)>& value);

// reduce_tensor over the last axis alone (keepdims), in two stages when that axis holds at least
// 2 x kReduceLanes elements: kReduceLanes partial results, lane l over elements l, l + 16, ...
// (dense vector loads along the row; lanes past the row's end add `init`, which must be the
// identity of `combine`), then the lanes combined. In one stage a reduction along a row's own
// contiguous elements is a scalar loop: the schedules vectorize the output's innermost axis, of
// extent 1 here (ViT's 197-wide attention rows). Other specs: reduce_tensor.
inline constexpr int64_t kReduceLanes = 16;
LTensor reduce_last_axis(const std::string& name, const ReduceSpec& spec, Halide::Expr init,
                         const std::function<Halide::Expr(Halide::Expr acc, Halide::Expr v)>& combine,
                         const std::function<Halide::Expr(const Idx& in_idx)>& value);

// Reads a keepdims=true reduction result at the input index `in_idx` (reduced axes -> 0).
Halide::Expr read_reduced(const LTensor& reduced, const Idx& in_idx, const std::set<int>& axes);

// Number of input elements folded into each output element.
int64_t reduction_size(const ReduceSpec& spec);

}  // namespace ts
