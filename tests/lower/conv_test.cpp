#include <algorithm>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "graph/layout_plan.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/workload.h"
#include "lower/lower_test_util.h"
#include "measure/workload_compiler.h"

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

// Direct 3-D convolution on NCDHW, stride 1, the same padding `p` on every side.
Tensor conv3d_ref(const Tensor& x, const Tensor& w, int p) {
  const int C = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4], M = w.shape[0], K = w.shape[2];
  const int OD = D + 2 * p - K + 1, OH = H + 2 * p - K + 1, OW = W + 2 * p - K + 1;
  Tensor y(DType::Float32, {1, M, OD, OH, OW});
  for (int m = 0; m < M; m++)
    for (int od = 0; od < OD; od++)
      for (int oh = 0; oh < OH; oh++)
        for (int ow = 0; ow < OW; ow++) {
          double s = 0;
          for (int c = 0; c < C; c++)
            for (int kd = 0; kd < K; kd++)
              for (int kh = 0; kh < K; kh++)
                for (int kw = 0; kw < K; kw++) {
                  const int id = od - p + kd, ih = oh - p + kh, iw = ow - p + kw;
                  if (id < 0 || id >= D || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                  s += x.data<float>()[test::flat(x.shape, {0, c, id, ih, iw})] *
                       w.data<float>()[test::flat(w.shape, {m, c, kd, kh, kw})];
                }
          y.data<float>()[test::flat(y.shape, {0, m, od, oh, ow})] = static_cast<float>(s);
        }
  return y;
}

// A 3x3x3 conv over 2 frames (R3D-18's last stage): two of each output frame's three frame taps
// and the border rows' row taps fall in the padding, and the reduction skips them (a predicate
// on frame and row taps); column taps only where the padded ones are a large share (6 columns:
// 2 / 18, not 70: 2 / 210) and the output is channel-blocked (32 channels: NCDHW16c between two
// convs), as a register tile unrolls them; a plain output (3 channels) vectorizes along the
// columns, where a skipped tap would be a masked vector. The result is the same either way; a
// blocked input whose every padded tap is skipped (6 columns) is read as it is, without a copy.
TEST(LowerConv, ThreeDimensionalConvSkipsPaddedTaps) {
  for (const int64_t channels : {3, 32})
    for (const int64_t width : {6, 70}) {
      SCOPED_TRACE(fmt::format("{} channels, width {}", channels, width));
      Tensor x = test::rand_f32({1, channels, 2, 5, width}, 8), w1 = test::rand_f32({channels, channels, 3, 3, 3}, 9);
      Tensor w2 = test::rand_f32({channels, channels, 1, 1, 1}, 10);
      OnnxBuilder m(13);
      m.input("x", DType::Float32, x.shape).initializer("w1", w1).initializer("w2", w2);
      m.node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>(6, 1)}});
      m.node("Conv", {"c1", "w2"}, {"y"}).output("y");
      const std::string path = m.save("conv3d.onnx");
      const Tensor mid = conv3d_ref(x, w1, 1);
      const int64_t plane = mid.size() / channels;
      Tensor want(DType::Float32, mid.shape);
      for (int64_t o = 0; o < channels; o++)
        for (int64_t c = 0; c < channels; c++)
          for (int64_t i = 0; i < plane; i++)
            want.data<float>()[o * plane + i] += w2.data<float>()[o * channels + c] * mid.data<float>()[c * plane + i];
      test::expect_close(test::run_model(path, {{"x", x}})[0], want, 1e-4, 1e-4);

      Graph g = import_onnx(path);
      run_default_passes(g);
      plan_layouts(g, 16);
      const Partition part = partition_graph(g);  // 32 channels: the input's conversion comes first
      const auto conv = std::find_if(part.workloads.begin(), part.workloads.end(),
                                     [](const Workload& w) { return w.name.rfind("Conv", 0) == 0; });
      ASSERT_NE(conv, part.workloads.end());
      const LoweredWorkload lw = lower_workload(*conv);
      int accumulators = 0, padded_copies = 0;
      for (const auto& [name, f] : Halide::Internal::find_transitive_calls(lw.outputs[0].function())) {
        padded_copies += name.find("_pad") != std::string::npos;
        if (name.find("_acc") == std::string::npos) continue;
        accumulators++;
        std::ostringstream text;
        text << f.update(0).predicate();
        // RDom dims innermost first: $x the column taps, $y the row taps, $z the frame taps.
        EXPECT_NE(text.str().find("_r$z"), std::string::npos) << text.str();
        EXPECT_NE(text.str().find("_r$y"), std::string::npos) << text.str();
        EXPECT_EQ(text.str().find("_r$x") != std::string::npos, width == 6 && channels == 32) << text.str();
      }
      EXPECT_EQ(accumulators, 1);
      EXPECT_EQ(padded_copies, channels == 32 && width == 6 ? 0 : 1);
    }
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
