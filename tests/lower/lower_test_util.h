#pragma once
// One-node ONNX models run through import -> lowering -> Halide JIT, for lowering tests.
#include <gtest/gtest.h>

#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"

namespace ts::test {

// Expects got == want within rtol/atol, printing the first mismatch.
inline void expect_close(const Tensor& got, const Tensor& want, double rtol = 1e-5, double atol = 1e-5) {
  auto c = compare_tensors(got, want, rtol, atol);
  EXPECT_TRUE(c.ok) << c.message << " (max abs err " << c.max_abs_error << ")";
}

// Index helper for row-major reference loops.
inline int64_t flat(const Shape& s, const std::vector<int64_t>& i) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); d++) f = f * s[d] + i[d];
  return f;
}

}  // namespace ts::test
