// Winograd convs (lower/winograd_conv.cpp, scheduled by schedule/winograd_schedule.cpp) compute
// what the direct conv computes: whole models compiled with and without the plan, on shapes
// whose tiles do not divide the output, with bias, odd channel blocks, half-vector blocks,
// pads 0 and 2, a batch of 2, and dilations 2 and 4 (interleaved grids that the tiles do not divide);
// 3-D convs (3x3x3 and 1x3x3, padded frames or not, weights per tile row or once, a batch of 2).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/layout_plan.h"
#include "graph/winograd.h"
#include "runtime/compiled_model.h"
#include "support/onnx_builder.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using V = std::vector<int64_t>;

struct Case {
  int64_t n, cin, cout, h, w, pad, dilation = 1;
};

// x -> 1x1 conv -> 3x3 conv + bias (pads `pad`) -> Relu -> 1x1 conv -> y.
std::string save_model(const Case& c, const std::string& file) {
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {c.n, c.cin, c.h, c.w})
      .initializer("w0", test::rand_f32({c.cin, c.cin, 1, 1}, 1))
      .initializer("w1", test::rand_f32({c.cout, c.cin, 3, 3}, 2))
      .initializer("b1", test::rand_f32({c.cout}, 3))
      .initializer("w2", test::rand_f32({16, c.cout, 1, 1}, 4))
      .node("Conv", {"x", "w0"}, {"a"})
      .node("Conv", {"a", "w1", "b1"}, {"c"},
            {{"pads", V{c.pad, c.pad, c.pad, c.pad}}, {"dilations", V{c.dilation, c.dilation}}})
      .node("Relu", {"c"}, {"r"})
      .node("Conv", {"r", "w2"}, {"y"})
      .output("y");
  return b.save(file);
}

Tensor run(Graph g, const Tensor& x) {
  CompileOptions o;
  o.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(std::move(g), o);
  return m.run({{"x", x}}).at(0);
}

// The largest difference of b from a, and the largest magnitude of a.
std::pair<double, double> max_error(const Tensor& a, const Tensor& b) {
  double max_ref = 0, max_err = 0;
  for (int64_t i = 0; i < a.size(); i++) {
    max_ref = std::max(max_ref, std::fabs(double(a.data<float>()[i])));
    max_err = std::max(max_err, std::fabs(double(a.data<float>()[i]) - b.data<float>()[i]));
  }
  return {max_err, max_ref};
}

TEST(WinogradConv, ComputesWhatTheDirectConvComputes) {
  const std::vector<Case> cases = {
      {1, 32, 48, 14, 14, 1},  // 3 output blocks: a register tile of 2 blocks has a tail
      {1, 16, 32, 13, 17, 1},  // tiles overhang the output on both axes
      {2, 16, 16, 16, 16, 0},  // batch of 2, no padding (14x14 out)
      {1, 16, 16, 15, 15, 2},  // pads of 2 (17x17 out)
      {1, 24, 40, 16, 16, 1},  // 8-lane blocks (24 and 40 channels)
      // Dilated (weights of 1 MiB or more, streamed once: graph/winograd.h).
      {1, 96, 96, 13, 11, 2, 2},   // dilation 2: grids of 7 / 6 and 6 / 5 outputs
      {1, 128, 64, 20, 20, 4, 4},  // dilation 4 (FCN's layer4): 4 grids of 5 outputs an axis
      {1, 96, 80, 18, 18, 1, 2},   // dilation 2, pads of 1 (16 x 16 out)
  };
  for (const Case& c : cases) {
    const std::string what =
        fmt::format("n={} {}->{} {}x{} pad {} dilation {}", c.n, c.cin, c.cout, c.h, c.w, c.pad, c.dilation);
    const std::string path = save_model(c, "wino_conv.onnx");
    Graph direct = test::import_model(path);
    plan_layouts(direct, 16);
    Graph wino = direct;
    ASSERT_EQ(plan_winograd(wino, 1), 1) << what;
    const Tensor x = test::rand_f32({c.n, c.cin, c.h, c.w}, 9);
    const Tensor a = run(direct, x), b = run(wino, x);
    ASSERT_EQ(a.shape, b.shape) << what;
    const auto [max_err, max_ref] = max_error(a, b);
    EXPECT_GT(max_ref, 1.0) << what;
    EXPECT_LT(max_err, 1e-4 * max_ref) << what << ": max error " << max_err << " of " << max_ref;
  }
}

struct Case3d {
  int64_t n, cin, cout, frames, h, w, taps, frame_pad, pad;
};

// x -> 3-D conv [cout, cin, taps, 3, 3] + bias (pads frame_pad, pad, pad) -> Relu -> 1x1x1 conv -> y.
std::string save_model_3d(const Case3d& c, const std::string& file) {
  test::OnnxBuilder b(13);
  const V pads{c.frame_pad, c.pad, c.pad, c.frame_pad, c.pad, c.pad};
  b.input("x", DType::Float32, {c.n, c.cin, c.frames, c.h, c.w})
      .initializer("w1", test::rand_f32({c.cout, c.cin, c.taps, 3, 3}, 2))
      .initializer("b1", test::rand_f32({c.cout}, 3))
      .initializer("w2", test::rand_f32({16, c.cout, 1, 1, 1}, 4))
      .node("Conv", {"x", "w1", "b1"}, {"c"}, {{"pads", pads}})
      .node("Relu", {"c"}, {"r"})
      .node("Conv", {"r", "w2"}, {"y"})
      .output("y");
  return b.save(file);
}

TEST(WinogradConv, A3DConvComputesWhatTheDirectConvComputes) {
  const std::vector<Case3d> cases = {
      {1, 32, 48, 4, 14, 14, 3, 1, 1},  // R3D's 3x3x3: the first and last frames read a padded one
      {1, 16, 32, 3, 13, 17, 3, 0, 1},  // no frame padding (1 output frame of 3)
      {2, 16, 16, 3, 16, 16, 1, 0, 0},  // R(2+1)D's 1x3x3, a batch of 2, no padding
      {1, 64, 64, 2, 12, 12, 3, 1, 1},  // 1.77 MB of weights, 18 tiles: streamed once
      {1, 16, 24, 5, 9, 10, 3, 2, 1},   // frame pads of 2 (7 output frames, the outer two read one tap)
  };
  for (const Case3d& c : cases) {
    const std::string what = fmt::format("n={} {}->{} {}x{}x{} taps {} frame pad {} pad {}", c.n, c.cin, c.cout,
                                         c.frames, c.h, c.w, c.taps, c.frame_pad, c.pad);
    Graph direct = test::import_model(save_model_3d(c, "wino_conv3d.onnx"));
    plan_layouts(direct, 16);
    Graph wino = direct;
    ASSERT_EQ(plan_winograd(wino, 1), 1) << what;
    const Tensor x = test::rand_f32({c.n, c.cin, c.frames, c.h, c.w}, 9);
    const Tensor a = run(direct, x), b = run(wino, x);
    ASSERT_EQ(a.shape, b.shape) << what;
    const auto [max_err, max_ref] = max_error(a, b);
    EXPECT_GT(max_ref, 1.0) << what;
    EXPECT_LT(max_err, 1e-4 * max_ref) << what << ": max error " << max_err << " of " << max_ref;
  }
}

TEST(WinogradConv, AFileMarkingAConvItselfIsRefusedNamingTheNode) {
  // The plan's attribute is tensorsched's own: a model file whose Conv carries it (over an
  // ordinary weight) is refused at import, naming the node, before anything reads the weight as
  // a transformed one.
  test::OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 16, 28, 28})
      .initializer("w1", test::rand_f32({16, 16, 3, 3}, 2))
      .node("Conv", {"x", "w1"}, {"y"}, {{"pads", V{1, 1, 1, 1}}, {kWinogradAttr, int64_t{4}}})
      .output("y");
  const std::string path = b.save("wino_foreign.onnx");
  EXPECT_TRUE(test::throws_naming<Error>([&] { test::import_model(path); }, {"(Conv)", kWinogradAttr}));
}

}  // namespace
}  // namespace ts
