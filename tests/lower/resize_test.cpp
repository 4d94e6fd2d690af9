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

Tensor resize(const Tensor& x, const std::string& mode, const std::string& ctm, std::vector<float> scales) {
  OnnxBuilder m(13);
  Tensor sc(DType::Float32, {static_cast<int64_t>(scales.size())});
  for (size_t i = 0; i < scales.size(); i++) sc.data<float>()[i] = scales[i];
  m.input("x", DType::Float32, x.shape).initializer("roi", Tensor(DType::Float32, {0})).initializer("scales", sc);
  m.node("Resize", {"x", "roi", "scales"}, {"y"}, {{"mode", mode}, {"coordinate_transformation_mode", ctm}}).output("y");
  return test::run_model(m.save("resize.onnx"), {{"x", x}})[0];
}

TEST(LowerResize, NearestUpsampleByTwo) {
  Tensor x = test::make_f32({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor y = resize(x, "nearest", "asymmetric", {1, 1, 2, 2});
  test::expect_close(y, test::make_f32({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}), 0, 0);
}

TEST(LowerResize, LinearHalfPixel) {
  Tensor x = test::make_f32({1, 1, 1, 2}, {0, 4});
  // half_pixel: x_in = (x_out + 0.5) / 2 - 0.5 -> -0.25, 0.25, 0.75, 1.25 (clamped to the edge).
  Tensor y = resize(x, "linear", "half_pixel", {1, 1, 1, 2});
  test::expect_close(y, test::make_f32({1, 1, 1, 4}, {0, 1, 3, 4}), 1e-6, 1e-6);
}

TEST(LowerDepthToSpace, DcrAndSpaceToDepthRoundTrip) {
  Tensor x(DType::Float32, {1, 8, 2, 3});
  for (int64_t i = 0; i < x.size(); i++) x.data<float>()[i] = static_cast<float>(i);
  OnnxBuilder m(13);
  m.input("x", DType::Float32, x.shape)
      .node("DepthToSpace", {"x"}, {"d"}, {{"blocksize", int64_t{2}}, {"mode", std::string("DCR")}})
      .node("SpaceToDepth", {"d"}, {"y"}, {{"blocksize", int64_t{2}}})
      .output("d")
      .output("y");
  auto out = test::run_model(m.save("d2s.onnx"), {{"x", x}});
  ASSERT_EQ(out[0].shape, (Shape{1, 2, 4, 6}));
  // DCR: d[c][2h+i][2w+j] = x[(2i+j)*2 + c][h][w]
  EXPECT_EQ(out[0].data<float>()[test::flat(out[0].shape, {0, 1, 3, 4})], x.data<float>()[test::flat(x.shape, {0, (2 * 1 + 0) * 2 + 1, 1, 2})]);
  test::expect_close(out[1], x, 0, 0);
}

Tensor grid_sample(const Tensor& x, const Tensor& grid, const std::string& mode, const std::string& padding, int64_t align) {
  OnnxBuilder m(16);
  m.input("x", DType::Float32, x.shape).input("grid", DType::Float32, grid.shape);
  m.node("GridSample", {"x", "grid"}, {"y"}, {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align}}).output("y");
  return test::run_model(m.save("grid_sample.onnx"), {{"x", x}, {"grid", grid}})[0];
}

// A grid of every pixel centre (align_corners: -1 and 1 are the corner pixels) reads the input
// back in every mode.
TEST(LowerGridSample, AnIdentityGridReadsTheInputBack) {
  const Tensor x = test::rand_f32({2, 3, 4, 5}, 7);
  Tensor grid(DType::Float32, {2, 4, 5, 2});
  for (int64_t n = 0; n < 2; n++)
    for (int64_t h = 0; h < 4; h++)
      for (int64_t w = 0; w < 5; w++) {
        grid.data<float>()[test::flat(grid.shape, {n, h, w, 0})] = -1.f + 2.f * static_cast<float>(w) / 4.f;
        grid.data<float>()[test::flat(grid.shape, {n, h, w, 1})] = -1.f + 2.f * static_cast<float>(h) / 3.f;
      }
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    SCOPED_TRACE(mode);
    test::expect_close(grid_sample(x, grid, mode, "zeros", 1), x, 1e-5, 1e-5);
  }
}

// Points left of, right of and inside a row [1, 2, 3, 4] (pixel coordinates -0.5, 4.5, 1.5 with
// align_corners 0): zeros reads 0 past the edge, border clamps, reflection folds 4.5 to 2.5.
TEST(LowerGridSample, PaddingModesAtAndPastTheEdges) {
  const Tensor x = test::make_f32({1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor grid = test::make_f32({1, 1, 3, 2}, {-1.f, 0.f, 1.5f, 0.f, 0.f, 0.f});
  test::expect_close(grid_sample(x, grid, "bilinear", "zeros", 0), test::make_f32({1, 1, 1, 3}, {0.5f, 0.f, 2.5f}));
  test::expect_close(grid_sample(x, grid, "bilinear", "border", 0), test::make_f32({1, 1, 1, 3}, {1.f, 4.f, 2.5f}));
  test::expect_close(grid_sample(x, grid, "bilinear", "reflection", 0), test::make_f32({1, 1, 1, 3}, {1.f, 3.5f, 2.5f}));
  // Nearest rounds half to even: -0.5 -> 0, 4.5 -> 4 (outside), 1.5 -> 2.
  test::expect_close(grid_sample(x, grid, "nearest", "zeros", 0), test::make_f32({1, 1, 1, 3}, {1.f, 0.f, 3.f}), 0, 0);
}

// A grid that is not [N, H_out, W_out, 2] over the input's batch is refused, naming the node.
TEST(LowerGridSample, AGridOfTheWrongShapeIsRefusedNamingTheNode) {
  const Tensor x = test::rand_f32({2, 1, 3, 4}, 2);
  for (const Shape& grid_shape : {Shape{2, 1, 3, 3}, Shape{1, 1, 3, 2}}) {
    SCOPED_TRACE(shape_str(grid_shape));
    EXPECT_TRUE(test::throws_naming([&] { grid_sample(x, test::rand_f32(grid_shape, 3), "bilinear", "zeros", 0); },
                                    {"GridSample", "grid"}));
  }
}

// A 2-D linear resize runs one axis at a time (a per-axis stage before the output); it computes
// the bilinear half-pixel formula, each axis's neighbours clamped to the edge.
TEST(LowerResize, TwoAxesLinearRunsOneAxisAtATime) {
  const Tensor x = test::rand_f32({1, 2, 3, 4}, 3);
  const Tensor y = resize(x, "linear", "half_pixel", {1, 1, 2.5f, 2});
  ASSERT_EQ(y.shape, (Shape{1, 2, 7, 8}));
  auto taps = [](int64_t o, double scale, int64_t in, int64_t& i0, int64_t& i1) {
    const double v = (static_cast<double>(o) + 0.5) / scale - 0.5, f = std::floor(v);
    i0 = std::clamp<int64_t>(static_cast<int64_t>(f), 0, in - 1);
    i1 = std::clamp<int64_t>(static_cast<int64_t>(f) + 1, 0, in - 1);
    return v - f;
  };
  Tensor want(DType::Float32, y.shape);
  for (int64_t c = 0; c < 2; c++)
    for (int64_t h = 0; h < 7; h++)
      for (int64_t w = 0; w < 8; w++) {
        int64_t h0, h1, w0, w1;
        const double rh = taps(h, 2.5, 3, h0, h1), rw = taps(w, 2, 4, w0, w1);
        auto at = [&](int64_t i, int64_t j) { return static_cast<double>(x.data<float>()[test::flat(x.shape, {0, c, i, j})]); };
        const double v = (1 - rh) * ((1 - rw) * at(h0, w0) + rw * at(h0, w1)) + rh * ((1 - rw) * at(h1, w0) + rw * at(h1, w1));
        want.data<float>()[test::flat(y.shape, {0, c, h, w})] = static_cast<float>(v);
      }
  test::expect_close(y, want, 1e-5, 1e-6);
  OnnxBuilder m(13);
  Tensor sc(DType::Float32, {4});
  for (int k = 0; k < 4; k++) sc.data<float>()[k] = std::vector<float>{1, 1, 2.5f, 2}[k];
  m.input("x", DType::Float32, x.shape).initializer("roi", Tensor(DType::Float32, {0})).initializer("scales", sc);
  m.node("Resize", {"x", "roi", "scales"}, {"y"}, {{"mode", std::string("linear")}}).output("y");
  const Graph g = test::import_model(m.save("resize_2d.onnx"));
  const Partition p = partition_graph(g);
  ASSERT_EQ(p.workloads.size(), 1u);
  bool per_axis_stage = false;
  for (const auto& f : lower_workload(p.workloads[0]).outputs)
    for (const auto& [name, fn] : Halide::Internal::find_transitive_calls(f.function()))
      per_axis_stage |= name.find("_axis3") != std::string::npos && fn.has_update_definition();
  EXPECT_TRUE(per_axis_stage) << "no reduction stage over the innermost axis's taps";
}

}  // namespace
}  // namespace ts
