#include <gtest/gtest.h>

#include <cmath>

#include "lower/lower_test_util.h"

namespace ts {
namespace {

using test::OnnxBuilder;

TEST(LowerReduce, MeanMaxL2OverAxesWithAndWithoutKeepdims) {
  Tensor x = test::rand_f32({2, 3, 4}, 1);
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape);
  m.node("ReduceMean", {"x"}, {"mean"}, {{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t{1}}});
  m.node("ReduceMax", {"x"}, {"max"}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{0}}});
  m.node("ReduceL2", {"x"}, {"l2"}, {{"keepdims", int64_t{0}}});
  m.output("mean").output("max").output("l2");
  auto out = test::run_model(m.save("reduce.onnx"), {{"x", x}});
  Tensor mean(DType::Float32, {1, 3, 1}), mx(DType::Float32, {2, 3}), l2(DType::Float32, {});
  double sq = 0;
  for (int j = 0; j < 3; j++) {
    double s = 0;
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 4; k++) s += x.data<float>()[test::flat(x.shape, {i, j, k})];
    mean.data<float>()[j] = static_cast<float>(s / 8);
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      float best = -INFINITY;
      for (int k = 0; k < 4; k++) {
        float v = x.data<float>()[test::flat(x.shape, {i, j, k})];
        best = std::max(best, v);
        sq += v * v;
      }
      mx.data<float>()[i * 3 + j] = best;
    }
  l2.data<float>()[0] = static_cast<float>(std::sqrt(sq));
  test::expect_close(out[0], mean);
  test::expect_close(out[1], mx);
  test::expect_close(out[2], l2);
}

TEST(LowerReduce, ArgMaxFirstAndLastIndex) {
  Tensor x = test::make_f32({2, 4}, {1, 3, 3, 0, 5, 5, 2, 5});
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape);
  m.node("ArgMax", {"x"}, {"first"}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}});
  m.node("ArgMax", {"x"}, {"last"}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}});
  m.output("first", DType::Int64).output("last", DType::Int64);
  auto out = test::run_model(m.save("argmax.onnx"), {{"x", x}});
  EXPECT_EQ(out[0].to_i64_vector(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(out[1].shape, (Shape{2, 1}));
  EXPECT_EQ(out[1].to_i64_vector(), (std::vector<int64_t>{2, 3}));
}

}  // namespace
}  // namespace ts
