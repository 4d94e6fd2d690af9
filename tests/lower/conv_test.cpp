#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace ts {
namespace {

using test::OnnxBuilder;

// Direct 2-D convolution on NCHW with groups, strides, dilations and asymmetric pads.
Tensor conv2d_ref(const Tensor& x, const Tensor& w, const Tensor* b, int group, std::array<int, 2> stride,
                  std::array<int, 2> dil, std::array<int, 4> pads) {
  const int N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int M = w.shape[0], CG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int OH = (H + pads[0] + pads[2] - dil[0] * (KH - 1) - 1) / stride[0] + 1;
  const int OW = (W + pads[1] + pads[3] - dil[1] * (KW - 1) - 1) / stride[1] + 1;
  Tensor y(DType::Float32, {N, M, OH, OW});
  for (int n = 0; n < N; n++)
    for (int m = 0; m < M; m++)
      for (int oh = 0; oh < OH; oh++)
        for (int ow = 0; ow < OW; ow++) {
          double s = b ? b->data<float>()[m] : 0.0;
          const int g = m / (M / group);
          for (int cg = 0; cg < CG; cg++)
            for (int kh = 0; kh < KH; kh++)
              for (int kw = 0; kw < KW; kw++) {
                int ih = oh * stride[0] - pads[0] + kh * dil[0], iw = ow * stride[1] - pads[1] + kw * dil[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += x.data<float>()[test::flat(x.shape, {n, g * CG + cg, ih, iw})] *
                     w.data<float>()[test::flat(w.shape, {m, cg, kh, kw})];
              }
          y.data<float>()[test::flat(y.shape, {n, m, oh, ow})] = static_cast<float>(s);
        }
  (void)C;
  return y;
}

TEST(LowerConv, GroupedStridedDilatedAsymmetricPads) {
  Tensor x = test::rand_f32({2, 4, 9, 8}, 1), w = test::rand_f32({6, 2, 3, 3}, 2), b = test::rand_f32({6}, 3);
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape).initializer("w", w).initializer("b", b);
  m.node("Conv", {"x", "w", "b"}, {"y"},
         {{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 1}}, {"dilations", std::vector<int64_t>{1, 2}},
          {"pads", std::vector<int64_t>{1, 0, 2, 3}}})
      .output("y");
  test::expect_close(test::run_model(m.save("conv.onnx"), {{"x", x}})[0],
                     conv2d_ref(x, w, &b, 2, {2, 1}, {1, 2}, {1, 0, 2, 3}), 1e-5, 1e-5);
}

TEST(LowerConv, DepthwiseSameUpper) {
  Tensor x = test::rand_f32({1, 3, 7, 7}, 4), w = test::rand_f32({3, 1, 3, 3}, 5);
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape).initializer("w", w);
  m.node("Conv", {"x", "w"}, {"y"}, {{"group", int64_t{3}}, {"auto_pad", std::string("SAME_UPPER")}}).output("y");
  test::expect_close(test::run_model(m.save("dw.onnx"), {{"x", x}})[0], conv2d_ref(x, w, nullptr, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}));
}

TEST(LowerConvTranspose, StrideTwoMatchesScatterReference) {
  Tensor x = test::rand_f32({1, 2, 3, 3}, 6), w = test::rand_f32({2, 3, 3, 3}, 7);
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape).initializer("w", w);
  m.node("ConvTranspose", {"x", "w"}, {"y"}, {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .output("y");
  // y[o, 2i + k - 1] += x[c, i] * w[c, o, k]: output (3-1)*2 + 3 - 2 = 5.
  Tensor want(DType::Float32, {1, 3, 5, 5});
  for (int c = 0; c < 2; c++)
    for (int o = 0; o < 3; o++)
      for (int ih = 0; ih < 3; ih++)
        for (int iw = 0; iw < 3; iw++)
          for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++) {
              int oh = ih * 2 + kh - 1, ow = iw * 2 + kw - 1;
              if (oh < 0 || oh >= 5 || ow < 0 || ow >= 5) continue;
              want.data<float>()[test::flat(want.shape, {0, o, oh, ow})] +=
                  x.data<float>()[test::flat(x.shape, {0, c, ih, iw})] * w.data<float>()[test::flat(w.shape, {c, o, kh, kw})];
            }
  test::expect_close(test::run_model(m.save("convt.onnx"), {{"x", x}})[0], want);
}

}  // namespace
}  // namespace ts
