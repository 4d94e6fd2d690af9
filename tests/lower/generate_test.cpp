#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace ts {
namespace {

using test::OnnxBuilder;

// Reference Trilu on the last two axes of x.
Tensor trilu_ref(const Tensor& x, bool upper, int64_t k) {
  Tensor r = x;
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  for (int64_t e = 0; e < x.size(); e++) {
    const int64_t i = e / cols % rows, j = e % cols;
    if (upper ? j - i < k : j - i > k) r.set_f64(e, 0);
  }
  return r;
}

TEST(LowerGenerate, TriluConstantAndRuntimeK) {
  Tensor x = test::rand_f32({2, 3, 5}, 1);
  OnnxBuilder m(14);
  m.input("x", DType::Float32, x.shape).input("k", DType::Int64, {});
  m.initializer("one", Tensor::from_i64({1}, {}));
  m.node("Trilu", {"x", "one"}, {"lower"}, {{"upper", int64_t{0}}});
  m.node("Trilu", {"x", "k"}, {"upper"});
  m.node("Trilu", {"x"}, {"plain"});
  m.output("lower").output("upper").output("plain");
  auto out = test::run_model(m.save("trilu.onnx"), {{"x", x}, {"k", Tensor::from_i64({-1}, {})}});
  test::expect_close(out[0], trilu_ref(x, false, 1), 0, 0);
  test::expect_close(out[1], trilu_ref(x, true, -1), 0, 0);
  test::expect_close(out[2], trilu_ref(x, true, 0), 0, 0);
}

TEST(LowerGenerate, OneHotNegativeAndOutOfRangeIndices) {
  const int64_t depth = 4;
  Tensor ind = Tensor::from_i64({0, 3, -1, -4, 4, -5}, {2, 3});
  OnnxBuilder m(11);
  m.input("ind", DType::Int64, ind.shape);
  m.initializer("depth", Tensor::from_i64({depth}, {}));
  m.initializer("values", test::make_f32({2}, {-1, 5}));
  m.node("OneHot", {"ind", "depth", "values"}, {"y"}, {{"axis", int64_t{1}}});
  m.output("y");
  // ONNX shape inference leaves the depth axis unknown even for a constant depth: the model
  // declares the output shape, as the backend test models do.
  auto* dims = m.proto().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  for (int64_t d : {int64_t{2}, depth, int64_t{3}}) dims->add_dim()->set_dim_value(d);
  Tensor got = test::run_model(m.save("onehot.onnx"), {{"ind", ind}})[0];
  Tensor want(DType::Float32, {2, depth, 3});
  for (int64_t a = 0; a < 2; a++)
    for (int64_t d = 0; d < depth; d++)
      for (int64_t b = 0; b < 3; b++) {
        int64_t v = ind.get_i64(a * 3 + b);
        if (v < 0) v += depth;
        want.set_f64(test::flat(want.shape, {a, d, b}), v == d ? 5 : -1);
      }
  test::expect_close(got, want, 0, 0);
}

// Reference CumSum of x along `axis`.
Tensor cumsum_ref(const Tensor& x, int axis, bool exclusive, bool reverse) {
  Tensor r = x;
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); d++) inner *= x.shape[d];
  const int64_t n = x.shape[axis], outer = x.size() / (n * inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      double acc = 0;
      for (int64_t s = 0; s < n; s++) {
        const int64_t t = reverse ? n - 1 - s : s, e = (o * n + t) * inner + i;
        if (exclusive) r.set_f64(e, acc);
        acc += x.get_f64(e);
        if (!exclusive) r.set_f64(e, acc);
      }
    }
  return r;
}

TEST(LowerGenerate, CumSumEveryDirectionAndAxis) {
  Tensor x = test::rand_f32({3, 4, 5}, 2);
  for (int64_t axis : {0, 1, -1})
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1}) {
        SCOPED_TRACE(testing::Message() << "axis " << axis << " exclusive " << exclusive << " reverse " << reverse);
        OnnxBuilder m(14);
        m.input("x", DType::Float32, x.shape).initializer("axis", Tensor::from_i64({axis}, {}));
        m.node("CumSum", {"x", "axis"}, {"y"}, {{"exclusive", exclusive}, {"reverse", reverse}}).output("y");
        Tensor got = test::run_model(m.save("cumsum.onnx"), {{"x", x}})[0];
        test::expect_close(got, cumsum_ref(x, axis < 0 ? 2 : static_cast<int>(axis), exclusive, reverse));
      }
}

TEST(LowerGenerate, CumSumIntegerWithRuntimeAxisOfRankOne) {
  Tensor x = Tensor::from_i64({1, 2, 3, 4, 5}, {5});
  OnnxBuilder m(14);
  m.input("x", DType::Int64, x.shape).input("axis", DType::Int32, {});
  m.node("CumSum", {"x", "axis"}, {"y"}, {{"reverse", int64_t{1}}}).output("y", DType::Int64);
  Tensor axis(DType::Int32, {});
  axis.set_f64(0, -1);
  Tensor got = test::run_model(m.save("cumsum_1d.onnx"), {{"x", x}, {"axis", axis}})[0];
  EXPECT_EQ(got.to_i64_vector(), (std::vector<int64_t>{15, 14, 12, 9, 5}));
}

}  // namespace
}  // namespace ts
