// Tensor helpers on real data.
#include "graph/tensor.h"

#include <gtest/gtest.h>

#include "graph/error.h"

namespace ts {
namespace {

TEST(Tensor, Transposed2dSwapsRowsAndColumnsOfAnyDtype) {
  const Tensor f = random_tensor(DType::Float32, {3, 5}, 1, -1, 1);
  const Tensor t = f.transposed_2d();
  EXPECT_EQ(t.shape, (Shape{5, 3}));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) EXPECT_EQ(t.data<float>()[j * 3 + i], f.data<float>()[i * 5 + j]) << i << "," << j;
  EXPECT_EQ(t.transposed_2d().bytes, f.bytes);
  const Tensor n = Tensor::from_i64({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(n.transposed_2d().to_i64_vector(), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_THROW(random_tensor(DType::Float32, {2, 3, 4}, 2, 0, 1).transposed_2d(), Error);
}

}  // namespace
}  // namespace ts
