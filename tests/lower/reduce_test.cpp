#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lower/lower_test_util.h"
#include "support/throws_naming.h"

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

// A row holding a NaN reduces to NaN by ReduceMax and ReduceMin, the NaN first in its row or
// last; a row without one reduces as before.
TEST(LowerReduce, MaxAndMinOfARowWithANaNAreNaN) {
  Tensor x = test::make_f32({3, 5}, {0, 1, 2, 3, 4, -1, 5, 2, 0, 3, 7, 1, 2, 3, 9});
  x.set_f64(0, std::nan(""));
  x.set_f64(9, std::nan(""));
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape);
  m.node("ReduceMax", {"x"}, {"max"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  m.node("ReduceMin", {"x"}, {"min"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}});
  m.output("max").output("min");
  auto out = test::run_model(m.save("reduce_nan.onnx"), {{"x", x}});
  for (const Tensor& y : out) {
    EXPECT_TRUE(std::isnan(y.get_f64(0)));
    EXPECT_TRUE(std::isnan(y.get_f64(1)));
  }
  EXPECT_EQ(out[0].get_f64(2), 9);
  EXPECT_EQ(out[1].get_f64(2), 1);
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

// TopK against a stable sort of every row: values and indices, largest and smallest, equal values
// in index order, along an inner and an outer axis.
TEST(LowerReduce, TopKMatchesAStableSortOfEveryRow) {
  Tensor x = test::rand_f32({2, 5, 7}, 3);
  for (int64_t i = 0; i < x.size(); i += 3) x.data<float>()[i] = 0.25f;  // ties
  struct Case {
    int64_t axis, k, largest;
  };
  for (const Case cs : {Case{-1, 3, 1}, Case{2, 7, 0}, Case{1, 2, 1}, Case{0, 1, 0}}) {
    SCOPED_TRACE(testing::Message() << "axis " << cs.axis << " k " << cs.k << " largest " << cs.largest);
    Tensor k(DType::Int64, {1});
    k.data<int64_t>()[0] = cs.k;
    OnnxBuilder m(11);
    m.input("x", DType::Float32, x.shape).initializer("k", k);
    m.node("TopK", {"x", "k"}, {"values", "indices"}, {{"axis", cs.axis}, {"largest", cs.largest}});
    m.output("values").output("indices", DType::Int64);
    auto out = test::run_model(m.save("topk.onnx"), {{"x", x}});
    const int axis = static_cast<int>(cs.axis < 0 ? cs.axis + 3 : cs.axis);
    Shape os = x.shape;
    os[axis] = cs.k;
    ASSERT_EQ(out[0].shape, os);
    ASSERT_EQ(out[1].shape, os);
    const std::vector<int64_t> got_index = out[1].to_i64_vector();
    for (int64_t a = 0; a < x.shape[(axis + 1) % 3]; a++)
      for (int64_t b = 0; b < x.shape[(axis + 2) % 3]; b++) {
        auto at = [&](const Shape& s, int64_t along) {
          std::vector<int64_t> i(3);
          i[axis] = along;
          i[(axis + 1) % 3] = a;
          i[(axis + 2) % 3] = b;
          return test::flat(s, i);
        };
        std::vector<int64_t> order(x.shape[axis]);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
          const float u = x.data<float>()[at(x.shape, p)], v = x.data<float>()[at(x.shape, q)];
          return cs.largest ? u > v : u < v;
        });
        for (int64_t j = 0; j < cs.k; j++) {
          EXPECT_EQ(got_index[at(os, j)], order[j]) << "row " << a << "," << b << " position " << j;
          EXPECT_EQ(out[0].data<float>()[at(os, j)], x.data<float>()[at(x.shape, order[j])]);
        }
      }
  }
}

// A K larger than the axis is refused before anything runs, with a message naming the node.
TEST(LowerReduce, TopKOfMoreThanTheAxisHoldsIsRefusedNamingTheNode) {
  Tensor k(DType::Int64, {1});
  k.data<int64_t>()[0] = 9;
  OnnxBuilder m(11);
  m.input("x", DType::Float32, {2, 5}).initializer("k", k);
  m.node("TopK", {"x", "k"}, {"values", "indices"}, {{"axis", int64_t{1}}});
  m.output("values").output("indices", DType::Int64);
  EXPECT_TRUE(test::throws_naming([&] { test::run_model(m.save("topk_too_many.onnx"), {{"x", test::rand_f32({2, 5}, 1)}}); },
                                  {"TopK"}));
}

}  // namespace
}  // namespace ts
