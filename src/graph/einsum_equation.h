#pragma once
// An Einsum equation ("bij,bjk->bik", "...ij,...jk", "ii->i") resolved against its operands'
// shapes: one label per axis and the extent of every label. Shared by import, which completes the
// output shape ONNX's inference leaves unknown (it infers only the rank), and by the lowering.
#include <map>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace ts {

struct EinsumEquation {
  using Labels = std::vector<int>;     // one per axis: letters by char code, ellipsis axes >= 256
  static constexpr int kEllipsis = 256;  // the ellipsis axis k from the right is kEllipsis + k
  std::vector<Labels> operands;          // labels of each operand's axes
  Labels output;                         // labels of the output's axes (implicit: "..." then single-use letters)
  std::map<int, int64_t> extent;         // extent of every label (an axis of 1 broadcasts)

  Shape output_shape() const;
  // Every label: the output's in order, then those summed over.
  Labels all_labels() const;
  // A label as the equation writes it ('b', or "..." for an ellipsis axis).
  static std::string label_name(int label);
};

// Parses `equation` for operands of `shapes`; throws Error prefixed with `where` on a malformed
// term, a label count that does not match a rank, or extents that disagree.
EinsumEquation parse_einsum(const std::string& equation, const std::vector<Shape>& shapes, const std::string& where);

}  // namespace ts
