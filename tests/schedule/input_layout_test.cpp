// Packing a tensor into a blocked layout, element by element against the formula in
// schedule/input_layout.h, and the errors for layouts that do not fit.
#include "schedule/input_layout.h"

#include <gtest/gtest.h>

#include "graph/error.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

TEST(InputLayout, PacksTheBlockedDimInnermost) {
  // ONNX [2, 6, 3]; Halide dim 1 is ONNX axis 1 (extent 6), blocked by 3: [2, 2, 3, 3].
  Tensor t(DType::Float32, {2, 6, 3});
  for (int64_t k = 0; k < t.size(); k++) t.data<float>()[k] = static_cast<float>(k);
  const InputLayout l{"w", 1, 3};
  EXPECT_EQ(layout_error(l, t.shape), "");
  const Tensor p = pack_tensor(l, t);
  ASSERT_EQ(p.shape, (Shape{2, 2, 3, 3}));
  for (int a = 0; a < 2; a++)
    for (int c = 0; c < 6; c++)
      for (int x = 0; x < 3; x++) {
        const float want = t.data<float>()[(a * 6 + c) * 3 + x];
        const float got = p.data<float>()[((a * 2 + c / 3) * 3 + x) * 3 + c % 3];
        ASSERT_EQ(got, want) << a << "," << c << "," << x;
      }
  // Into existing storage: the same values, the same bytes object.
  Tensor dst(DType::Float32, p.shape);
  const uint8_t* storage = dst.bytes.data();
  pack_into(l, t, dst);
  EXPECT_EQ(dst.bytes, p.bytes);
  EXPECT_EQ(dst.bytes.data(), storage);
  // Other dtypes move whole elements.
  Tensor i64(DType::Int64, {4, 2});
  for (int64_t k = 0; k < 8; k++) i64.data<int64_t>()[k] = k;
  const Tensor q = pack_tensor({"i", 1, 2}, i64);  // ONNX axis 0 blocked: [2, 2, 2]
  EXPECT_EQ(std::vector<int64_t>(q.data<int64_t>(), q.data<int64_t>() + 8), (std::vector<int64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
}

TEST(InputLayout, RejectsLayoutsThatDoNotFitNamingTheInput) {
  Tensor t(DType::Float32, {8, 3, 3, 3});
  EXPECT_NE(layout_error({"w", 4, 2}, t.shape).find("dim 4"), std::string::npos);
  EXPECT_NE(layout_error({"w", 3, 3}, t.shape).find("block 3 does not divide dim 3's extent 8"), std::string::npos);
  EXPECT_NE(layout_error({"w", 3, 1}, t.shape), "");
  EXPECT_TRUE(test::throws_naming<Error>([&] { pack_tensor({"w", 3, 5}, t); }, {"input 'w'"}));
  Tensor wrong(DType::Float32, {8, 3, 3, 3});
  EXPECT_THROW(pack_into({"w", 3, 4}, t, wrong), Error);
}

}  // namespace
}  // namespace ts
