// The layout plan on a real ONNX file, and blocked tensors end to end: a small CNN with every
// op family the plan blocks (regular, strided, 1x1 and depthwise convs, pools, residual add,
// channel concat, global pool) compiled with the plan runs the same as the whole-graph JIT of
// the plain graph, and its workloads' keys carry the layouts.
#include "graph/layout_plan.h"

#include <gtest/gtest.h>

#include "graph/workload.h"
#include "runtime/compiled_model.h"
#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;
using V = std::vector<int64_t>;

// Compiles `planned` (plain's graph after plan_layouts) and expects each output to match the
// whole-graph JIT of `plain` on random inputs (seed `seed`); returns the compiled outputs.
std::vector<Tensor> expect_compiled_matches_plain(const Graph& plain, const Graph& planned, uint64_t seed,
                                                  double atol = 1e-5) {
  auto in = random_inputs(plain, seed);
  const auto want = GraphRunner(plain).run(in);
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel m(planned, opts);
  const auto got = m.run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); i++) {
    const Comparison c = compare_tensors(got[i], want[i], 1e-4, atol);
    EXPECT_TRUE(c.ok) << planned.outputs[i] << ": " << c.message;
  }
  return got;
}

Graph blocked_cnn() {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 20, 20})
      .initializer("w0", test::rand_f32({32, 3, 3, 3}, 1))
      .initializer("b0", test::rand_f32({32}, 2))
      .initializer("w1", test::rand_f32({32, 32, 3, 3}, 3))
      .initializer("wd", test::rand_f32({32, 1, 3, 3}, 4))
      .initializer("w2", test::rand_f32({16, 32, 1, 1}, 5))
      .initializer("w3", test::rand_f32({24, 48, 1, 1}, 6))
      .initializer("shape", Tensor::from_i64({1, -1}, {2}))
      .node("Conv", {"x", "w0", "b0"}, {"c0"}, {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}})
      .node("Relu", {"c0"}, {"r0"})
      .node("Conv", {"r0", "w1"}, {"c1"}, {{"pads", V{1, 1, 1, 1}}})
      .node("Add", {"c1", "r0"}, {"a1"})
      .node("MaxPool", {"a1"}, {"p1"}, {{"kernel_shape", V{3, 3}}, {"strides", V{1, 1}}, {"pads", V{1, 1, 1, 1}}})
      .node("Conv", {"p1", "wd"}, {"d1"}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{32}}})
      .node("Conv", {"d1", "w2"}, {"c2"})
      .node("Concat", {"d1", "c2"}, {"cat"}, {{"axis", int64_t{1}}})
      .node("Conv", {"cat", "w3"}, {"c3"})
      .node("GlobalAveragePool", {"c3"}, {"g"})
      .node("Reshape", {"g", "shape"}, {"y"})
      .output("y");
  return test::import_model(b.save("blocked_cnn.onnx"));
}

TEST(LayoutPlan, BlocksChainsOfConvPoolAndElementwiseOnly) {
  Graph g = blocked_cnn();
  const LayoutPlanStats st = plan_layouts(g, 16);
  // Blocked: every 32-, 16- and 48-channel activation between convs, pools, the add and the concat.
  for (const char* t : {"c0", "r0", "c1", "a1", "p1", "d1", "c2", "cat"})
    EXPECT_EQ(g.tensor(t).layout, (Layout{1, 16})) << t;
  // 24 channels block by half a vector; the pooled [1, 24, 1, 1] stays blocked although a
  // Reshape reads it (one pixel: the Reshape converts); the graph input and output keep theirs.
  EXPECT_EQ(g.tensor("c3").layout, (Layout{1, 8}));
  EXPECT_EQ(g.tensor("g").layout, (Layout{1, 8}));
  for (const char* t : {"x", "y"}) EXPECT_FALSE(g.tensor(t).layout.blocked()) << t;
  EXPECT_EQ(st.blocked_activations, 10);
  // Weights of convs writing blocked outputs are packed by their output-channel block.
  for (const char* t : {"w0", "w1", "wd", "w2"}) EXPECT_EQ(g.tensor(t).layout, (Layout{0, 16})) << t;
  EXPECT_EQ(g.tensor("w3").layout, (Layout{0, 8}));
  EXPECT_EQ(st.packed_weights, 5);
  // Idempotent, and block < 2 means plain.
  EXPECT_EQ(plan_layouts(g, 16).blocked_activations, 10);
  EXPECT_EQ(plan_layouts(g, 0).blocked_activations, 0);
  EXPECT_FALSE(g.tensor("c0").layout.blocked());
}

TEST(LayoutPlan, KeysCarryLayoutsAndBlockedCodeMatchesPlainJit) {
  Graph plain = blocked_cnn();
  Graph blocked = plain;
  plan_layouts(blocked, 16);
  const Partition pp = partition_graph(plain), pb = partition_graph(blocked);
  ASSERT_EQ(pp.workloads.size(), pb.workloads.size());
  int differing = 0;
  for (size_t i = 0; i < pp.workloads.size(); i++) differing += pp.workloads[i].exact_key != pb.workloads[i].exact_key;
  EXPECT_GE(differing, 6);
  EXPECT_NE(pb.workloads[0].exact_key.find("@1c16"), std::string::npos) << pb.workloads[0].exact_key;

  const auto got = expect_compiled_matches_plain(plain, blocked, 5);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].shape, (Shape{1, 24}));
}

// Matmuls of more than 4 rows with a constant B whose N is a multiple of 32 (the panel of two
// 16-lane vectors) store B as [N, K] panels; the others keep theirs. Compiled, the panelled
// workloads compute what the plain graph's JIT does.
TEST(LayoutPlan, StoresConstantMatmulWeightsAsPanels) {
  Graph plain = [] {
    OnnxBuilder m(13);
    m.input("x", DType::Float32, {2, 10, 24})
        .input("m", DType::Float32, {8, 24})
        .input("v", DType::Float32, {2, 24})
        .initializer("b_mm", test::rand_f32({24, 64}, 11))
        .initializer("b_gemm", test::rand_f32({24, 32}, 12))
        .initializer("b_gemv", test::rand_f32({24, 32}, 13))
        .initializer("b_odd", test::rand_f32({64, 40}, 14))
        .node("MatMul", {"x", "b_mm"}, {"y_mm"})
        .node("Relu", {"y_mm"}, {"r"})
        .node("MatMul", {"r", "b_odd"}, {"y_odd"})
        .node("Gemm", {"m", "b_gemm"}, {"y_gemm"}, {{"alpha", 0.5}})
        .node("Gemm", {"v", "b_gemv"}, {"y_gemv"})
        .output("y_odd")
        .output("y_gemm")
        .output("y_gemv");
    return test::import_model(m.save("matmuls.onnx"));
  }();
  Graph g = plain;
  const LayoutPlanStats st = plan_layouts(g, 16);
  EXPECT_EQ(st.matmul_panels, 2);
  const Node& mm = g.nodes[0];
  ASSERT_EQ(mm.op, "MatMul");
  EXPECT_EQ(mm.attr_int(kTransposedBAttr, 0), 1);
  const TensorInfo& bmm = g.tensor(mm.inputs[1]);
  EXPECT_EQ(bmm.shape, (Shape{64, 24}));
  EXPECT_EQ(bmm.layout, (Layout{0, 32}));
  // B[k = 5][n = 33] is now B[n = 33][k = 5].
  EXPECT_EQ(bmm.value->data<float>()[33 * 24 + 5], plain.tensor("b_mm").value->data<float>()[5 * 64 + 33]);
  EXPECT_FALSE(g.tensors.count("b_mm"));
  const Node& gemm = g.nodes[3];
  ASSERT_EQ(gemm.op, "Gemm");
  EXPECT_EQ(gemm.attr_int("transB", 0), 1);
  EXPECT_EQ(g.tensor(gemm.inputs[1]).layout, (Layout{0, 32}));
  // N = 40 and a 2-row matrix-vector product keep plain [K, N] / their own form.
  EXPECT_EQ(g.nodes[2].attr_int(kTransposedBAttr, 0), 0);
  EXPECT_FALSE(g.tensor("b_odd").layout.blocked());
  EXPECT_FALSE(g.tensor(g.nodes[4].inputs[1]).layout.blocked());
  // Idempotent: the second plan transposes nothing again.
  EXPECT_EQ(plan_layouts(g, 16).matmul_panels, 2);
  EXPECT_EQ(g.tensor(mm.inputs[1]).shape, (Shape{64, 24}));
  EXPECT_EQ(g.tensor(mm.inputs[1]).value->data<float>()[33 * 24 + 5], plain.tensor("b_mm").value->data<float>()[5 * 64 + 33]);

  const Partition p = partition_graph(g);
  bool panel_key = false;
  for (const auto& w : p.workloads) panel_key |= w.exact_key.find("@0c32") != std::string::npos;
  EXPECT_TRUE(panel_key);
  EXPECT_EQ(expect_compiled_matches_plain(plain, g, 7).size(), 3u);
}

// Grouped convs: 4 channels per group (ResNeXt) are widened to groups of one 16-channel block,
// zero weights outside the original groups; 32 per group read whole blocks as they are; 2 per
// group (a widening of 8) stays plain; 24 per group take half blocks. Compiled, the
// model computes what the plain graph's JIT does.
TEST(LayoutPlan, WidensNarrowGroupsToWholeBlocks) {
  Graph plain = [] {
    OnnxBuilder m(13);
    m.input("x", DType::Float32, {1, 32, 10, 10})
        .initializer("w_in", test::rand_f32({64, 32, 1, 1}, 21))
        .initializer("w_g4", test::rand_f32({64, 4, 3, 3}, 22))
        .initializer("w_g32", test::rand_f32({64, 32, 3, 3}, 23))
        .initializer("w_g2", test::rand_f32({64, 2, 3, 3}, 24))
        .initializer("w_split", test::rand_f32({16, 32, 3, 3}, 25))
        .initializer("b_g4", test::rand_f32({64}, 26))
        .initializer("w_h", test::rand_f32({48, 32, 1, 1}, 27))
        .initializer("w_g24", test::rand_f32({48, 24, 3, 3}, 28))
        .initializer("w_hout", test::rand_f32({16, 48, 1, 1}, 29))
        .node("Conv", {"x", "w_in"}, {"c0"})
        .node("Conv", {"c0", "w_g4", "b_g4"}, {"g4"}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{16}}})
        .node("Relu", {"g4"}, {"r4"})
        .node("Conv", {"r4", "w_g32"}, {"g32"}, {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}, {"group", int64_t{2}}})
        .node("Conv", {"g32", "w_g2"}, {"g2"}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{32}}})
        .node("Conv", {"g2", "w_split"}, {"gs"}, {{"group", int64_t{2}}})
        .node("Conv", {"x", "w_h"}, {"h0"})
        .node("Relu", {"h0"}, {"h1"})
        .node("Conv", {"h1", "w_g24"}, {"h2"}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{2}}})
        .node("Relu", {"h2"}, {"h3"})
        .node("Conv", {"h3", "w_hout"}, {"h4"})
        .output("gs")
        .output("h4");
    return test::import_model(m.save("grouped.onnx"));
  }();
  Graph g = plain;
  const LayoutPlanStats st = plan_layouts(g, 16);
  EXPECT_EQ(st.widened_groups, 1);
  const Node& g4 = test::node_writing(g, "g4");
  EXPECT_EQ(g4.attr_int("group", 1), 4);
  const TensorInfo& w4 = g.tensor(g4.inputs[1]);
  ASSERT_EQ(w4.shape, (Shape{64, 16, 3, 3}));
  // Output channel 37 is in original group 9, the second of wide group 2: its 4 input channels
  // sit at 4..7 of that group's 16, the rest is zero.
  const float* wide = w4.value->data<float>();
  const float* orig = plain.tensor("w_g4").value->data<float>();
  for (int c = 0; c < 16; c++)
    for (int k = 0; k < 9; k++)
      EXPECT_EQ(wide[(37 * 16 + c) * 9 + k], c >= 4 && c < 8 ? orig[(37 * 4 + c - 4) * 9 + k] : 0.f) << c << " " << k;
  EXPECT_FALSE(g.tensors.count("w_g4"));
  // The widened and the 32-per-group convs read blocked inputs; 2 per group reads a plain one.
  // The last conv's groups of 8 outputs (half a block) fit its output's half blocks.
  for (const char* t : {"c0", "r4", "g2"}) EXPECT_EQ(g.tensor(t).layout, (Layout{1, 16})) << t;
  EXPECT_FALSE(g.tensor("g32").layout.blocked());
  EXPECT_EQ(test::node_writing(g, "g2").attr_int("group", 1), 32);
  // 24 channels per group: the grouped conv's input and output, and the ReLUs next to them, take
  // half blocks (8), so each group fills three.
  for (const char* t : {"h0", "h1", "h2", "h3"}) EXPECT_EQ(g.tensor(t).layout, (Layout{1, 8})) << t;
  // Idempotent.
  EXPECT_EQ(plan_layouts(g, 16).widened_groups, 0);
  EXPECT_EQ(g.tensor("r4").layout, (Layout{1, 16}));

  EXPECT_EQ(expect_compiled_matches_plain(plain, g, 9).size(), 2u);
}

// A conv of 60 output channels read through a ReLU by another conv writes 64 (zero filters and
// biases), which then block; the reader's weight gets zero input channels. A graph output and a
// 20-channel conv (12 of 32 would be padding) keep theirs. Compiled, the outputs match the plain
// graph's JIT.
TEST(LayoutPlan, PadsConvChannelsToWholeBlocksBetweenConvs) {
  Graph plain = [] {
    OnnxBuilder m(13);
    m.input("x", DType::Float32, {1, 8, 12, 12})
        .initializer("w_a", test::rand_f32({60, 8, 3, 3}, 31))
        .initializer("b_a", test::rand_f32({60}, 32))
        .initializer("w_b", test::rand_f32({16, 60, 1, 1}, 33))
        .initializer("w_c", test::rand_f32({60, 8, 1, 1}, 34))
        .initializer("w_d", test::rand_f32({20, 8, 1, 1}, 35))
        .initializer("w_e", test::rand_f32({16, 20, 1, 1}, 36))
        .node("Conv", {"x", "w_a", "b_a"}, {"a"}, {{"pads", V{1, 1, 1, 1}}})
        .node("Relu", {"a"}, {"ra"})
        .node("Conv", {"ra", "w_b"}, {"b"})
        .node("Conv", {"x", "w_c"}, {"c"})
        .node("Conv", {"x", "w_d"}, {"d"})
        .node("Relu", {"d"}, {"rd"})
        .node("Conv", {"rd", "w_e"}, {"e"})
        .output("b")
        .output("c")
        .output("e");
    return test::import_model(m.save("padded.onnx"));
  }();
  Graph g = plain;
  const LayoutPlanStats st = plan_layouts(g, 16);
  EXPECT_EQ(st.padded_channels, 1);
  for (const char* t : {"a", "ra"}) {
    EXPECT_EQ(g.tensor(t).shape, (Shape{1, 64, 12, 12})) << t;
    EXPECT_EQ(g.tensor(t).layout, (Layout{1, 16})) << t;
  }
  const TensorInfo& wa = g.tensor(g.nodes[0].inputs[1]);
  const TensorInfo& ba = g.tensor(g.nodes[0].inputs[2]);
  const TensorInfo& wb = g.tensor(g.nodes[2].inputs[1]);
  ASSERT_EQ(wa.shape, (Shape{64, 8, 3, 3}));
  ASSERT_EQ(ba.shape, (Shape{64}));
  ASSERT_EQ(wb.shape, (Shape{16, 64, 1, 1}));
  EXPECT_EQ(wa.value->data<float>()[59 * 72 + 71], plain.tensor("w_a").value->data<float>()[59 * 72 + 71]);
  EXPECT_EQ(wa.value->data<float>()[60 * 72], 0.f);
  EXPECT_EQ(ba.value->data<float>()[63], 0.f);
  EXPECT_EQ(wb.value->data<float>()[5 * 64 + 59], plain.tensor("w_b").value->data<float>()[5 * 60 + 59]);
  EXPECT_EQ(wb.value->data<float>()[5 * 64 + 62], 0.f);
  for (const char* t : {"w_a", "b_a", "w_b"}) EXPECT_FALSE(g.tensors.count(t)) << t;
  EXPECT_EQ(g.tensor("c").shape, (Shape{1, 60, 12, 12}));
  EXPECT_EQ(g.tensor("d").shape, (Shape{1, 20, 12, 12}));
  EXPECT_EQ(plan_layouts(g, 16).padded_channels, 0);  // idempotent

  EXPECT_EQ(expect_compiled_matches_plain(plain, g, 10).size(), 3u);
}

// Convs with narrow rows and long reductions that the rule would leave plain (37 channels, which
// do not block; 32 read by a Flatten) write blocked twins, converted back by a Slice of the
// real channels and an Identity; a short conv stays plain. The compiled model computes the same.
TEST(LayoutPlan, ConvsThatRunSlowlyPlainWriteBlockedTwins) {
  Graph plain = [] {
    OnnxBuilder m(13);
    m.input("x", DType::Float32, {1, 96, 12, 5})
        .initializer("w_a", test::rand_f32({37, 96, 3, 3}, 41))
        .initializer("b_a", test::rand_f32({37}, 42))
        .initializer("w_b", test::rand_f32({32, 96, 3, 3}, 43))
        .initializer("w_c", test::rand_f32({37, 2, 1, 1}, 44))
        .node("Conv", {"x", "w_a", "b_a"}, {"a"}, {{"pads", V{1, 1, 1, 1}}, {"strides", V{1, 2}}})
        .node("Relu", {"a"}, {"y"})
        .node("Conv", {"x", "w_b"}, {"b"}, {{"pads", V{1, 1, 1, 1}}, {"strides", V{1, 2}}})
        .node("Flatten", {"b"}, {"z"})
        .node("Slice", {"x", "starts", "ends", "axes"}, {"x2"})
        .node("Conv", {"x2", "w_c"}, {"c"})
        .output("y")
        .output("z")
        .output("c");
    m.initializer("starts", Tensor::from_i64({0}, {1})).initializer("ends", Tensor::from_i64({2}, {1}))
        .initializer("axes", Tensor::from_i64({1}, {1}));
    return test::import_model(m.save("slow_plain.onnx"));
  }();
  Graph g = plain;
  EXPECT_EQ(plan_layouts(g, 16).slow_plain_convs, 2);
  EXPECT_EQ(g.tensor("a::blocked").shape, (Shape{1, 40, 12, 3}));  // half blocks: 3 zero filters, not 11
  EXPECT_EQ(g.tensor("a::blocked").layout, (Layout{1, 8}));
  EXPECT_EQ(g.tensor("b::blocked").layout, (Layout{1, 16}));
  EXPECT_FALSE(g.tensor("a").layout.blocked());
  EXPECT_FALSE(g.tensors.count("c::blocked"));  // a reduction of 2: plain runs it well
  std::map<std::string, std::string> op_of;
  for (const Node& n : g.nodes) op_of[n.outputs[0]] = n.op;
  EXPECT_EQ(op_of["a"], "Slice");
  EXPECT_EQ(op_of["b"], "Identity");
  EXPECT_EQ(plan_layouts(g, 16).slow_plain_convs, 0);  // idempotent
  EXPECT_EQ(expect_compiled_matches_plain(plain, g, 11).size(), 3u);
}

// With rows of several vectors too: a conv reading an activation for a plain-only reader (the
// phase conv of a ConvTranspose, read by its interleaving Reshape) writes a blocked twin; the
// same conv with a reduction of 8 stays plain.
TEST(LayoutPlan, WideConvsReadingActivationsWriteBlockedTwins) {
  Graph plain = [] {
    OnnxBuilder m(13);
    m.input("x", DType::Float32, {1, 16, 6, 40})
        .initializer("w_d", test::rand_f32({24, 16, 3, 3}, 51))
        .initializer("w_e", test::rand_f32({24, 8, 1, 1}, 52))
        .initializer("shape", Tensor::from_i64({1, 24, 240}, {3}))
        .node("Relu", {"x"}, {"r"})
        .node("Conv", {"r", "w_d"}, {"d"}, {{"pads", V{1, 1, 1, 1}}})
        .node("Reshape", {"d", "shape"}, {"y"})
        .node("Slice", {"r", "starts", "ends", "axes"}, {"r8"})
        .node("Conv", {"r8", "w_e"}, {"e"})
        .node("Reshape", {"e", "shape"}, {"z"})
        .output("y")
        .output("z");
    m.initializer("starts", Tensor::from_i64({0}, {1})).initializer("ends", Tensor::from_i64({8}, {1}))
        .initializer("axes", Tensor::from_i64({1}, {1}));
    return test::import_model(m.save("wide_plain.onnx"));
  }();
  Graph g = plain;
  EXPECT_EQ(plan_layouts(g, 16).slow_plain_convs, 1);
  EXPECT_EQ(g.tensor("d::blocked").shape, (Shape{1, 24, 6, 40}));  // 24 channels: blocks of 8
  EXPECT_EQ(g.tensor("d::blocked").layout, (Layout{1, 8}));
  EXPECT_FALSE(g.tensors.count("e::blocked"));
  EXPECT_EQ(expect_compiled_matches_plain(plain, g, 12).size(), 2u);
}

// A ConvNeXt block after a stem conv: depthwise 7x7 conv, permute to channels-last, LayerNorm,
// MLP, permute back, layer scale and residual add. The permutes read and write channel blocks as
// dense vectors, so the whole channels-first part is blocked and the compiled model runs the
// same as the plain JIT.
TEST(LayoutPlan, BlocksAroundChannelsLastTransposes) {
  Graph plain = [] {
    OnnxBuilder m(17);
    m.input("in", DType::Float32, {1, 8, 9, 9})
        .initializer("w_stem", test::rand_f32({32, 8, 1, 1}, 40))
        .initializer("w_dw", test::rand_f32({32, 1, 7, 7}, 41))
        .initializer("b_dw", test::rand_f32({32}, 42))
        .initializer("gamma", random_tensor(DType::Float32, {32}, 43, 0.5, 1.5))
        .initializer("beta", test::rand_f32({32}, 44))
        .initializer("w1", test::rand_f32({32, 64}, 45))
        .initializer("w2", test::rand_f32({64, 32}, 46))
        .initializer("scale", test::rand_f32({32, 1, 1}, 47))
        .node("Conv", {"in", "w_stem"}, {"x"})
        .node("Conv", {"x", "w_dw", "b_dw"}, {"dw"}, {{"pads", V{3, 3, 3, 3}}, {"group", int64_t{32}}})
        .node("Transpose", {"dw"}, {"nhwc"}, {{"perm", V{0, 2, 3, 1}}})
        .node("LayerNormalization", {"nhwc", "gamma", "beta"}, {"n"}, {{"axis", int64_t{-1}}})
        .node("MatMul", {"n", "w1"}, {"h"})
        .node("Relu", {"h"}, {"r"})
        .node("MatMul", {"r", "w2"}, {"o"})
        .node("Transpose", {"o"}, {"nchw"}, {{"perm", V{0, 3, 1, 2}}})
        .node("Mul", {"nchw", "scale"}, {"s"})
        .node("Add", {"s", "x"}, {"y0"})
        .node("Conv", {"y0", "w_dw"}, {"y"}, {{"pads", V{3, 3, 3, 3}}, {"group", int64_t{32}}})
        .output("y");
    return test::import_model(m.save("convnext_block.onnx"));
  }();
  Graph g = plain;
  plan_layouts(g, 16);
  for (const char* t : {"x", "dw", "nchw", "s", "y0"}) EXPECT_EQ(g.tensor(t).layout, (Layout{1, 16})) << t;
  EXPECT_FALSE(g.tensor("in").layout.blocked());  // the model's input keeps its layout

  expect_compiled_matches_plain(plain, g, 11, 1e-4);
}

// Graph inputs read by convs and graph outputs convs compute, of whole blocks, are converted by
// Identity steps to and from blocked twins where that pays (rows narrower than two vectors); a
// narrower input, an input only an elementwise op reads, an output no conv computes and a conv
// over wide rows of a graph input keep their plain tensors, and the model still computes what the
// plain JIT does.
TEST(LayoutPlan, ConvertsGraphInputsAndOutputsAtConvs) {
  Graph plain = [] {
    OnnxBuilder m(13);
    m.input("x", DType::Float32, {1, 32, 7, 7})
        .input("narrow", DType::Float32, {1, 8, 7, 7})
        .input("side", DType::Float32, {1, 16, 7, 7})
        .input("wide", DType::Float32, {1, 16, 2, 40})
        .initializer("w_w", test::rand_f32({16, 16, 1, 1}, 54))
        .initializer("w_a", test::rand_f32({64, 32, 1, 1}, 50))
        .initializer("w_dw", test::rand_f32({32, 1, 3, 3}, 51))
        .initializer("w_n", test::rand_f32({16, 8, 3, 3}, 52))
        .initializer("w_b", test::rand_f32({16, 64, 3, 3}, 53))
        .node("Conv", {"x", "w_a"}, {"a"})
        .node("Relu", {"a"}, {"ra"})             // graph output, also read by conv b
        .node("Conv", {"x", "w_dw"}, {"dw"}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{32}}})
        .node("Conv", {"narrow", "w_n"}, {"n"}, {{"pads", V{1, 1, 1, 1}}})
        .node("Conv", {"ra", "w_b"}, {"b"}, {{"pads", V{1, 1, 1, 1}}})
        .node("Add", {"b", "n"}, {"s"})           // graph output
        .node("Mul", {"side", "side"}, {"sq"})    // graph output: no conv behind it
        .node("Conv", {"wide", "w_w"}, {"wo"})    // graph output: 40 wide, runs plain
        .output("ra")
        .output("dw")
        .output("s")
        .output("sq")
        .output("wo");
    return test::import_model(m.save("graph_io_convs.onnx"));
  }();
  Graph g = plain;
  const LayoutPlanStats st = plan_layouts(g, 16);
  EXPECT_EQ(st.io_conversions, 4);  // x in; ra, dw and s out
  for (const char* t : {"x::blocked", "a", "ra::blocked", "dw::blocked", "b", "n", "s::blocked"})
    EXPECT_EQ(g.tensor(t).layout, (Layout{1, 16})) << t;
  for (const char* t : {"x", "narrow", "side", "wide", "ra", "dw", "s", "sq", "wo"})
    EXPECT_FALSE(g.tensor(t).layout.blocked()) << t;
  for (const char* t : {"sq::blocked", "narrow::blocked", "wide::blocked", "wo::blocked"}) EXPECT_FALSE(g.tensors.count(t)) << t;
  // Both convs read the twin; conv b reads ra's twin; the conversions are Identity nodes.
  EXPECT_EQ(test::node_writing(g, "a").inputs[0], "x::blocked");
  EXPECT_EQ(test::node_writing(g, "dw::blocked").inputs[0], "x::blocked");
  EXPECT_EQ(test::node_writing(g, "b").inputs[0], "ra::blocked");
  const auto identities = [](const Graph& gr) {
    return std::count_if(gr.nodes.begin(), gr.nodes.end(), [](const Node& n) { return n.op == "Identity"; });
  };
  EXPECT_EQ(identities(g), 4);
  EXPECT_EQ(plan_layouts(g, 16).io_conversions, 0);  // idempotent: no second twin
  EXPECT_EQ(identities(g), 4);
  EXPECT_EQ(g.tensor("x::blocked").layout, (Layout{1, 16}));

  EXPECT_EQ(expect_compiled_matches_plain(plain, g, 12, 1e-4).size(), 5u);
}

TEST(Layout, PackAndUnpackRoundTrip) {
  const Tensor t = test::rand_f32({2, 32, 3, 5}, 9);
  const Layout l{1, 16};
  EXPECT_EQ(storage_shape(l, t.shape), (Shape{2, 2, 3, 5, 16}));
  const Tensor p = pack(l, t, "t");
  // Element (n=1, c=17, h=2, w=4) sits at block 1, lane 1.
  const int64_t plain_at = ((1 * 32 + 17) * 3 + 2) * 5 + 4, packed_at = (((1 * 2 + 1) * 3 + 2) * 5 + 4) * 16 + 1;
  EXPECT_EQ(t.data<float>()[plain_at], p.data<float>()[packed_at]);
  EXPECT_EQ(unpack(l, p, t.shape, "t").bytes, t.bytes);
  EXPECT_NE(layout_error(Layout{1, 12}, t.shape), "");
  EXPECT_THROW(storage_shape(Layout{4, 2}, t.shape), Error);
  EXPECT_EQ(layout_suffix(l), "@1c16");
  EXPECT_EQ(layout_suffix(Layout{}), "");
}

}  // namespace
}  // namespace ts
