#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/workload.h"
#include "lower/lower_test_util.h"
#include "measure/workload_compiler.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using test::OnnxBuilder;

// A one-node Softmax model over x's last axis: expects its lowering to hold a stage whose name
// contains `stage`, and returns the compiled model's output for x.
Tensor softmax_in_lanes(const Tensor& x, const std::string& file, const std::string& stage) {
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape).node("Softmax", {"x"}, {"y"}).output("y");
  const std::string path = m.save(file);
  const Graph g = test::import_model(path);
  bool found = false;
  for (const auto& [name, f] : Halide::Internal::find_transitive_calls(lower_workload(partition_graph(g).workloads.at(0)).outputs[0].function()))
    found |= name.find(stage) != std::string::npos;
  EXPECT_TRUE(found) << stage;
  return test::run_model(path, {{"x", x}})[0];
}

// Row r's softmax reference in double: {max, sum of exp(x - max)}.
std::pair<double, double> softmax_row_ref(const Tensor& x, int r, int n) {
  double mx = -INFINITY, s = 0;
  for (int k = 0; k < n; k++) mx = std::max(mx, static_cast<double>(x.data<float>()[r * n + k]));
  for (int k = 0; k < n; k++) s += std::exp(x.data<float>()[r * n + k] - mx);
  return {mx, s};
}

TEST(LowerSoftmax, Opset13AxisAndOpset11Flattening) {
  Tensor x = random_tensor(DType::Float32, {2, 3, 4}, 1, -5, 5);
  auto softmax_ref = [&](int groups, int n) {  // softmax of each contiguous run of n values
    Tensor r = x;
    for (int g = 0; g < groups; g++) {
      double mx = -INFINITY, s = 0;
      for (int k = 0; k < n; k++) mx = std::max(mx, static_cast<double>(x.data<float>()[g * n + k]));
      for (int k = 0; k < n; k++) s += std::exp(x.data<float>()[g * n + k] - mx);
      for (int k = 0; k < n; k++) r.data<float>()[g * n + k] = static_cast<float>(std::exp(x.data<float>()[g * n + k] - mx) / s);
    }
    return r;
  };
  OnnxBuilder m13(13);
  m13.input("x", DType::Float32, x.shape).node("Softmax", {"x"}, {"y"}).output("y");
  test::expect_close(test::run_model(m13.save("sm13.onnx"), {{"x", x}})[0], softmax_ref(6, 4));
  OnnxBuilder m11(11);
  m11.input("x", DType::Float32, x.shape).node("Softmax", {"x"}, {"y"}, {{"axis", int64_t{1}}}).output("y");
  test::expect_close(test::run_model(m11.save("sm11.onnx"), {{"x", x}})[0], softmax_ref(2, 12));
}

// A masked attention row (Swin adds -100 to the scores of other windows): the masked
// probabilities are 0, not subnormal (a MatMul reading subnormals runs on slow assists), and
// the others still sum to 1.
TEST(LowerSoftmax, MaskedScoresGiveZeroNotSubnormals) {
  const int n = 49;
  Tensor x = random_tensor(DType::Float32, {3, n}, 2, -1, 1);
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < n; k++)
      if ((k + r) % 3 == 0) x.data<float>()[r * n + k] -= 100.0f;
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape).node("Softmax", {"x"}, {"y"}).output("y");
  const Tensor y = test::run_model(m.save("sm_masked.onnx"), {{"x", x}})[0];
  for (int r = 0; r < 3; r++) {
    double sum = 0;
    for (int k = 0; k < n; k++) {
      const float p = y.data<float>()[r * n + k];
      EXPECT_NE(std::fpclassify(p), FP_SUBNORMAL) << r << "," << k;
      if ((k + r) % 3 == 0) EXPECT_EQ(p, 0.0f) << r << "," << k;
      else EXPECT_GT(p, 0.0f) << r << "," << k;
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << r;
  }
}

TEST(LowerSoftmax, RowsOfLaneMultiplesReduceInLanesAndMatchTheReference) {
  // A last axis of 48 = 3 x 16: max and sum run as 16 lane partials, then across the lanes
  // (lower/reduction.h reduce_last_axis); one row holds the maximum in its last lane, one a NaN.
  const int rows = 5, n = 48;
  Tensor x = random_tensor(DType::Float32, {rows, n}, 2, -8, 8);
  x.data<float>()[1 * n + 47] = 30.0f;
  x.data<float>()[3 * n + 20] = std::nanf("");
  const Tensor got = softmax_in_lanes(x, "sm_lanes.onnx", "_max_lanes");
  for (int r = 0; r < rows; r++) {
    const auto [mx, s] = softmax_row_ref(x, r, n);
    for (int k = 0; k < n; k++) {
      const float y = got.data<float>()[r * n + k];
      if (r == 3) {
        EXPECT_TRUE(std::isnan(y)) << "row with a NaN, element " << k;
        continue;
      }
      EXPECT_NEAR(y, std::exp(x.data<float>()[r * n + k] - mx) / s, 1e-6) << r << "," << k;
    }
  }
}

// A last axis of 37 (2 x 16 + 5, as ViT's 197-wide attention rows): the lane partials cover it in
// 3 steps, the 11 lanes past the end adding the identity; the maximum sits in the ragged tail of
// row 1, and row 2 spans -100..+8 (exp of the far tail is clamped, not a denormal).
TEST(LowerSoftmax, RaggedRowsReduceInLanesToo) {
  const int rows = 3, n = 37;
  Tensor x = random_tensor(DType::Float32, {rows, n}, 3, -8, 8);
  x.data<float>()[1 * n + 36] = 30.0f;
  x.data<float>()[2 * n + 3] = -100.0f;
  const Tensor got = softmax_in_lanes(x, "sm_ragged.onnx", "_expsum_lanes");
  for (int r = 0; r < rows; r++) {
    const auto [mx, s] = softmax_row_ref(x, r, n);
    for (int k = 0; k < n; k++)
      EXPECT_NEAR(got.data<float>()[r * n + k], std::exp(x.data<float>()[r * n + k] - mx) / s, 1e-6) << r << "," << k;
  }
}

TEST(LowerNormalization, LayerNormMatchesReference) {
  Tensor x = test::rand_f32({3, 8}, 1), g = test::rand_f32({8}, 2), b = test::rand_f32({8}, 3);
  OnnxBuilder m(17);
  m.input("x", DType::Float32, x.shape).initializer("g", g).initializer("b", b);
  m.node("LayerNormalization", {"x", "g", "b"}, {"y"}, {{"epsilon", 1e-5}}).output("y");
  Tensor got = test::run_model(m.save("ln.onnx"), {{"x", x}})[0];
  Tensor want = x;
  for (int i = 0; i < 3; i++) {
    double mean = 0, var = 0;
    for (int k = 0; k < 8; k++) mean += x.data<float>()[i * 8 + k] / 8.0;
    for (int k = 0; k < 8; k++) var += std::pow(x.data<float>()[i * 8 + k] - mean, 2) / 8.0;
    for (int k = 0; k < 8; k++)
      want.data<float>()[i * 8 + k] =
          static_cast<float>((x.data<float>()[i * 8 + k] - mean) / std::sqrt(var + 1e-5) * g.data<float>()[k] + b.data<float>()[k]);
  }
  test::expect_close(got, want, 1e-4, 1e-5);
}

TEST(LowerNormalization, BatchNormInference) {
  Tensor x = test::rand_f32({2, 3, 2, 2}, 1);
  Tensor s = test::rand_f32({3}, 2), b = test::rand_f32({3}, 3), mean = test::rand_f32({3}, 4);
  Tensor var = random_tensor(DType::Float32, {3}, 5, 0.5, 1.5);
  OnnxBuilder m(15);
  m.input("x", DType::Float32, x.shape).input("s", DType::Float32, {3}).input("b", DType::Float32, {3});
  m.input("mean", DType::Float32, {3}).input("var", DType::Float32, {3});
  m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"}).output("y");
  Tensor got = test::run_model(m.save("bn.onnx"), {{"x", x}, {"s", s}, {"b", b}, {"mean", mean}, {"var", var}})[0];
  Tensor want = x;
  for (int64_t i = 0; i < x.size(); i++) {
    int c = static_cast<int>((i / 4) % 3);
    want.data<float>()[i] = static_cast<float>((x.data<float>()[i] - mean.data<float>()[c]) /
                                                   std::sqrt(var.data<float>()[c] + 1e-5) * s.data<float>()[c] +
                                               b.data<float>()[c]);
  }
  test::expect_close(got, want, 1e-5, 1e-5);
}

// LRN over 7 channels with an even and an odd window: each channel's window sums the squares of
// the channels around it that exist.
TEST(LowerNormalization, LrnMatchesItsDefinition) {
  const Tensor x = test::rand_f32({2, 7, 3, 2}, 11);
  for (const int64_t size : {2, 5}) {
    SCOPED_TRACE(size);
    const double alpha = 0.002, beta = 0.6, bias = 1.5;
    OnnxBuilder m(13);
    m.input("x", DType::Float32, x.shape)
        .node("LRN", {"x"}, {"y"}, {{"size", size}, {"alpha", alpha}, {"beta", beta}, {"bias", bias}})
        .output("y");
    const Tensor y = test::run_model(m.save("lrn.onnx"), {{"x", x}})[0];
    Tensor want(DType::Float32, x.shape);
    const auto at = [&](int64_t n, int64_t c, int64_t h, int64_t w) { return test::flat(x.shape, {n, c, h, w}); };
    for (int64_t n = 0; n < 2; n++)
      for (int64_t c = 0; c < 7; c++)
        for (int64_t h = 0; h < 3; h++)
          for (int64_t w = 0; w < 2; w++) {
            double sq = 0;
            for (int64_t k = std::max<int64_t>(0, c - (size - 1) / 2); k <= std::min<int64_t>(6, c + size / 2); k++)
              sq += std::pow(x.data<float>()[at(n, k, h, w)], 2);
            want.data<float>()[at(n, c, h, w)] =
                static_cast<float>(x.data<float>()[at(n, c, h, w)] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
          }
    test::expect_close(y, want);
  }
}

// LRN's size is required and at least 1: a window of none is refused, naming the node.
TEST(LowerNormalization, AnLrnWithoutAWindowIsRefusedNamingTheNode) {
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {1, 4, 2, 2}).node("LRN", {"x"}, {"y"}, {{"size", int64_t{0}}}).output("y");
  EXPECT_TRUE(test::throws_naming([&] { test::run_model(m.save("lrn_size0.onnx"), {{"x", test::rand_f32({1, 4, 2, 2}, 4)}}); },
                                  {"LRN", "size 0"}));
}

// MeanVarianceNormalization over the default axes (N, H, W): every channel ends with mean 0 and
// standard deviation 1; a constant channel (variance 0) gives 0, not NaN.
TEST(LowerNormalization, MeanVarianceNormalizationPerChannel) {
  Tensor x = test::rand_f32({2, 3, 4, 5}, 12);
  for (int64_t i = 0; i < x.size(); i++)
    if ((i / 20) % 3 == 2) x.data<float>()[i] = 0.5f;  // channel 2 is constant
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape).node("MeanVarianceNormalization", {"x"}, {"y"}).output("y");
  const Tensor y = test::run_model(m.save("mvn.onnx"), {{"x", x}})[0];
  for (int64_t c = 0; c < 3; c++) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < x.size(); i++)
      if ((i / 20) % 3 == c) {
        sum += y.data<float>()[i];
        sq += std::pow(y.data<float>()[i], 2);
      }
    EXPECT_NEAR(sum / 40, 0.0, 1e-5) << "channel " << c;
    EXPECT_NEAR(sq / 40, c == 2 ? 0.0 : 1.0, 1e-4) << "channel " << c;
  }
}

// LpNormalization: L2 over the channels of [2, 3, 4] and L1 over rows of 40 (the last axis,
// reduced in two stages), each against a float64 reference; a row of zeros stays zeros, as in
// ONNX Runtime.
TEST(LowerNormalization, LpNormalizationL1AndL2) {
  struct Case {
    Shape shape;
    int64_t axis, p;
  };
  for (const Case& k : {Case{{2, 3, 4}, 1, 2}, Case{{2, 3, 40}, -1, 1}}) {
    SCOPED_TRACE(fmt::format("{} axis {} p {}", shape_str(k.shape), k.axis, k.p));
    Tensor x = test::rand_f32(k.shape, 14);
    // Vectors (o, i) over the axis: elements (o * n + j) * inner + i, j < n.
    const size_t axis = k.axis < 0 ? k.shape.size() - 1 : static_cast<size_t>(k.axis);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < k.shape.size(); d++) {
      if (d < axis) outer *= k.shape[d];
      if (d > axis) inner *= k.shape[d];
    }
    const int64_t n = k.shape[axis];
    const auto at = [&](int64_t o, int64_t j, int64_t i) { return (o * n + j) * inner + i; };
    for (int64_t j = 0; j < n; j++) x.data<float>()[at(0, j, 0)] = 0;  // vector (0, 0) is zeros
    OnnxBuilder m(13);
    m.input("x", DType::Float32, x.shape).node("LpNormalization", {"x"}, {"y"}, {{"axis", k.axis}, {"p", k.p}}).output("y");
    const Tensor y = test::run_model(m.save("lp_norm.onnx"), {{"x", x}})[0];
    ASSERT_EQ(y.shape, x.shape);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) {
        double norm = 0;
        for (int64_t j = 0; j < n; j++) {
          const double v = x.data<float>()[at(o, j, i)];
          norm += k.p == 1 ? std::fabs(v) : v * v;
        }
        if (k.p == 2) norm = std::sqrt(norm);
        for (int64_t j = 0; j < n; j++) {
          const double want = norm == 0 ? 0 : x.data<float>()[at(o, j, i)] / norm;
          EXPECT_NEAR(y.data<float>()[at(o, j, i)], want, 1e-6) << "vector (" << o << ", " << i << "), element " << j;
        }
      }
  }
}

// A group of one large constant value normalizes to exactly 0 (the output is the bias): its
// mean is exact, where a rounded mean divided by sqrt(eps) was off by 1e-2.
TEST(LowerNormalization, AConstantGroupNormalizesToItsBias) {
  Tensor x = test::rand_f32({2, 2, 2, 5}, 13);
  for (int64_t i = 0; i < 10; i++) x.data<float>()[i] = 186.01225f;  // sample 0, channel 0
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .initializer("scale", test::make_f32({2}, {1.16f, 0.5f}))
      .initializer("bias", test::make_f32({2}, {0.25f, -1.f}))
      .node("InstanceNormalization", {"x", "scale", "bias"}, {"y"})
      .output("y");
  const Tensor y = test::run_model(m.save("instance_norm_constant.onnx"), {{"x", x}})[0];
  for (int64_t i = 0; i < 10; i++) EXPECT_EQ(y.data<float>()[i], 0.25f) << "element " << i;
}

}  // namespace
}  // namespace ts
