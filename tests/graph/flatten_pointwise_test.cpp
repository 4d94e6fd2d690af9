// Pointwise convs over flattened pixels, and convs spanning the width as convs over rows, on
// real ONNX files: which convs the rule rewrites, the
// graph it leaves (rank-3 convs with their ReLU / Clip inside, Reshapes at both ends, an Identity
// converting a blocked input), and the compiled model (real Halide code, its Reshapes run as
// views) computing what the whole-graph JIT of the untouched graph computes.
#include "graph/flatten_pointwise.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "graph/layout_plan.h"
#include "runtime/compiled_model.h"
#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;
using V = std::vector<int64_t>;

const Node& producer(const Graph& g, const std::string& t) {
  for (const auto& n : g.nodes)
    if (std::find(n.outputs.begin(), n.outputs.end(), t) != n.outputs.end()) return n;
  ADD_FAILURE() << "no producer of " << t;
  return g.nodes.front();
}

// How many nodes write t (a twin made twice has two).
int producer_count(const Graph& g, const std::string& t) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) {
    return std::find(n.outputs.begin(), n.outputs.end(), t) != n.outputs.end();
  }));
}

// ShuffleNetV2's shapes in small: 20 and 12 channels do not block, rows of 6 and 10 pixels.
Graph plain_pointwise_model() {
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {1, 12, 10, 6})
      .initializer("w_a", test::rand_f32({20, 12, 1, 1}, 1))
      .initializer("b_a", test::rand_f32({20}, 2))
      .initializer("lo", Tensor::scalar_f32(0.f))
      .initializer("hi", Tensor::scalar_f32(0.5f))
      .initializer("w_dw", test::rand_f32({20, 1, 3, 3}, 3))
      .initializer("w_b", test::rand_f32({12, 20, 1, 1}, 4))
      .initializer("w_s", test::rand_f32({12, 12, 1, 1}, 5))
      .node("Relu", {"x"}, {"rx"})
      .node("Conv", {"rx", "w_a", "b_a"}, {"a"})
      .node("Clip", {"a", "lo", "hi"}, {"ca"})
      .node("Conv", {"ca", "w_dw"}, {"dw"}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{20}}})
      .node("Conv", {"dw", "w_b"}, {"b"})
      .node("Conv", {"rx", "w_s"}, {"s"}, {{"strides", V{2, 2}}})  // strided: not pointwise
      .output("b")
      .output("s");
  return test::import_model(m.save("pointwise.onnx"));
}

// Compiles g and expects its outputs to match the whole-graph JIT of `reference` on random
// inputs; returns the compile stats.
CompileStats expect_matches(const Graph& reference, const Graph& g, uint64_t seed) {
  auto in = random_inputs(reference, seed);
  const auto want = GraphRunner(reference).run(in);
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(g, opts);
  const auto got = m.run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); i++) {
    const Comparison c = compare_tensors(got[i], want[i], 1e-4, 1e-5);
    EXPECT_TRUE(c.ok) << g.outputs[i] << ": " << c.message;
  }
  return m.stats();
}

TEST(FlattenPointwise, RewritesPlainPointwiseConvsOverPixels) {
  const Graph plain = plain_pointwise_model();
  Graph g = plain;
  plan_layouts(g, 16);
  EXPECT_EQ(flatten_plain_convs(g), 2);
  EXPECT_EQ(flatten_plain_convs(g), 0);  // idempotent: the rewritten convs are rank 3

  // a = Conv(rx) and its Clip run on [1, 20, 60]; "ca" keeps its name and shape after a Reshape.
  const Node& back = producer(g, "ca");
  ASSERT_EQ(back.op, "Reshape");
  const Node& clip = producer(g, back.inputs[0]);
  ASSERT_EQ(clip.op, "Clip");
  EXPECT_EQ(g.tensor(clip.outputs[0]).shape, (Shape{1, 20, 60}));
  const Node& conv = producer(g, clip.inputs[0]);
  ASSERT_EQ(conv.op, "Conv");
  EXPECT_EQ(conv.attr_ints("kernel_shape"), V{1});
  EXPECT_EQ(g.tensor(conv.inputs[1]).shape, (Shape{20, 12, 1}));
  EXPECT_EQ(producer(g, conv.inputs[0]).op, "Reshape");
  EXPECT_EQ(g.tensor("ca").shape, (Shape{1, 20, 10, 6}));
  // The graph output b keeps its name and shape; the strided conv and the depthwise conv stay 2-D.
  EXPECT_EQ(producer(g, "b").op, "Reshape");
  EXPECT_EQ(g.tensor("b").shape, (Shape{1, 12, 10, 6}));
  EXPECT_EQ(producer(g, "s").op, "Conv");
  EXPECT_EQ(producer(g, "dw").op, "Conv");

  // Three Reshapes view their input (rx's, ca's and dw's); b's feeds the model output: a copy.
  EXPECT_EQ(expect_matches(plain, g, 7).views, 3);
}

// A pointwise conv reads another's output, and two read one tensor: the second conv of each pair
// reads the pixel twin the first made (its output's, or the shared input's), where a Reshape of
// its own closed a cycle of views (t::pixels -> t -> t::pixels).
TEST(FlattenPointwise, ConvsSharingATensorShareItsPixels) {
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {1, 12, 10, 6})
      .initializer("w_a", test::rand_f32({20, 12, 1, 1}, 1))
      .initializer("w_b", test::rand_f32({12, 20, 1, 1}, 2))
      .initializer("w_c", test::rand_f32({6, 20, 1, 1}, 3))
      .node("Relu", {"x"}, {"rx"})
      .node("Conv", {"rx", "w_a"}, {"a"})
      .node("Conv", {"a", "w_b"}, {"b"})
      .node("Conv", {"a", "w_c"}, {"c"})
      .output("b")
      .output("c");
  const Graph plain = test::import_model(m.save("pointwise_shared.onnx"));
  Graph g = plain;
  plan_layouts(g, 16);
  EXPECT_EQ(flatten_plain_convs(g), 3);
  EXPECT_EQ(producer_count(g, "a::pixels"), 1) << "a::pixels has one producer, the first conv";
  EXPECT_EQ(producer(g, "b").op, "Reshape");
  EXPECT_EQ(producer(g, producer(g, "b").inputs[0]).inputs[0], "a::pixels");
  EXPECT_EQ(producer(g, producer(g, "c").inputs[0]).inputs[0], "a::pixels");
  expect_matches(plain, g, 9);
}

// A pool's output that a conv reads blocked (16 channels) also feeds pointwise convs writing 36 and
// 20 plain channels: an Identity converts it to plain before the 36-channel conv's pixels'
// Reshape; the 20-channel conv (below kMinChannelsToConvert) keeps reading it blocked.
TEST(FlattenPointwise, ConvertsABlockedInputFirst) {
  const Graph plain = [] {
    OnnxBuilder m(13);
    m.input("x", DType::Float32, {1, 16, 12, 12})
        .initializer("w_blocked", test::rand_f32({16, 16, 3, 3}, 11))
        .initializer("w_plain", test::rand_f32({36, 16, 1, 1}, 12))
        .initializer("w_narrow", test::rand_f32({20, 16, 1, 1}, 13))
        .node("MaxPool", {"x"}, {"p"}, {{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}})
        .node("Conv", {"p", "w_blocked"}, {"c"}, {{"pads", V{1, 1, 1, 1}}})
        .node("Relu", {"c"}, {"y0"})
        .node("Conv", {"p", "w_plain"}, {"d"})
        .node("Relu", {"d"}, {"y1"})
        .node("Conv", {"p", "w_narrow"}, {"y2"})
        .output("y0")
        .output("y1")
        .output("y2");
    return test::import_model(m.save("blocked_input.onnx"));
  }();
  Graph g = plain;
  plan_layouts(g, 16);
  ASSERT_TRUE(g.tensor("p").layout.blocked());
  ASSERT_FALSE(g.tensor("d").layout.blocked());
  EXPECT_EQ(flatten_plain_convs(g), 1);
  EXPECT_EQ(producer(g, "y2").op, "Conv");
  EXPECT_EQ(producer(g, "y2").inputs[0], "p");
  // y1 <- Reshape <- Relu <- Conv <- Reshape <- Identity <- p
  const Node& back = producer(g, "y1");
  ASSERT_EQ(back.op, "Reshape");
  const Node& relu = producer(g, back.inputs[0]);
  ASSERT_EQ(relu.op, "Relu");
  const Node& pw = producer(g, relu.inputs[0]);
  ASSERT_EQ(pw.op, "Conv");
  const Node& pixels = producer(g, pw.inputs[0]);
  ASSERT_EQ(pixels.op, "Reshape");
  const Node& convert = producer(g, pixels.inputs[0]);
  EXPECT_EQ(convert.op, "Identity");
  EXPECT_EQ(convert.inputs[0], "p");
  EXPECT_FALSE(g.tensor(convert.outputs[0]).layout.blocked());

  EXPECT_EQ(expect_matches(plain, g, 8).views, 1);  // the pixels' Reshape of the converted copy
}

// Convs one column wide (no blocking: 10 to 12 channels): a grouped [5, 1] conv over
// [N, C, T, 1] drops the unit axis, a strided [1, 3] conv over a width of 3 folds it into the
// channels (Transpose, then Reshape), a Relu moving inside; a [3, 2] conv over 3 columns reads
// the first 2 (a Slice), a dilated [1, 2] one columns 0 and 2 (a Slice by 2); a conv padded
// along the width stays 2-D. The compiled model computes what the JIT of the untouched graph
// computes.
TEST(FlattenPointwise, ConvsOneColumnWideRunOverRows) {
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {2, 6, 40, 1})
      .input("z", DType::Float32, {2, 14, 30, 3})
      .initializer("w_unit", test::rand_f32({12, 1, 5, 1}, 21))
      .initializer("b_unit", test::rand_f32({12}, 22))
      .initializer("w_fold", test::rand_f32({10, 7, 1, 3}, 23))
      .initializer("w_padded", test::rand_f32({11, 14, 1, 3}, 24))
      .initializer("w_narrow", test::rand_f32({11, 14, 3, 2}, 25))
      .initializer("w_dilated", test::rand_f32({11, 14, 1, 2}, 26))
      .node("Relu", {"x"}, {"rx"})
      .node("Conv", {"rx", "w_unit", "b_unit"}, {"u"}, {{"pads", V{2, 0, 2, 0}}, {"group", int64_t{6}}, {"dilations", V{3, 1}}})
      .node("Relu", {"z"}, {"rz"})
      .node("Conv", {"rz", "w_fold"}, {"f"}, {{"strides", V{2, 2}}, {"group", int64_t{2}}})
      .node("Relu", {"f"}, {"rf"})
      .node("Conv", {"rz", "w_padded"}, {"p"}, {{"pads", V{0, 1, 0, 1}}, {"strides", V{1, 3}}})
      .node("Conv", {"rz", "w_narrow"}, {"n"}, {{"strides", V{1, 2}}})
      .node("Conv", {"rz", "w_dilated"}, {"d"}, {{"dilations", V{1, 2}}})
      .output("u")
      .output("rf")
      .output("p")
      .output("n")
      .output("d");
  const Graph plain = test::import_model(m.save("spanning.onnx"));
  Graph g = plain;
  plan_layouts(g, 16);
  EXPECT_EQ(flatten_plain_convs(g), 4);
  EXPECT_EQ(flatten_plain_convs(g), 0);

  const Node& unit = producer(g, producer(g, "u").inputs[0]);
  ASSERT_EQ(unit.op, "Conv");
  EXPECT_EQ(unit.attr_ints("kernel_shape"), V{5});
  EXPECT_EQ(unit.attr_ints("dilations"), V{3});
  EXPECT_EQ(g.tensor(unit.inputs[0]).shape, (Shape{2, 6, 40}));
  EXPECT_EQ(g.tensor(unit.inputs[1]).shape, (Shape{12, 1, 5}));

  const Node& relu = producer(g, producer(g, "rf").inputs[0]);
  ASSERT_EQ(relu.op, "Relu");
  const Node& fold = producer(g, relu.inputs[0]);
  ASSERT_EQ(fold.op, "Conv");
  EXPECT_EQ(fold.attr_ints("strides"), V{2});
  EXPECT_EQ(g.tensor(fold.inputs[0]).shape, (Shape{2, 42, 30}));
  EXPECT_EQ(g.tensor(fold.inputs[1]).shape, (Shape{10, 21, 1}));
  EXPECT_EQ(producer(g, producer(g, fold.inputs[0]).inputs[0]).op, "Transpose");
  EXPECT_EQ(g.tensor("rf").shape, (Shape{2, 10, 15, 1}));

  EXPECT_EQ(producer(g, "p").op, "Conv");
  for (const std::string y : {"n", "d"}) {
    const Node& conv = producer(g, producer(g, y).inputs[0]);
    ASSERT_EQ(conv.op, "Conv") << y;
    EXPECT_EQ(g.tensor(conv.inputs[0]).shape, (Shape{2, 28, 30})) << y;
    const Node& transpose = producer(g, producer(g, conv.inputs[0]).inputs[0]);
    ASSERT_EQ(transpose.op, "Transpose") << y;
    const Node& slice = producer(g, transpose.inputs[0]);
    ASSERT_EQ(slice.op, "Slice") << y;
    EXPECT_EQ(g.tensor(slice.outputs[0]).shape, (Shape{2, 14, 30, 2})) << y;
  }
  expect_matches(plain, g, 10);
}

// A pointwise conv reading a conv one column wide: both rules run in one pass in graph order, so
// the reader takes the twin its producer writes (a Reshape of its own to that twin made a second
// producer of it, and its workload an unbound input).
TEST(FlattenPointwise, APointwiseConvReadsAOneColumnConvsTwin) {
  OnnxBuilder m(17);
  m.input("x", DType::Float32, {2, 6, 8, 4})
      .initializer("w_wide", test::rand_f32({10, 6, 3, 3}, 31))
      .initializer("w_point", test::rand_f32({3, 10, 1, 1}, 32))
      .node("Relu", {"x"}, {"rx"})
      .node("Conv", {"rx", "w_wide"}, {"c"}, {{"pads", V{1, 0, 1, 0}}, {"strides", V{1, 3}}})
      .node("Conv", {"c", "w_point"}, {"y"})
      .output("y");
  const Graph plain = test::import_model(m.save("one_column_then_pointwise.onnx"));
  Graph g = plain;
  plan_layouts(g, 16);
  EXPECT_EQ(flatten_plain_convs(g), 2);
  EXPECT_EQ(producer_count(g, "c::pixels"), 1) << "c::pixels has one producer, the one-column conv";
  expect_matches(plain, g, 11);
}

}  // namespace
}  // namespace ts
