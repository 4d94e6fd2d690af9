// The Winograd plan (graph/winograd.h): its transforms compute a 3x3 correlation exactly, it
// marks the 3x3 stride-1 convs between blocked tensors that have enough tiles and no other, and
// a marked conv keeps its FLOP count; which output sizes pay depends on the thread count; 3-D
// convs are marked alike, each temporal tap's weight transformed as a 2-D one.
#include "graph/winograd.h"

#include <gtest/gtest.h>

#include <cmath>

#include "graph/layout_plan.h"
#include "graph/workload.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;
using V = std::vector<int64_t>;

TEST(Winograd, TransformsComputeA3x3CorrelationOfATile) {
  // One channel: Y = AT [U .* (BT d B)] A over a 6x6 tile d equals the 4x4 valid correlation.
  const Tensor w = test::rand_f32({1, 1, 3, 3}, 7), d = test::rand_f32({6, 6}, 8);
  const Tensor u = winograd_weights(w);
  ASSERT_EQ(u.shape, (Shape{1, 6, 6, 1}));
  double v[6][6], p[6][6];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      double s = 0;
      for (int k = 0; k < 6; k++)
        for (int l = 0; l < 6; l++) s += double(kWinogradBT[i][k]) * d.data<float>()[k * 6 + l] * kWinogradBT[j][l];
      v[i][j] = s;
      p[i][j] = s * u.data<float>()[i * 6 + j];
    }
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++) {
      double y = 0, direct = 0;
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) y += double(kWinogradAT[a][i]) * p[i][j] * kWinogradAT[b][j];
      for (int ky = 0; ky < 3; ky++)
        for (int kx = 0; kx < 3; kx++) direct += double(d.data<float>()[(a + ky) * 6 + b + kx]) * w.data<float>()[ky * 3 + kx];
      EXPECT_NEAR(y, direct, 1e-5) << "output (" << a << ", " << b << ")";
    }
}

// x[1, 32, spatial...] -> 1x1 conv -> the conv under test (attributes `attrs`, weight `k`) -> 1x1
// conv: the middle conv reads and writes blocked tensors.
Graph planned_nd(const std::string& file, const Shape& spatial, const Shape& k, std::map<std::string, test::AttrValue> attrs) {
  Shape x{1, 32}, w0{32, 32}, w2{16, k[0]};
  for (int64_t e : spatial) {
    x.push_back(e);
    w0.push_back(1);
    w2.push_back(1);
  }
  OnnxBuilder b(13);
  b.input("x", DType::Float32, x)
      .initializer("w0", test::rand_f32(w0, 1))
      .initializer("w1", test::rand_f32(k, 2))
      .initializer("w2", test::rand_f32(w2, 3))
      .node("Conv", {"x", "w0"}, {"a"})
      .node("Conv", {"a", "w1"}, {"c"}, attrs)
      .node("Conv", {"c", "w2"}, {"y"})
      .output("y");
  Graph g = test::import_model(b.save(file));
  plan_layouts(g, 16);
  return g;
}

// A 2-D conv at hw x hw.
Graph planned(const std::string& file, int64_t hw, const Shape& k, std::map<std::string, test::AttrValue> attrs) {
  return planned_nd(file, {hw, hw}, k, std::move(attrs));
}

TEST(Winograd, PlanMarksTheConvsThatPay) {
  const std::map<std::string, test::AttrValue> same{{"pads", V{1, 1, 1, 1}}};
  Graph g = planned("wino_yes.onnx", 28, {48, 32, 3, 3}, same);
  const double flops_before = node_flops(g, test::node_writing(g, "c"));
  EXPECT_EQ(plan_winograd(g, 1), 1);
  const Node& n = test::node_writing(g, "c");
  EXPECT_TRUE(is_winograd_conv(n));
  EXPECT_EQ(g.tensor(n.inputs[1]).shape, (Shape{48, 6, 6, 32}));
  EXPECT_EQ(g.tensor(n.inputs[1]).layout, (Layout{0, 16}));
  EXPECT_FALSE(g.tensors.count("w1")) << "the original weight has no reader left";
  EXPECT_EQ(node_flops(g, n), flops_before);
  EXPECT_EQ(plan_winograd(g, 1), 0) << "idempotent";

  // Not: 7x7 (4 tiles), stride 2, grouped, 1x1, a plain (unplanned) graph.
  EXPECT_EQ(plan_winograd(g = planned("wino_small.onnx", 7, {48, 32, 3, 3}, same), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned("wino_s2.onnx", 28, {48, 32, 3, 3}, {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned("wino_g2.onnx", 28, {48, 16, 3, 3}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{2}}}), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned("wino_1x1.onnx", 28, {48, 32, 1, 1}, {}), 1), 0);
  Graph plain = test::import_model((test::temp_dir() / "wino_yes.onnx").string());
  EXPECT_EQ(plan_winograd(plain, 1), 0);

  // Dilated: where the transformed weights stream once (256 x 32: 1.18 MB, 64 tiles), with pads up
  // to twice the dilation; not 48 x 32 (221 KB, tasks of tile rows), nor 256 x 32 at 56 x 56 (196
  // tiles: tile rows), nor pads beyond twice the dilation.
  const std::map<std::string, test::AttrValue> d2{{"pads", V{2, 2, 2, 2}}, {"dilations", V{2, 2}}};
  EXPECT_EQ(plan_winograd(g = planned("wino_d2.onnx", 28, {256, 32, 3, 3}, d2), 1), 1);
  EXPECT_EQ(plan_winograd(g = planned("wino_d4.onnx", 28, {256, 32, 3, 3}, {{"pads", V{4, 4, 4, 4}}, {"dilations", V{4, 4}}}), 1), 1);
  EXPECT_EQ(plan_winograd(g = planned("wino_d2_small.onnx", 28, {48, 32, 3, 3}, d2), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned("wino_d2_56.onnx", 56, {256, 32, 3, 3}, d2), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned("wino_d2_pad5.onnx", 28, {256, 32, 3, 3}, {{"pads", V{5, 5, 5, 5}}, {"dilations", V{2, 2}}}), 1), 0);
  // As DeepLabV3's ASPP conv, weights streamed once (1536 x 32: 7 MB transformed): at dilation
  // 24 over 33 x 33 the interleaved grids hold 1-2 outputs, 576 mostly empty tiles that multiply
  // 8x what the direct conv's input-reading taps do; at dilation 2 its 100 tiles are full.
  EXPECT_EQ(plan_winograd(g = planned("wino_d24_33.onnx", 33, {1536, 32, 3, 3}, {{"pads", V{24, 24, 24, 24}}, {"dilations", V{24, 24}}}), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned("wino_d2_33.onnx", 33, {1536, 32, 3, 3}, d2), 1), 1);
}

TEST(Winograd, PlanWeighsTheWeightStreamAgainstTheThreads) {
  // A 14x14 output (196 pixels) pays on 1 thread and not on 2: the direct conv computes twice
  // as fast there, while Winograd's 4x larger weights stream no faster. 28x28 pays on both.
  const std::map<std::string, test::AttrValue> same{{"pads", V{1, 1, 1, 1}}};
  const double min_pixels_2 = 16 * kDirectConvFlopsPerCore / kWinogradWeightStreamBytesPerSecond;
  ASSERT_GT(min_pixels_2, 14 * 14);
  ASSERT_LT(min_pixels_2 / 2, 14 * 14);
  Graph g = planned("wino_14.onnx", 14, {48, 32, 3, 3}, same);
  Graph g2 = g;
  EXPECT_EQ(plan_winograd(g2, 2), 0);
  EXPECT_FALSE(is_winograd_conv(test::node_writing(g2, "c")));
  EXPECT_EQ(plan_winograd(g, 1), 1);
  EXPECT_EQ(plan_winograd(g = planned("wino_28.onnx", 28, {48, 32, 3, 3}, same), 2), 1);
  EXPECT_EQ(plan_winograd(g = planned("wino_28b.onnx", 28, {48, 32, 3, 3}, same), 8), 0) << "8 cores: 784 pixels do not pay";
}

TEST(Winograd, A3DWeightHoldsEachTemporalTapTransformed) {
  const Tensor w = test::rand_f32({2, 3, 3, 3, 3}, 5);
  const Tensor u = winograd_weights(w);
  ASSERT_EQ(u.shape, (Shape{2, 3, 6, 6, 3}));
  for (int64_t co = 0; co < 2; co++)
    for (int64_t ci = 0; ci < 3; ci++)
      for (int64_t f = 0; f < 3; f++) {
        Tensor tap(DType::Float32, {1, 1, 3, 3});
        for (int k = 0; k < 9; k++) tap.data<float>()[k] = w.data<float>()[((co * 3 + ci) * 3 + f) * 9 + k];
        const Tensor ut = winograd_weights(tap);
        for (int k = 0; k < 36; k++)
          EXPECT_EQ(u.data<float>()[((co * 3 + f) * 36 + k) * 3 + ci], ut.data<float>()[k]) << co << " " << ci << " " << f << " " << k;
      }
}

// A 3-D conv at frames x hw x hw.
Graph planned_3d(const std::string& file, int64_t frames, int64_t hw, const Shape& k, std::map<std::string, test::AttrValue> attrs) {
  return planned_nd(file, {frames, hw, hw}, k, std::move(attrs));
}

TEST(Winograd, PlanMarks3DConvsCountingEveryFrame) {
  // R3D's 3x3x3 at 4 x 14 x 14 (784 pixels, 64 tiles in all) pays on 2 threads, as a 28 x 28 2-D
  // conv does; its weight holds the 3 taps transformed and its FLOPs are the 3-D conv's.
  const std::map<std::string, test::AttrValue> same{{"pads", V{1, 1, 1, 1, 1, 1}}};
  Graph g = planned_3d("wino3d_yes.onnx", 4, 14, {48, 32, 3, 3, 3}, same);
  const double flops_before = node_flops(g, test::node_writing(g, "c"));
  EXPECT_EQ(plan_winograd(g, 2), 1);
  const Node& n = test::node_writing(g, "c");
  EXPECT_TRUE(is_winograd_conv(n));
  EXPECT_EQ(g.tensor(n.inputs[1]).shape, (Shape{48, 3, 6, 6, 32}));
  EXPECT_EQ(n.attr_ints("kernel_shape", {}), (V{3, 3, 3}));
  EXPECT_EQ(node_flops(g, n), flops_before);
  // R(2+1)D's 1x3x3 (no frame padding).
  EXPECT_EQ(plan_winograd(g = planned_3d("wino3d_1x3x3.onnx", 4, 14, {48, 32, 1, 3, 3}, {{"pads", V{0, 1, 1, 0, 1, 1}}}), 2), 1);

  // Not: one 14 x 14 frame on 2 threads (196 pixels, as in 2-D); 1 x 7 x 7 (4 tiles); strides
  // (1, 2, 2); a frame dilation; frame pads that leave an output frame no tap; a 3x1x1 conv.
  EXPECT_EQ(plan_winograd(g = planned_3d("wino3d_one.onnx", 1, 14, {48, 32, 1, 3, 3}, {{"pads", V{0, 1, 1, 0, 1, 1}}}), 2), 0);
  EXPECT_EQ(plan_winograd(g = planned_3d("wino3d_7.onnx", 3, 7, {48, 32, 3, 3, 3}, same), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned_3d("wino3d_s2.onnx", 4, 28, {48, 32, 3, 3, 3}, {{"pads", V{1, 1, 1, 1, 1, 1}}, {"strides", V{1, 2, 2}}}), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned_3d("wino3d_d2.onnx", 4, 14, {48, 32, 3, 3, 3}, {{"pads", V{2, 1, 1, 2, 1, 1}}, {"dilations", V{2, 1, 1}}}), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned_3d("wino3d_pad3.onnx", 4, 14, {48, 32, 3, 3, 3}, {{"pads", V{3, 1, 1, 3, 1, 1}}}), 1), 0);
  EXPECT_EQ(plan_winograd(g = planned_3d("wino3d_3x1x1.onnx", 4, 14, {48, 32, 3, 1, 1}, {{"pads", V{1, 0, 0, 1, 0, 0}}}), 1), 0);
}

}  // namespace
}  // namespace ts
