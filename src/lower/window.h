#pragma once
// Sliding-window geometry shared by convolutions and pooling.
#include <fmt/format.h>

#include "lower/lower.h"

namespace ts {

// Python-style floor division (ConvTranspose splits negative total padding this way, as the
// ONNX reference does) and the matching ceiling division.
inline int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Per-spatial-dim window geometry, in ONNX spatial order.
struct Geometry {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end;
  // Input extent one window covers.
  int64_t span(size_t i) const { return (kernel[i] - 1) * dilation[i] + 1; }
};

// Integer-list attribute with n values (default `def` each), each at least `min`.
inline std::vector<int64_t> attr_dims(const LowerContext& c, const char* attr, size_t n, int64_t def, int64_t min) {
  auto v = c.node.attr_ints(attr, std::vector<int64_t>(n, def));
  if (v.size() != n) c.fail(fmt::format("{} has {} values, expected {}", attr, v.size(), n));
  for (int64_t x : v)
    if (x < min) c.fail(fmt::format("{} value {} is below {}", attr, x, min));
  return v;
}

// A Conv graph/winograd.h marked, as F(4x4, 3x3) Winograd stages (winograd_conv.cpp).
std::vector<LTensor> lower_winograd_conv(const LowerContext& c);

}  // namespace ts
