#include <gtest/gtest.h>

#include <cmath>

#include "lower/lower_test_util.h"

namespace ts {
namespace {

using test::OnnxBuilder;

// 2-D pooling reference over one 1x1xHxW plane: max, or average with/without pad counting.
Tensor pool_ref(const Tensor& x, int k, int s, int pad, bool ceil_mode, const std::string& kind, bool count_pad) {
  const int H = x.shape[2], W = x.shape[3];
  auto out_dim = [&](int d) {
    double v = static_cast<double>(d + 2 * pad - k) / s + 1;
    return static_cast<int>(ceil_mode ? std::ceil(v - 1e-9) : std::floor(v));
  };
  const int OH = out_dim(H), OW = out_dim(W);
  Tensor y(DType::Float32, {1, 1, OH, OW});
  for (int oh = 0; oh < OH; oh++)
    for (int ow = 0; ow < OW; ow++) {
      double best = -INFINITY, sum = 0;
      int n = 0, n_pad = 0;
      for (int i = oh * s - pad; i < oh * s - pad + k; i++)
        for (int j = ow * s - pad; j < ow * s - pad + k; j++) {
          if (i < H + pad && j < W + pad) n_pad++;
          if (i < 0 || i >= H || j < 0 || j >= W) continue;
          double v = x.data<float>()[i * W + j];
          best = std::max(best, v);
          sum += v;
          n++;
        }
      y.data<float>()[oh * OW + ow] = static_cast<float>(kind == "max" ? best : sum / (count_pad ? n_pad : n));
    }
  return y;
}

Tensor run_pool(const std::string& op, const Tensor& x, std::map<std::string, test::AttrValue> attrs) {
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape).node(op, {"x"}, {"y"}, attrs).output("y");
  return test::run_model(m.save(op + ".onnx"), {{"x", x}})[0];
}

TEST(LowerPool, MaxPoolCeilModeWithPads) {
  Tensor x = test::rand_f32({1, 1, 7, 7}, 1);
  test::expect_close(run_pool("MaxPool", x, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                                             {"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"ceil_mode", int64_t{1}}}),
                     pool_ref(x, 3, 2, 1, true, "max", false));
}

TEST(LowerPool, AveragePoolCountIncludePad) {
  Tensor x = test::rand_f32({1, 1, 6, 6}, 2);
  std::map<std::string, test::AttrValue> a = {{"kernel_shape", std::vector<int64_t>{3, 3}},
                                              {"strides", std::vector<int64_t>{2, 2}},
                                              {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  test::expect_close(run_pool("AveragePool", x, a), pool_ref(x, 3, 2, 1, false, "avg", false));
  a["count_include_pad"] = int64_t{1};
  test::expect_close(run_pool("AveragePool", x, a), pool_ref(x, 3, 2, 1, false, "avg", true));
}

// 2 x 3 windows at stride 2 over 16 planes of 2 x 5: the rule leaves this pool scalar, and LLVM's
// own loop vectorizer (on by default in Halide 14) turned it into gathers and scatters that
// summed the second window of each row without its first column.
TEST(LowerPool, AveragePoolOfShortRowsInABatch) {
  Tensor x = test::rand_f32({16, 1, 2, 5}, 5);
  const Tensor y = run_pool("AveragePool", x, {{"kernel_shape", std::vector<int64_t>{2, 3}}, {"strides", std::vector<int64_t>{2, 2}}});
  ASSERT_EQ(y.shape, (Shape{16, 1, 1, 2}));
  for (int n = 0; n < 16; n++)
    for (int ow = 0; ow < 2; ow++) {
      double sum = 0;
      for (int h = 0; h < 2; h++)
        for (int w = 2 * ow; w < 2 * ow + 3; w++) sum += x.data<float>()[n * 10 + h * 5 + w];
      EXPECT_NEAR(y.data<float>()[n * 2 + ow], sum / 6, 1e-6) << "plane " << n << ", window " << ow;
    }
}

TEST(LowerPool, GlobalAverageAndMax) {
  Tensor x = test::rand_f32({2, 3, 4, 5}, 3);
  Tensor avg = run_pool("GlobalAveragePool", x, {}), mx = run_pool("GlobalMaxPool", x, {});
  ASSERT_EQ(avg.shape, (Shape{2, 3, 1, 1}));
  for (int p = 0; p < 6; p++) {
    double s = 0, best = -INFINITY;
    for (int k = 0; k < 20; k++) {
      s += x.data<float>()[p * 20 + k];
      best = std::max(best, static_cast<double>(x.data<float>()[p * 20 + k]));
    }
    EXPECT_NEAR(avg.data<float>()[p], s / 20, 1e-6);
    EXPECT_EQ(mx.data<float>()[p], static_cast<float>(best));
  }
}

// A window holding a NaN pools to NaN wherever the NaN lies in it, first or last, and with
// padding in the window; windows without one pool as before.
TEST(LowerPool, MaxPoolOfAWindowWithANaNIsNaN) {
  Tensor x = test::rand_f32({1, 1, 4, 4}, 4);
  x.set_f64(0, std::nan(""));   // row 0, column 0: the first element of window (0, 0)
  x.set_f64(15, std::nan(""));  // row 3, column 3: the last element of window (1, 1)
  const Tensor y = run_pool("MaxPool", x, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  EXPECT_TRUE(std::isnan(y.get_f64(0)));
  EXPECT_TRUE(std::isnan(y.get_f64(3)));
  const Tensor want = pool_ref(x, 2, 2, 0, false, "max", false);
  EXPECT_EQ(y.get_f64(1), want.get_f64(1));
  EXPECT_EQ(y.get_f64(2), want.get_f64(2));
  const Tensor padded = run_pool("MaxPool", x, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_TRUE(std::isnan(padded.get_f64(0)));
  EXPECT_TRUE(std::isnan(padded.get_f64(15)));
  EXPECT_FALSE(std::isnan(padded.get_f64(3)));  // rows 0-1, columns 2-3
}

}  // namespace
}  // namespace ts
