#pragma once
// Host evaluation of nodes whose inputs are all known, for constant folding of shape
// arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains in exported models) and
// of small constant subgraphs (Transpose of a weight, Cast of a constant).
#include <optional>
#include <vector>

#include "graph/graph.h"

namespace ts {

// Shape of numpy-style broadcasting of a and b; throws Error naming `where` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where);

// Normalizes a possibly negative axis against `rank`; throws naming the node when out of range.
int64_t normalize_axis(int64_t axis, int64_t rank, const Node& n);

// The elements a Slice node `n` selects from an input of shape `in`: ONNX's starts / ends / axes /
// steps (axes and steps may be empty) with the spec's clamping. Throws Error naming the node on a
// step of 0 or lists of different lengths. Shared by constant folding, lowering and the runtime's
// views (a slice that is one contiguous run of its input).
struct SliceWindow {
  std::vector<int64_t> begin;  // per input axis: the first index taken (0 where not sliced)
  std::vector<int64_t> step;   // per input axis: the step (1 where not sliced)
  Shape shape;                 // the output shape
};
SliceWindow slice_window(const Node& n, const Shape& in, const std::vector<int64_t>& starts,
                         const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps);

// Evaluates `n` on host tensors. `inputs[i]` is null where input i is absent or not constant;
// `input_shapes[i]` is its static shape when known (Shape/Size need only that). Returns nullopt
// when the op is not one this evaluator folds or a needed input is not constant.
std::optional<std::vector<Tensor>> eval_constant_node(const Node& n, int opset,
                                                      const std::vector<const Tensor*>& inputs,
                                                      const std::vector<std::optional<Shape>>& input_shapes);

}  // namespace ts
