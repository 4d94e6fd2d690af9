#include "graph/const_eval.h"

#include <gtest/gtest.h>

namespace ts {
namespace {

std::vector<Tensor> eval(Node n, std::vector<Tensor> in, int opset = 13) {
  std::vector<const Tensor*> p;
  std::vector<std::optional<Shape>> s;
  for (auto& t : in) {
    p.push_back(&t);
    s.push_back(t.shape);
  }
  n.inputs.resize(in.size(), "t");
  auto r = eval_constant_node(n, opset, p, s);
  EXPECT_TRUE(r.has_value());
  return r ? *r : std::vector<Tensor>{};
}

TEST(ConstEval, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}, "t"), (Shape{2, 3, 4}));
  EXPECT_THROW(broadcast_shapes({2, 3}, {4}, "t"), Error);
}

TEST(ConstEval, SliceWithNegativeStep) {
  Node n;
  n.op = "Slice";
  auto r = eval(n, {Tensor::from_i64({0, 1, 2, 3, 4, 5}, {6}), Tensor::from_i64({-1}, {1}),
                    Tensor::from_i64({-100}, {1}), Tensor::from_i64({0}, {1}), Tensor::from_i64({-2}, {1})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{5, 3, 1}));
}

TEST(ConstEval, GatherConcatReshape) {
  Node g;
  g.op = "Gather";
  auto r = eval(g, {Tensor::from_i64({10, 20, 30}, {3}), Tensor::from_i64({-1, 0}, {2})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{30, 10}));
  Node c;
  c.op = "Concat";
  c.attrs["axis"] = {int64_t{0}};
  r = eval(c, {Tensor::from_i64({1}, {1}), Tensor::from_i64({2, 3}, {2})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{1, 2, 3}));
  Node rs;
  rs.op = "Reshape";
  r = eval(rs, {Tensor::from_i64({1, 2, 3, 4, 5, 6}, {2, 3}), Tensor::from_i64({0, -1, 1}, {3})});
  EXPECT_EQ(r[0].shape, (Shape{2, 3, 1}));
}

TEST(ConstEval, IntegerDivisionTruncates) {
  Node d;
  d.op = "Div";
  auto r = eval(d, {Tensor::from_i64({7, -7}, {2}), Tensor::from_i64({2, 2}, {2})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{3, -3}));
}

TEST(ConstEval, ScatterNDOfASliceAssignment) {
  Node n;
  n.op = "ScatterND";
  // mask[1:, 0] = 7 on a 3x2 mask of zeros, negative index included.
  auto r = eval(n, {Tensor::from_i64({0, 0, 0, 0, 0, 0}, {3, 2}), Tensor::from_i64({1, 0, -1, 0}, {2, 2}),
                    Tensor::from_i64({7, 7}, {2})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{0, 0, 7, 0, 7, 0}));
  n.attrs["reduction"].value = std::string("add");
  r = eval(n, {Tensor::from_i64({1, 2, 3, 4, 5, 6}, {3, 2}), Tensor::from_i64({2, 2}, {2, 1}),
               Tensor::from_i64({10, 20, 30, 40}, {2, 2})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{1, 2, 3, 4, 45, 66}));
}

// Swin's window padding: (window - H % window) % window on shape values.
TEST(ConstEval, ModTakesTheDivisorsSignUnlessFmod) {
  Node n;
  n.op = "Mod";
  auto r = eval(n, {Tensor::from_i64({7, -7, 7, -7, 56}, {5}), Tensor::from_i64({3, 3, -3, -3, 7}, {5})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{1, 2, -2, -1, 0}));
  n.attrs["fmod"].value = int64_t{1};
  r = eval(n, {Tensor::from_i64({7, -7, 7, -7}, {4}), Tensor::from_i64({3, 3, -3, -3}, {4})});
  EXPECT_EQ(r[0].to_i64_vector(), (std::vector<int64_t>{1, -1, 1, -1}));
}

TEST(ConstEval, RefusesRuntimeInputs) {
  Node n;
  n.op = "Add";
  n.inputs = {"a", "b"};
  Tensor a = Tensor::from_i64({1}, {1});
  auto r = eval_constant_node(n, 13, {&a, nullptr}, {a.shape, Shape{1}});
  EXPECT_FALSE(r.has_value());
}

}  // namespace
}  // namespace ts
