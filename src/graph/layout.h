#pragma once
// Storage layouts of tensors. A tensor is plain (row-major in its ONNX dims) or has one axis
// blocked: that axis split into (extent / block, block) with the block moved innermost. NCHW16c
// is {axis 1, block 16}; a conv weight packed OIHW16o is {axis 0, block 16}. In ONNX order:
//   blocked[i_0, ..., i_a / b, ..., i_{r-1}, i_a mod b] = plain[i_0, ..., i_a, ..., i_{r-1}].
// The layout plan (layout_plan.h) chooses one per model tensor; workloads, their keys and their
// compiled code follow it; schedules may also pack a workload input (schedule/input_layout.h)
// with the same packing.
#include <cstdint>
#include <string>

#include "graph/tensor.h"

namespace ts {

struct Layout {
  int axis = -1;       // the blocked axis in ONNX order; -1 = plain
  int64_t block = 0;   // the inner block (>= 2, divides the axis's extent); 0 when plain

  bool blocked() const { return axis >= 0; }
  bool operator==(const Layout&) const = default;
};

// Why `l` cannot lay out a tensor of `shape`, or "" when it can (plain always can).
std::string layout_error(const Layout& l, const Shape& shape);
// The shape of the stored tensor: `shape` itself when plain, else with axis a divided by the
// block and the block appended. Throws Error when layout_error().
Shape storage_shape(const Layout& l, const Shape& shape);
// Short text for keys and messages: "" when plain, else e.g. "@1c16" (axis 1 blocked by 16).
std::string layout_suffix(const Layout& l);

// `plain` (logical shape) stored in layout l into `dst` (storage shape, same dtype; its storage
// is kept, so buffers viewing it stay valid). Throws Error naming `what` on a mismatch.
void pack_into(const Layout& l, const Tensor& plain, Tensor& dst, const std::string& what);
Tensor pack(const Layout& l, const Tensor& plain, const std::string& what);
// The inverse: `stored` (storage shape) back to the logical shape `shape`.
Tensor unpack(const Layout& l, const Tensor& stored, const Shape& shape, const std::string& what);

}  // namespace ts
