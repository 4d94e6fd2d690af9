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

// Evaluates `n` on host tensors. `inputs[i]` is null where input i is absent or not constant;
// `input_shapes[i]` is its static shape when known (Shape/Size need only that). Returns nullopt
// when the op is not one this evaluator folds or a needed input is not constant.
std::optional<std::vector<Tensor>> eval_constant_node(const Node& n, int opset,
                                                      const std::vector<const Tensor*>& inputs,
                                                      const std::vector<std::optional<Shape>>& input_shapes);

}  // namespace ts
