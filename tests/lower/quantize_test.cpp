#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace ts {
namespace {

using test::OnnxBuilder;

// Per-channel quantization rounds half to even and saturates; dequantizing inverts it.
TEST(LowerQuantize, PerChannelRoundTripRoundsHalfToEvenAndSaturates) {
  const Tensor x = test::make_f32({1, 2, 3}, {2.5f, 3.5f, -300.f, 1.f, 7.f, 1000.f});
  Tensor scale = test::make_f32({2}, {1.0f, 2.0f});
  Tensor zero(DType::Int8, {2});
  zero.data<int8_t>()[0] = 0;
  zero.data<int8_t>()[1] = -10;
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .initializer("scale", scale)
      .initializer("zero", zero)
      .node("QuantizeLinear", {"x", "scale", "zero"}, {"q"}, {{"axis", int64_t{1}}})
      .node("DequantizeLinear", {"q", "scale", "zero"}, {"y"}, {{"axis", int64_t{-2}}})
      .output("q", DType::Int8)
      .output("y");
  auto out = test::run_model(m.save("quantize.onnx"), {{"x", x}});
  ASSERT_EQ(out[0].dtype, DType::Int8);
  // 2.5 -> 2, 3.5 -> 4, -300 -> -128; 1/2 = 0.5 -> 0 - 10, 7/2 = 3.5 -> 4 - 10, 500 - 10 -> 127.
  const std::vector<int> want_q = {2, 4, -128, -10, -6, 127};
  for (int i = 0; i < 6; i++) EXPECT_EQ(out[0].data<int8_t>()[i], want_q[i]) << "element " << i;
  test::expect_close(out[1], test::make_f32({1, 2, 3}, {2, 4, -128, 0, 8, 274}), 0, 0);
}

TEST(LowerQuantize, DefaultsToUint8WithoutZeroPoint) {
  const Tensor x = test::make_f32({4}, {-1.f, 0.4f, 0.6f, 300.f});
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .initializer("scale", test::make_f32({}, {1.0f}))
      .node("QuantizeLinear", {"x", "scale"}, {"q"})
      .output("q", DType::UInt8);
  auto out = test::run_model(m.save("quantize_u8.onnx"), {{"x", x}});
  ASSERT_EQ(out[0].dtype, DType::UInt8);
  const std::vector<int> want = {0, 0, 1, 255};
  for (int i = 0; i < 4; i++) EXPECT_EQ(out[0].data<uint8_t>()[i], want[i]) << "element " << i;
}

// DynamicQuantizeLinear: the range always holds 0; the zero point is where 0 lands.
TEST(LowerQuantize, DynamicQuantizeLinearMapsTheRangeWithZeroOntoUint8) {
  struct Case {
    std::vector<float> x;
    float scale;
    int zero_point;
    std::vector<int> y;
  };
  const std::vector<Case> cases = {
      // ONNX's example: range [-3, 2], zero point round(3 / (5 / 255)) = 153.
      {{0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f}, 5.f / 255.f, 153, {153, 255, 0, 26, 221, 179}},
      {{1.f, 2.f, 3.f, 0.6f}, 3.f / 255.f, 0, {85, 170, 255, 51}},  // all positive: min is 0
      {{0.f, 0.f, 0.f, 0.f}, 0.f, 0, {0, 0, 0, 0}},                 // no range
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(testing::Message() << "first value " << cs.x[0] << ", scale " << cs.scale);
    const Tensor x = test::make_f32({2, 1, static_cast<int64_t>(cs.x.size()) / 2}, cs.x);
    OnnxBuilder m(11);
    m.input("x", DType::Float32, x.shape)
        .node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zero_point"})
        .output("y", DType::UInt8)
        .output("scale")
        .output("zero_point", DType::UInt8);
    auto out = test::run_model(m.save("dynamic_quantize.onnx"), {{"x", x}});
    ASSERT_EQ(out[0].shape, x.shape);
    ASSERT_EQ(out[1].shape, Shape{});
    EXPECT_FLOAT_EQ(out[1].data<float>()[0], cs.scale);
    EXPECT_EQ(out[2].data<uint8_t>()[0], cs.zero_point);
    for (size_t i = 0; i < cs.y.size(); i++) EXPECT_EQ(out[0].data<uint8_t>()[i], cs.y[i]) << "element " << i;
  }
}

}  // namespace
}  // namespace ts
