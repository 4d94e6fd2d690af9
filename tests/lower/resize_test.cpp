#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Tensor resize(const Tensor& x, const std::string& mode, const std::string& ctm, std::vector<float> scales) {
  OnnxBuilder m(13);
  Tensor sc(DType::Float32, {static_cast<int64_t>(scales.size())});
  for (size_t i = 0; i < scales.size(); i++) sc.data<float>()[i] = scales[i];
  m.input("x", DType::Float32, x.shape).initializer("roi", Tensor(DType::Float32, {0})).initializer("scales", sc);
  m.node("Resize", {"x", "roi", "scales"}, {"y"}, {{"mode", mode}, {"coordinate_transformation_mode", ctm}}).output("y");
  return test::run_model(m.save("resize.onnx"), {{"x", x}})[0];
}

TEST(LowerResize, NearestUpsampleByTwo) {
  Tensor x = test::make_f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = resize(x, "nearest", "asymmetric", {1, 1, 2, 2});
  test::expect_close(y, test::make_f32({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}), 0, 0);
}

TEST(LowerResize, LinearHalfPixel) {
  Tensor x = test::make_f32({1, 1, 1, 2}, {0, 4});
  // half_pixel: x_in = (x_out + 0.5) / 2 - 0.5 -> -0.25, 0.25, 0.75, 1.25 (clamped to the edge).
  Tensor y = resize(x, "linear", "half_pixel", {1, 1, 1, 2});
  test::expect_close(y, test::make_f32({1, 1, 1, 4}, {0, 1, 3, 4}), 1e-6, 1e-6);
}

TEST(LowerDepthToSpace, DcrAndSpaceToDepthRoundTrip) {
  Tensor x(DType::Float32, {1, 8, 2, 3});
  for (int64_t i = 0; i < x.size(); i++) x.data<float>()[i] = static_cast<float>(i);
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .node("DepthToSpace", {"x"}, {"d"}, {{"blocksize", int64_t{2}}, {"mode", std::string("DCR")}})
      .node("SpaceToDepth", {"d"}, {"y"}, {{"blocksize", int64_t{2}}})
      .output("d")
      .output("y");
  auto out = test::run_model(m.save("d2s.onnx"), {{"x", x}});
  ASSERT_EQ(out[0].shape, (Shape{1, 2, 4, 6}));
  // DCR: d[c][2h+i][2w+j] = x[(2i+j)*2 + c][h][w]
  EXPECT_EQ(out[0].data<float>()[test::flat(out[0].shape, {0, 1, 3, 4})], x.data<float>()[test::flat(x.shape, {0, (2 * 1 + 0) * 2 + 1, 1, 2})]);
  test::expect_close(out[1], x, 0, 0);
}

}  // namespace
}  // namespace ts
