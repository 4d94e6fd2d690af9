#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Tensor iota(const Shape& s) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.size(); i++) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

TEST(LowerShapeOps, TransposeReshapeConcatSlice) {
  Tensor x = iota({2, 3, 4});
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .initializer("shape", Tensor::from_i64({4, -1}, {2}))
      .initializer("starts", Tensor::from_i64({3, 1}, {2}))
      .initializer("ends", Tensor::from_i64({-100, 100}, {2}))
      .initializer("axes", Tensor::from_i64({0, 1}, {2}))
      .initializer("steps", Tensor::from_i64({-2, 3}, {2}))
      .node("Transpose", {"x"}, {"t"}, {{"perm", std::vector<int64_t>{2, 0, 1}}})  // [4,2,3]
      .node("Reshape", {"t", "shape"}, {"r"})                                      // [4,6]
      .node("Concat", {"r", "r"}, {"c"}, {{"axis", int64_t{1}}})                   // [4,12]
      .node("Slice", {"c", "starts", "ends", "axes", "steps"}, {"y"})              // rows 3,1; cols 1,4,7,10
      .output("y");
  Tensor y = test::run_model(m.save("shape.onnx"), {{"x", x}})[0];
  ASSERT_EQ(y.shape, (Shape{2, 4}));
  // c[i][j] = t[i][(j % 6) / 3][j % 3] = x[(j%6)/3][j%3][i]
  auto c = [&](int i, int j) { return static_cast<float>(((j % 6) / 3) * 12 + (j % 3) * 4 + i); };
  std::vector<float> want;
  for (int i : {3, 1})
    for (int j : {1, 4, 7, 10}) want.push_back(c(i, j));
  test::expect_close(y, test::make_f32({2, 4}, want), 0, 0);
}

TEST(LowerShapeOps, PadReflectAndGatherNegativeIndices) {
  Tensor x = iota({2, 3});
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .initializer("pads", Tensor::from_i64({0, 2, 0, 1}, {4}))
      .initializer("idx", Tensor::from_i64({-1, 0}, {2}))
      .node("Pad", {"x", "pads"}, {"p"}, {{"mode", std::string("reflect")}})
      .node("Gather", {"x", "idx"}, {"g"}, {{"axis", int64_t{1}}})
      .output("p")
      .output("g");
  auto out = test::run_model(m.save("pad.onnx"), {{"x", x}});
  test::expect_close(out[0], test::make_f32({2, 6}, {2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4}), 0, 0);
  test::expect_close(out[1], test::make_f32({2, 2}, {2, 0, 5, 3}), 0, 0);
}

TEST(LowerShapeOps, SplitExpandTile) {
  Tensor x = iota({1, 4});
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .initializer("split", Tensor::from_i64({1, 3}, {2}))
      .initializer("shape", Tensor::from_i64({2, 1, 1}, {3}))
      .initializer("reps", Tensor::from_i64({2, 1}, {2}))
      .node("Split", {"x", "split"}, {"a", "b"}, {{"axis", int64_t{1}}})
      .node("Expand", {"a", "shape"}, {"e"})
      .node("Tile", {"b", "reps"}, {"t"})
      .output("e")
      .output("t");
  auto out = test::run_model(m.save("split.onnx"), {{"x", x}});
  test::expect_close(out[0], test::make_f32({2, 1, 1}, {0, 0}), 0, 0);
  test::expect_close(out[1], test::make_f32({2, 3}, {1, 2, 3, 1, 2, 3}), 0, 0);
}

// Constant indices scatter through an owner table, indices given at run time (or a reducing
// scatter with two updates on one element) through an update stage: both agree with ONNX.
TEST(LowerShapeOps, ScatterNDConstantAndRuntimeIndices) {
  Tensor x = iota({4, 3});
  Tensor u = test::make_f32({2, 3}, {100, 101, 102, 200, 201, 202});
  const Tensor rows = Tensor::from_i64({2, -4}, {2, 1});
  OnnxBuilder m(16);
  m.input("x", DType::Float32, x.shape)
      .input("u", DType::Float32, u.shape)
      .input("k", DType::Int64, rows.shape)
      .initializer("rows", rows)
      .node("ScatterND", {"x", "rows", "u"}, {"set"})
      .node("ScatterND", {"x", "rows", "u"}, {"add"}, {{"reduction", std::string("add")}})
      .node("ScatterND", {"x", "k", "u"}, {"dyn"}, {{"reduction", std::string("mul")}})
      .output("set")
      .output("add")
      .output("dyn");
  auto out = test::run_model(m.save("scatter_nd.onnx"), {{"x", x}, {"u", u}, {"k", rows}});
  test::expect_close(out[0], test::make_f32({4, 3}, {200, 201, 202, 3, 4, 5, 100, 101, 102, 9, 10, 11}), 0, 0);
  test::expect_close(out[1], test::make_f32({4, 3}, {200, 202, 204, 3, 4, 5, 106, 108, 110, 9, 10, 11}), 0, 0);
  test::expect_close(out[2], test::make_f32({4, 3}, {0, 201, 404, 3, 4, 5, 600, 707, 816, 9, 10, 11}), 0, 0);
}

TEST(LowerShapeOps, ScatterElementsConstantDuplicateAndRuntimeIndices) {
  Tensor x = iota({2, 3});
  Tensor u = test::make_f32({2, 2}, {10, 20, 30, 40});
  const Tensor distinct = Tensor::from_i64({2, 0, 1, -1}, {2, 2});
  const Tensor repeated = Tensor::from_i64({1, 1, -1, 0}, {2, 2});
  OnnxBuilder m(16);
  m.input("x", DType::Float32, x.shape)
      .input("u", DType::Float32, u.shape)
      .input("k", DType::Int64, distinct.shape)
      .initializer("distinct", distinct)
      .initializer("repeated", repeated)
      .node("ScatterElements", {"x", "distinct", "u"}, {"set"}, {{"axis", int64_t{1}}})
      .node("ScatterElements", {"x", "repeated", "u"}, {"add"}, {{"axis", int64_t{-1}}, {"reduction", std::string("add")}})
      .node("ScatterElements", {"x", "k", "u"}, {"dyn"}, {{"axis", int64_t{1}}})
      .output("set")
      .output("add")
      .output("dyn");
  auto out = test::run_model(m.save("scatter_elements.onnx"), {{"x", x}, {"u", u}, {"k", distinct}});
  test::expect_close(out[0], test::make_f32({2, 3}, {20, 1, 10, 3, 30, 40}), 0, 0);
  test::expect_close(out[1], test::make_f32({2, 3}, {0, 31, 2, 43, 4, 35}), 0, 0);
  test::expect_close(out[2], test::make_f32({2, 3}, {20, 1, 10, 3, 30, 40}), 0, 0);
}

// A reversed Slice whose output is not a whole number of vectors: the guarded tail of the
// reversed load reads lanes below index 0, masked; the code generator must accept it.
TEST(LowerShapeOps, ReversedSliceWithAVectorTail) {
  const Tensor x = test::rand_f32({49}, 5);
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {49})
      .initializer("starts", Tensor::from_i64({28}, {1}))
      .initializer("ends", Tensor::from_i64({0}, {1}))
      .initializer("axes", Tensor::from_i64({0}, {1}))
      .initializer("steps", Tensor::from_i64({-1}, {1}))
      .node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"})
      .output("y");
  const Tensor y = test::run_model(m.save("reversed_slice.onnx"), {{"x", x}})[0];
  ASSERT_EQ(y.shape, Shape{28});
  for (int64_t i = 0; i < 28; i++) EXPECT_EQ(y.data<float>()[i], x.data<float>()[28 - i]) << "element " << i;
}

}  // namespace
}  // namespace ts
