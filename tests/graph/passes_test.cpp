// Graph passes on real ONNX files, checked for structure and for unchanged results.
#include "graph/passes.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "graph/layout_plan.h"
#include "graph/onnx_import.h"
#include "graph/workload.h"
#include "lower/lower.h"
#include "runtime/compiled_model.h"
#include "runtime/graph_runner.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Graph import_raw(const std::string& path) { return test::import_model(path, /*passes=*/false); }

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  return ops;
}

// Expects `after` (a pass's result) to compute every output of `before` on random inputs.
void expect_same_results(const Graph& before, const Graph& after, uint64_t seed, const std::string& label, double atol = 1e-5) {
  const auto in = random_inputs(before, seed);
  const auto want = GraphRunner(before).run(in), got = GraphRunner(after).run(in);
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < want.size(); i++) {
    const auto cmp = compare_tensors(got[i], want[i], 1e-4, atol);
    EXPECT_TRUE(cmp.ok) << label << " output " << i << ": " << cmp.message;
  }
}

std::string conv_bn_model(bool second_consumer) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 6, 6})
      .initializer("w", test::rand_f32({4, 3, 3, 3}, 1))
      .initializer("cb", test::rand_f32({4}, 2))
      .initializer("scale", random_tensor(DType::Float32, {4}, 3, 0.5, 1.5))
      .initializer("beta", test::rand_f32({4}, 4))
      .initializer("mean", test::rand_f32({4}, 5))
      .initializer("var", random_tensor(DType::Float32, {4}, 6, 0.5, 1.5))
      .node("Conv", {"x", "w", "cb"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"bn"}, {{"epsilon", 1e-3}})
      .node("Identity", {"bn"}, {"id"})
      .node("Relu", {"id"}, {"y"})
      .output("y");
  if (second_consumer) b.node("Relu", {"c"}, {"z"}).output("z");
  return b.save(second_consumer ? "conv_bn_shared.onnx" : "conv_bn.onnx");
}

TEST(Passes, FoldsBatchNormIntoConvAndKeepsResults) {
  Graph before = import_raw(conv_bn_model(false));
  Graph after = before;
  EXPECT_EQ(remove_identity_ops(after), 1);
  EXPECT_EQ(fold_batchnorm_into_conv(after), 1);
  ASSERT_EQ(after.nodes.size(), 2u);
  EXPECT_EQ(after.nodes[0].op, "Conv");
  EXPECT_EQ(after.nodes[1].op, "Relu");
  std::map<std::string, Tensor> in = {{"x", test::rand_f32({1, 3, 6, 6}, 9)}};
  auto want = GraphRunner(before).run(in);
  auto got = GraphRunner(after).run(in);
  auto cmp = compare_tensors(got[0], want[0], 1e-5, 1e-5);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

TEST(Passes, KeepsBatchNormWhenConvOutputIsShared) {
  Graph g = import_raw(conv_bn_model(true));
  EXPECT_EQ(fold_batchnorm_into_conv(g), 0);
  run_default_passes(g);
  int bns = 0;
  for (const auto& n : g.nodes) bns += n.op == "BatchNormalization";
  EXPECT_EQ(bns, 1);
}

TEST(Passes, PretransposesGemmWeightsOfMatrixProductsOnly) {
  auto model = [](int64_t rows, const std::string& file) {
    OnnxBuilder b(13);
    b.input("x", DType::Float32, {rows, 24})
        .initializer("w", test::rand_f32({40, 24}, 1))
        .initializer("bias", test::rand_f32({40}, 2))
        .node("Gemm", {"x", "w", "bias"}, {"y"}, {{"transB", int64_t{1}}, {"alpha", 0.5}})
        .output("y");
    return import_raw(b.save(file));
  };
  Graph before = model(16, "gemm16.onnx");
  Graph after = before;
  EXPECT_EQ(pretranspose_gemm_weights(after), 1);
  EXPECT_EQ(after.nodes[0].attr_int("transB", 1), 0);
  EXPECT_EQ(after.tensor(after.nodes[0].inputs[1]).shape, (Shape{24, 40}));
  EXPECT_EQ(pretranspose_gemm_weights(after), 0);  // idempotent
  std::map<std::string, Tensor> in = {{"x", test::rand_f32({16, 24}, 9)}};
  auto cmp = compare_tensors(GraphRunner(after).run(in)[0], GraphRunner(before).run(in)[0], 1e-6, 1e-6);
  EXPECT_TRUE(cmp.ok) << cmp.message;
  Graph vector_product = model(1, "gemm1.onnx");  // keeps transB: its lowering reads rows of B along k
  EXPECT_EQ(pretranspose_gemm_weights(vector_product), 0);
}

// x.mean([2, 3]) after a conv (MNASNet, ShuffleNetV2): a pool, so the conv writes a blocked layout.
std::string conv_mean_model(const std::vector<int64_t>& axes, int64_t keepdims, const std::string& file) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 8, 5, 7})
      .initializer("w", test::rand_f32({32, 8, 1, 1}, 1))
      .node("Conv", {"x", "w"}, {"c"})
      .node("Relu", {"c"}, {"r"})
      .node("ReduceMean", {"r"}, {"y"}, {{"axes", axes}, {"keepdims", keepdims}})
      .output("y");
  return b.save(file);
}

TEST(Passes, ReduceMeanOverSpatialAxesBecomesAGlobalPool) {
  struct Case {
    std::vector<int64_t> axes;
    int64_t keepdims;
    int rewrites;
    std::vector<std::string> ops;
  };
  const std::vector<Case> cases = {{{2, 3}, 0, 1, {"Conv", "Relu", "GlobalAveragePool", "Flatten"}},
                                   {{-1, -2}, 1, 1, {"Conv", "Relu", "GlobalAveragePool"}},
                                   {{1}, 0, 0, {"Conv", "Relu", "ReduceMean"}},
                                   {{3}, 1, 0, {"Conv", "Relu", "ReduceMean"}}};
  for (size_t k = 0; k < cases.size(); k++) {
    const Case& c = cases[k];
    Graph before = import_raw(conv_mean_model(c.axes, c.keepdims, fmt::format("conv_mean{}.onnx", k)));
    Graph after = before;
    EXPECT_EQ(reduce_mean_to_global_pool(after), c.rewrites) << k;
    EXPECT_EQ(reduce_mean_to_global_pool(after), 0) << k;  // idempotent
    EXPECT_EQ(ops_of(after), c.ops) << k;
    EXPECT_EQ(after.tensor("y").shape, before.tensor("y").shape) << k;
    std::map<std::string, Tensor> in = {{"x", test::rand_f32({1, 8, 5, 7}, 9)}};
    auto cmp = compare_tensors(GraphRunner(after).run(in)[0], GraphRunner(before).run(in)[0], 1e-5, 1e-5);
    EXPECT_TRUE(cmp.ok) << k << ": " << cmp.message;
    if (c.rewrites == 1) {
      plan_layouts(after, 16);
      EXPECT_TRUE(after.tensor("r").layout.blocked()) << k << ": the conv's output feeds a pool now";
    }
  }
}

// PyTorch's layer_norm as exported before opset 17, over `axes` of x [2, 6, 8]; `affine` adds the
// Mul by gamma and Add of beta; `leak` makes x - mean a graph output too.
std::string decomposed_layer_norm(const std::vector<int64_t>& axes, bool affine, bool leak, const std::string& file) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 6, 8})
      .initializer("two", Tensor::scalar_f32(2.0f))
      .initializer("eps", Tensor::scalar_f32(1e-5f))
      .initializer("gamma", test::rand_f32({8}, 3))
      .initializer("beta", test::rand_f32({8}, 4))
      .node("ReduceMean", {"x"}, {"m"}, {{"axes", axes}})
      .node("Sub", {"x", "m"}, {"d"})
      .node("Pow", {"d", "two"}, {"p"})
      .node("ReduceMean", {"p"}, {"v"}, {{"axes", axes}})
      .node("Add", {"v", "eps"}, {"ve"})
      .node("Sqrt", {"ve"}, {"s"})
      .node("Div", {"d", "s"}, {affine ? "n" : "y"});
  if (affine) b.node("Mul", {"n", "gamma"}, {"g"}).node("Add", {"beta", "g"}, {"y"});
  b.output("y");
  if (leak) b.output("d");
  return b.save(file);
}

TEST(Passes, FusesTheLayerNormExportersSpellOut) {
  struct Case {
    std::vector<int64_t> axes;
    bool affine, leak;
    std::vector<std::string> ops;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{-1}, true, false, {"LayerNormalization"}, 2},
      {{1, 2}, false, false, {"LayerNormalization"}, 1},
      {{-1}, true, true, {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}, 0},
      {{1}, false, false, {"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div"}, 0}};
  for (size_t k = 0; k < cases.size(); k++) {
    const Case& c = cases[k];
    Graph before = import_raw(decomposed_layer_norm(c.axes, c.affine, c.leak, fmt::format("layer_norm{}.onnx", k)));
    Graph after = before;
    const int fused = c.ops.size() == 1 ? 1 : 0;
    EXPECT_EQ(fuse_layer_norm(after), fused) << k;
    EXPECT_EQ(fuse_layer_norm(after), 0) << k;  // idempotent
    EXPECT_EQ(ops_of(after), c.ops) << k;
    if (fused) {
      const Node& ln = after.nodes[0];
      EXPECT_EQ(ln.attr_int("axis", -1), c.axis) << k;
      EXPECT_NEAR(ln.attr_float("epsilon", 0), 1e-5, 1e-9) << k;
      EXPECT_EQ(ln.inputs, (c.affine ? std::vector<std::string>{"x", "gamma", "beta"} : std::vector<std::string>{"x"})) << k;
      EXPECT_EQ(ln.outputs, std::vector<std::string>{"y"}) << k;
    }
    expect_same_results(before, after, 9, fmt::format("case {}", k));
  }
}

// nn.GELU() as torch.onnx writes it before opset 20, in both operand orders, becomes one Gelu
// node computing the same; with an intermediate tensor read elsewhere it stays spelled out.
TEST(Passes, FusesTheGeluPyTorchSpellsOut) {
  for (int variant = 0; variant < 3; variant++) {
    const bool swapped = variant == 1, leak = variant == 2;
    OnnxBuilder b(13);
    b.input("x", DType::Float32, {2, 3, 8})
        .initializer("sqrt2", Tensor::scalar_f32(1.4142135381698608f))
        .initializer("one", Tensor::scalar_f32(1.f))
        .initializer("half", Tensor::scalar_f32(0.5f))
        .node("Div", {"x", "sqrt2"}, {"d"})
        .node("Erf", {"d"}, {"e"})
        .node("Add", swapped ? std::vector<std::string>{"one", "e"} : std::vector<std::string>{"e", "one"}, {"a"})
        .node("Mul", swapped ? std::vector<std::string>{"a", "x"} : std::vector<std::string>{"x", "a"}, {"m"})
        .node("Mul", swapped ? std::vector<std::string>{"half", "m"} : std::vector<std::string>{"m", "half"}, {"y"})
        .output("y");
    if (leak) b.output("e");
    Graph before = import_raw(b.save(fmt::format("gelu{}.onnx", variant)));
    Graph after = before;
    EXPECT_EQ(fuse_gelu(after), leak ? 0 : 1) << variant;
    EXPECT_EQ(fuse_gelu(after), 0) << variant;  // idempotent
    if (!leak) {
      ASSERT_EQ(after.nodes.size(), 1u) << variant;
      EXPECT_EQ(after.nodes[0].op, "Gelu");
      EXPECT_EQ(after.nodes[0].inputs, std::vector<std::string>{"x"});
      EXPECT_EQ(after.nodes[0].outputs, std::vector<std::string>{"y"});
    } else {
      EXPECT_EQ(after.nodes.size(), 5u);
    }
    expect_same_results(before, after, 3, fmt::format("variant {}", variant), 1e-6);
  }
}

// A ConvNeXt block's channels-last MLP: Transpose, LayerNorm, MatMul, Add, Relu, MatMul, Add,
// Transpose. Its 3 x 5 rows become one [15, C] region between two Reshapes that join the
// Transposes' copies; where a region tensor is also a graph output, or no copy follows, it stays.
TEST(Passes, FlattensChannelsLastMatMulRows) {
  for (int variant = 0; variant < 3; variant++) {
    const bool leak = variant == 1, no_copy_after = variant == 2;
    OnnxBuilder b(17);
    b.input("x", DType::Float32, {1, 8, 3, 5})
        .initializer("gamma", random_tensor(DType::Float32, {8}, 1, 0.5, 1.5))
        .initializer("beta", test::rand_f32({8}, 2))
        .initializer("w1", test::rand_f32({8, 12}, 3))
        .initializer("b1", test::rand_f32({12}, 4))
        .initializer("w2", test::rand_f32({12, 8}, 5))
        .initializer("b2", test::rand_f32({1, 8}, 6))
        .node("Transpose", {"x"}, {"t"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}})
        .node("LayerNormalization", {"t", "gamma", "beta"}, {"n"}, {{"axis", int64_t{-1}}})
        .node("MatMul", {"n", "w1"}, {"m1"})
        .node("Add", {"m1", "b1"}, {"a1"})
        .node("Relu", {"a1"}, {"r"})
        .node("MatMul", {"r", "w2"}, {"m2"})
        .node("Add", {"m2", "b2"}, {"a2"});
    if (no_copy_after) b.node("Relu", {"a2"}, {"y"});
    else b.node("Transpose", {"a2"}, {"y"}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
    b.output("y");
    if (leak) b.output("r");
    Graph before = import_raw(b.save(fmt::format("mlp{}.onnx", variant)));
    Graph after = before;
    const int rewritten = flatten_matmul_rows(after);
    EXPECT_EQ(flatten_matmul_rows(after), 0) << variant;  // idempotent
    if (variant == 0) {
      EXPECT_EQ(rewritten, 1);
      EXPECT_EQ(ops_of(after), (std::vector<std::string>{"Transpose", "Reshape", "LayerNormalization", "MatMul", "Add", "Relu",
                                               "MatMul", "Add", "Reshape", "Transpose"}));
      for (const Node& n : after.nodes)
        if (n.op == "MatMul") EXPECT_EQ(after.tensor(n.inputs[0]).shape.size(), 2u);
      EXPECT_EQ(after.tensor("a2::rows").shape, (Shape{15, 8}));
      EXPECT_EQ(after.tensor("a2").shape, (Shape{1, 3, 5, 8}));
      // Each Reshape joins its Transpose: as many steps as before.
      EXPECT_EQ(partition_graph(after).steps.size(), partition_graph(before).steps.size());
    } else if (leak) {
      // The region stops at r (also a graph output): the second MatMul alone has no copy before it.
      EXPECT_EQ(rewritten, 0);
    } else {
      EXPECT_EQ(rewritten, 0);
    }
    expect_same_results(before, after, 7, fmt::format("variant {}", variant));
  }
}

// ViT's patch embedding in small: a 4-channel image cut in 8 x 8 patches (depth 256) becomes
// gather-copy, MatMul, bias Add and copy back, with the same result; overlapping windows or
// more channels keep the Conv.
TEST(Passes, PatchConvsBecomeMatMuls) {
  for (int variant = 0; variant < 3; variant++) {
    const int64_t c = variant == 2 ? 8 : 4, stride = variant == 1 ? 4 : 8;
    OnnxBuilder b(13);
    b.input("x", DType::Float32, {1, c, 16, 24})
        .initializer("w", test::rand_f32({6, c, 8, 8}, 1))
        .initializer("bias", test::rand_f32({6}, 2))
        .node("Conv", {"x", "w", "bias"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{8, 8}}, {"strides", std::vector<int64_t>{stride, stride}}})
        .output("y");
    Graph before = import_raw(b.save(fmt::format("patches{}.onnx", variant)));
    Graph after = before;
    EXPECT_EQ(patches_to_matmul(after), variant == 0 ? 1 : 0) << variant;
    EXPECT_EQ(patches_to_matmul(after), 0) << variant;
    const auto ops = ops_of(after);
    if (variant == 0) {
      EXPECT_EQ(ops, (std::vector<std::string>{"Reshape", "Transpose", "Reshape", "MatMul", "Add", "Reshape", "Transpose"}));
      EXPECT_EQ(after.tensor(after.nodes[3].inputs[0]).shape, (Shape{2 * 3, 4 * 8 * 8}));
      EXPECT_EQ(after.tensor("y").shape, (Shape{1, 6, 2, 3}));
    } else {
      EXPECT_EQ(ops, std::vector<std::string>{"Conv"});
    }
    expect_same_results(before, after, 3, fmt::format("variant {}", variant));
  }
}

// Convs whose kernels have taps that read only padding: cut to the taps that read the input,
// with the same output shape, values and FLOPs (taps that read); a conv whose every tap reads
// for some output stays as it is.
TEST(Passes, ConvTapsThatReadOnlyPaddingAreDropped) {
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, dilations, pads;
    std::string auto_pad;
    Shape kernel_after;
  };
  const std::vector<Case> cases = {
      {{1, 4, 14, 14}, {6, 4, 3, 3}, {1, 1}, {24, 24}, {24, 24, 24, 24}, "", {1, 1}},  // dilation past the map
      {{1, 3, 12, 14}, {5, 3, 3, 3}, {1, 1}, {12, 6}, {12, 6, 12, 6}, "", {1, 3}},     // past it on one axis
      {{1, 2, 31, 1}, {4, 2, 7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}, "", {7, 1}},         // a 1-wide map
      {{1, 2, 9}, {3, 2, 5}, {3}, {4}, {}, "SAME_UPPER", {3}},                         // auto_pad resolved
      {{1, 2, 1}, {3, 2, 7}, {3}, {1}, {3, 6}, "", {4}},                             // stride skips taps 1, 2
      {{1, 3, 6, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, "", {3, 3}},          // every tap reads
  };
  for (size_t k = 0; k < cases.size(); k++) {
    const Case& c = cases[k];
    std::map<std::string, test::AttrValue> attrs = {{"strides", c.strides}, {"dilations", c.dilations}};
    if (c.auto_pad.empty()) attrs["pads"] = c.pads;
    else attrs["auto_pad"] = c.auto_pad;
    OnnxBuilder b(13);
    b.input("x", DType::Float32, c.x)
        .initializer("w", test::rand_f32(c.w, 1))
        .initializer("bias", test::rand_f32({c.w[0]}, 2))
        .node("Conv", {"x", "w", "bias"}, {"y"}, attrs)
        .output("y");
    Graph before = import_raw(b.save(fmt::format("taps{}.onnx", k)));
    Graph after = before;
    const bool cut = c.kernel_after != Shape(c.w.begin() + 2, c.w.end());
    EXPECT_EQ(drop_padding_taps(after), cut ? 1 : 0) << k;
    EXPECT_EQ(drop_padding_taps(after), 0) << k;
    const Shape& w = after.tensor(after.nodes[0].inputs[1]).shape;
    EXPECT_EQ(Shape(w.begin() + 2, w.end()), c.kernel_after) << k;
    EXPECT_EQ(after.tensor("y").shape, before.tensor("y").shape) << k;
    // The work is the taps that read the input, before the cut and after it.
    EXPECT_NEAR(node_flops(after, after.nodes[0]), node_flops(before, before.nodes[0]), 1) << k;
    if (k == 0) EXPECT_EQ(node_flops(before, before.nodes[0]), 2 * 6 * 14 * 14 * 4) << "1 tap of 9 reads";
    if (k + 1 == cases.size()) EXPECT_EQ(node_flops(before, before.nodes[0]), 2 * 4 * 3 * 16 * 16) << "taps read: 16 of 18 per axis";
    expect_same_results(before, after, 3, fmt::format("case {}", k));
  }
}

// A conv whose every tap reads padding (one column, 61 and 105 pads, dilation 30, stride 3: no
// output lands a tap on it) folds to its bias broadcast over the output, a graph output read by
// a Relu too; the compiled model computes what the JIT of the conv computes.
TEST(Passes, AConvReadingOnlyPaddingFoldsToItsBias) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 5, 1})
      .initializer("w", test::rand_f32({3, 5, 5}, 1))
      .initializer("bias", test::rand_f32({3}, 2))
      .node("Conv", {"x", "w", "bias"}, {"y"}, {{"strides", std::vector<int64_t>{3}}, {"dilations", std::vector<int64_t>{30}},
                                               {"pads", std::vector<int64_t>{61, 105}}})
      .node("Relu", {"y"}, {"z"})
      .output("y")
      .output("z");
  const std::string path = b.save("padding_only.onnx");
  Graph before = import_raw(path);
  Graph after = before;
  EXPECT_EQ(drop_padding_taps(after), 1);
  ASSERT_EQ(after.nodes.size(), 1u);
  EXPECT_EQ(after.nodes[0].op, "Relu");
  ASSERT_TRUE(after.tensor("y").value);
  EXPECT_EQ(after.tensor("y").shape, (Shape{2, 3, 16}));
  const Tensor& bias = *before.tensor("bias").value;
  for (int64_t e = 0; e < 2 * 3 * 16; e++) EXPECT_EQ(after.tensor("y").value->get_f64(e), bias.get_f64(e / 16 % 3)) << e;
  expect_same_results(before, after, 3, "padding only");
  const auto in = random_inputs(before, 4);
  const auto want = GraphRunner(before).run(in);
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  const auto got = CompiledModel(test::import_model(path), opts).run(in);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; i++) EXPECT_TRUE(compare_tensors(got[i], want[i], 1e-6, 1e-6).ok) << i;
}

// Strided ConvTransposes become phase convs with the same outputs: strides that divide the
// kernel and that do not (missing taps), output padding, pads cut by a Slice, output_shape and
// SAME padding, 1-D and 3-D, dilations that share a factor with the stride (phases of zeros
// only) and that do not; a grouped strided one stays. Stride-1 ones become one Conv of their
// groups with the kernel flipped, unless their pads crop the input.
TEST(Passes, ConvTransposesBecomePhaseConvs) {
  struct Case {
    Shape x, w;
    std::map<std::string, test::AttrValue> attrs;
    bool rewritten;
    int opset = 13;
  };
  using V = std::vector<int64_t>;
  const std::vector<Case> cases = {
      {{1, 4, 5, 6}, {4, 3, 4, 4}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, true},            // U-Net's 4x4 / 2
      {{1, 3, 5, 4}, {3, 5, 3, 3}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}, {"output_padding", V{1, 1}}}, true},
      {{1, 2, 4, 3}, {2, 3, 3, 2}, {{"strides", V{3, 2}}}, true},                                    // K < s on one axis
      {{1, 2, 4, 4}, {2, 2, 3, 3}, {{"strides", V{2, 2}}, {"output_shape", V{9, 8}}}, true},
      {{1, 2, 3, 3}, {2, 2, 3, 3}, {{"strides", V{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}, true},
      {{1, 2, 7}, {2, 4, 5}, {{"strides", V{2}}, {"pads", V{2, 1}}}, true},                           // 1-D
      {{1, 3, 5, 4}, {3, 2, 3, 3}, {{"strides", V{3, 2}}, {"pads", V{1, 0, 2, 1}}}, true, 9},       // Slice by attributes
      {{1, 2, 3, 3, 4}, {2, 2, 2, 3, 3}, {{"strides", V{2, 2, 1}}, {"pads", V{0, 1, 1, 0, 1, 1}}}, true},  // 3-D
      // Stride 1: one Conv, the kernel flipped; groups too; pads beyond the kernel (a crop) stay.
      {{1, 2, 5, 5}, {2, 3, 3, 3}, {{"strides", V{1, 1}}}, true},
      {{2, 37, 9, 6}, {37, 27, 3, 3}, {{"pads", V{1, 2, 0, 0}}}, true},
      {{1, 4, 5, 5}, {4, 1, 3, 3}, {{"group", int64_t{4}}, {"pads", V{1, 1, 1, 1}}}, true},
      {{1, 4, 6, 5}, {4, 1, 2, 3}, {{"group", int64_t{4}}, {"dilations", V{2, 3}}, {"pads", V{0, 2, 1, 3}}}, true},
      {{1, 3, 7}, {3, 2, 4}, {{"dilations", V{2}}, {"output_padding", V{0}}, {"pads", V{3, 1}}}, true},
      {{1, 2, 5, 5}, {2, 3, 3, 3}, {{"pads", V{3, 0, 0, 0}}}, false},
      {{1, 4, 5, 5}, {4, 1, 3, 3}, {{"strides", V{2, 2}}, {"group", int64_t{4}}}, false},
      {{1, 2, 5, 5}, {2, 3, 3, 3}, {{"strides", V{2, 2}}, {"dilations", V{2, 2}}}, true},
      {{1, 2, 5, 4}, {2, 3, 2, 3}, {{"strides", V{2, 3}}, {"dilations", V{3, 2}}, {"pads", V{1, 0, 0, 2}}}, true},
      {{2, 3, 9, 2}, {3, 4, 3, 5}, {{"strides", V{2, 2}}, {"dilations", V{1, 2}}, {"pads", V{0, 3, 1, 5}}}, true},  // W 2 -> 3
  };
  for (size_t k = 0; k < cases.size(); k++) {
    const Case& c = cases[k];
    const int64_t cout = c.w[1] * (c.attrs.count("group") ? 4 : 1);  // weight [Cin, Cout / group, k...]
    OnnxBuilder b(c.opset);
    b.input("x", DType::Float32, c.x)
        .initializer("w", test::rand_f32(c.w, 3))
        .initializer("bias", test::rand_f32({cout}, 4))
        .node("ConvTranspose", {"x", "w", "bias"}, {"y"}, c.attrs)
        .output("y");
    Graph before = import_raw(b.save(fmt::format("phases{}.onnx", k)));
    Graph after = before;
    EXPECT_EQ(transposed_convs_to_phases(after), c.rewritten ? 1 : 0) << k;
    EXPECT_EQ(transposed_convs_to_phases(after), 0) << k;
    if (c.rewritten) {
      EXPECT_EQ(after.nodes[0].op, "Conv") << k;
      EXPECT_EQ(std::count_if(after.nodes.begin(), after.nodes.end(), [](const Node& n) { return n.op == "ConvTranspose"; }), 0);
    }
    EXPECT_EQ(after.tensor("y").shape, before.tensor("y").shape) << k;
    expect_same_results(before, after, 3, fmt::format("case {}", k));
  }
}

// Training-mode Dropout of ratio 0 drops nothing (Swin as torchvision exports it); of 0.5 it stays.
TEST(Passes, TrainingDropoutOfRatioZeroIsTheIdentity) {
  OnnxBuilder b(13);
  Tensor yes(DType::Bool, {});
  yes.bytes[0] = 1;
  b.input("x", DType::Float32, {4})
      .initializer("zero", test::make_f32({}, {0.0f}))
      .initializer("half", test::make_f32({}, {0.5f}))
      .initializer("train", yes)
      .node("Dropout", {"x", "zero", "train"}, {"d"})
      .node("Relu", {"d"}, {"y"})
      .node("Dropout", {"x", "half", "train"}, {"z"})
      .output("y")
      .output("z");
  Graph g = import_raw(b.save("training_dropout.onnx"));
  EXPECT_EQ(remove_identity_ops(g), 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, "Relu");
  EXPECT_EQ(g.nodes[0].inputs[0], "x");
  EXPECT_EQ(g.nodes[1].op, "Dropout");
}

TEST(Passes, RemovesDropoutAndDeadNodes) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {4})
      .node("Dropout", {"x"}, {"d"})
      .node("Relu", {"d"}, {"y"})
      .node("Exp", {"x"}, {"unused"})
      .output("y");
  Graph g = import_raw(b.save("dropout.onnx"));
  run_default_passes(g);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "Relu");
  EXPECT_EQ(g.nodes[0].inputs[0], "x");
}

}  // namespace
}  // namespace ts
