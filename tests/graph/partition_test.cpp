// Partition of real ONNX files into workloads: fusion, dedup by exact key, class keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "graph/onnx_import.h"
#include "graph/layout_plan.h"
#include "graph/passes.h"
#include "graph/workload.h"
#include "lower/lower.h"
#include "support/onnx_builder.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Graph load(const std::string& path) { return test::import_model(path); }

// x -> Conv -> Relu -> Conv -> Add(residual x) -> Relu -> GlobalAveragePool -> Flatten -> Gemm
std::string residual_block(int hw) {
  OnnxBuilder b(13);
  auto pads = std::vector<int64_t>{1, 1, 1, 1};
  b.input("x", DType::Float32, {1, 8, hw, hw})
      .initializer("w1", test::rand_f32({8, 8, 3, 3}, 1))
      .initializer("w2", test::rand_f32({8, 8, 3, 3}, 2))
      .initializer("fc", test::rand_f32({10, 8}, 3))
      .node("Conv", {"x", "w1"}, {"c1"}, {{"pads", pads}})
      .node("Relu", {"c1"}, {"r1"})
      .node("Conv", {"r1", "w2"}, {"c2"}, {{"pads", pads}})
      .node("Add", {"c2", "x"}, {"s"})
      .node("Relu", {"s"}, {"r2"})
      .node("GlobalAveragePool", {"r2"}, {"p"})
      .node("Flatten", {"p"}, {"f"})
      .node("Gemm", {"f", "fc"}, {"y"}, {{"transB", int64_t{1}}})
      .output("y");
  return b.save("block" + std::to_string(hw) + ".onnx");
}

TEST(Partition, FusesElementwiseChainsIntoAnchors) {
  Graph g = load(residual_block(6));
  Partition p = partition_graph(g);
  std::vector<std::string> names;
  for (const auto& s : p.steps) names.push_back(p.workloads[s.workload].name);
  EXPECT_EQ(names, (std::vector<std::string>{"Conv+Relu", "Conv+Add+Relu", "GlobalAveragePool", "Flatten", "Gemm"}));
  // The residual input and the weights are inputs of the fused workload, in first-use order.
  EXPECT_EQ(p.steps[1].inputs, (std::vector<std::string>{"r1", "w2", "x"}));
  EXPECT_EQ(p.steps[1].outputs, (std::vector<std::string>{"r2"}));
  // 8 x 8 channels of a 3 x 3 conv over 6 x 6, pads 1: 16 of 18 taps read per axis; then the Relu.
  EXPECT_EQ(p.workloads[p.steps[0].workload].flops, 2 * 8 * 8 * 16 * 16 + 8 * 6 * 6);
}

// ShuffleNetV2's block tail: one half of x passes, the other is transformed, then the halves are
// concatenated and channel-shuffled (Reshape, Transpose, Reshape). The data movement after the
// passing half's Slice is one workload (one copy), up to a tensor with two readers.
TEST(Partition, FusesDataMovementChainsIntoOneCopy) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 8, 4, 4})
      .initializer("lo", Tensor::from_i64({0}, {1}))
      .initializer("mid", Tensor::from_i64({4}, {1}))
      .initializer("hi", Tensor::from_i64({8}, {1}))
      .initializer("axis", Tensor::from_i64({1}, {1}))
      .initializer("split", Tensor::from_i64({1, 2, 4, 4, 4}, {5}))
      .initializer("merge", Tensor::from_i64({1, 8, 4, 4}, {4}))
      .node("Slice", {"x", "lo", "mid", "axis"}, {"a"})
      .node("Slice", {"x", "mid", "hi", "axis"}, {"b"})
      .node("Relu", {"b"}, {"rb"})
      .node("Concat", {"a", "rb"}, {"c"}, {{"axis", int64_t{1}}})
      .node("Reshape", {"c", "split"}, {"s"})
      .node("Transpose", {"s"}, {"t"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}})
      .node("Reshape", {"t", "merge"}, {"y"})
      .node("Relu", {"y"}, {"z1"})
      .node("Sigmoid", {"y"}, {"z2"})
      .output("z1")
      .output("z2");
  Partition p = partition_graph(load(b.save("shuffle.onnx")));
  std::vector<std::string> names;
  for (const auto& st : p.steps) names.push_back(p.workloads[st.workload].name);
  EXPECT_EQ(names, (std::vector<std::string>{"Slice", "Relu", "Slice+Concat+Reshape+Transpose+Reshape", "Relu", "Sigmoid"}));
}

TEST(Partition, IdenticalWorkloadsShareOneEntry) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 4, 5, 5})
      .initializer("w1", test::rand_f32({4, 4, 1, 1}, 1))
      .initializer("w2", test::rand_f32({4, 4, 1, 1}, 2))
      .node("Conv", {"x", "w1"}, {"a"})
      .node("Relu", {"a"}, {"b"})
      .node("Conv", {"b", "w2"}, {"c"})
      .node("Relu", {"c"}, {"y"})
      .output("y");
  Partition p = partition_graph(load(b.save("twice.onnx")));
  ASSERT_EQ(p.workloads.size(), 1u);
  EXPECT_EQ(p.workloads[0].count, 2);
  EXPECT_EQ(p.steps.size(), 2u);
}

TEST(Partition, ExactKeyHasShapesClassKeyDoesNot) {
  Partition small = partition_graph(load(residual_block(6)));
  Partition large = partition_graph(load(residual_block(10)));
  const Workload &a = small.workloads[0], &b = large.workloads[0];
  EXPECT_NE(a.exact_key, b.exact_key);
  EXPECT_EQ(a.class_key, b.class_key);
  EXPECT_NE(a.exact_key.find("[1,8,6,6]"), std::string::npos) << a.exact_key;
  EXPECT_EQ(a.class_key.find("[1,8,6,6]"), std::string::npos) << a.class_key;
  // Keys are canonical text, so their hashes are stable across runs, builds and machines.
  EXPECT_EQ(a.exact_key,
            "in0:float32[1,8,6,6];in1:float32[8,8,3,3];Conv(in0,in1)->t0 pads=[1,1,1,1];Relu(t0)->t1;out t1[1,8,6,6];");
  EXPECT_EQ(a.key_hash(), fnv1a_hex(a.exact_key));
  EXPECT_EQ(fnv1a_hex("abc"), "e71fa2190541574b");
}

// The class is the operation sequence (tuning reuse, Gibson and Cano): kernel sizes, strides,
// pads and channel counts leave it; a conv's kind of grouping and the ops themselves do not.
std::string class_of_conv(const std::string& file, int64_t cin, int64_t k, int64_t stride, int64_t group,
                          const std::string& act) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, cin, 12, 12})
      .initializer("w", test::rand_f32({16, cin / group, k, k}, 1))
      .initializer("b", test::rand_f32({16}, 2))
      .node("Conv", {"x", "w", "b"}, {"c"},
            {{"pads", std::vector<int64_t>(4, k / 2)}, {"strides", std::vector<int64_t>{stride, stride}},
             {"group", group}})
      .node(act, {"c"}, {"y"})
      .output("y");
  Partition p = partition_graph(load(b.save(file)));
  EXPECT_EQ(p.workloads.size(), 1u) << file;
  return p.workloads.empty() ? "" : p.workloads[0].class_key;
}

TEST(Partition, ClassKeyIsTheOperationSequence) {
  const std::string k3 = class_of_conv("k3.onnx", 8, 3, 1, 1, "Relu");
  EXPECT_EQ(class_of_conv("k1.onnx", 8, 1, 1, 1, "Relu"), k3);
  EXPECT_EQ(class_of_conv("k5s2.onnx", 4, 5, 2, 1, "Relu"), k3);
  EXPECT_EQ(k3.find("pads"), std::string::npos) << k3;
  EXPECT_NE(class_of_conv("sigmoid.onnx", 8, 3, 1, 1, "Sigmoid"), k3);
  const std::string dw = class_of_conv("dw.onnx", 16, 3, 1, 16, "Relu");
  EXPECT_NE(dw, k3);
  EXPECT_NE(dw.find("group=depthwise"), std::string::npos) << dw;
  EXPECT_EQ(class_of_conv("dw5.onnx", 16, 5, 2, 16, "Relu"), dw);
  EXPECT_NE(class_of_conv("grouped.onnx", 16, 3, 1, 4, "Relu"), dw);
}

// The residual block's Conv+Relu and Conv+Add+Relu are two classes over one conv: their anchor
// (the conv with its inputs) is the same, and neither shares it with the pooling or the Gemm.
TEST(Partition, ClassesOverTheSameConvShareTheirAnchor) {
  const Partition p = partition_graph(load(residual_block(8)));
  const Workload* relu = nullptr;
  const Workload* add = nullptr;
  std::set<std::string> others;
  for (const auto& w : p.workloads) {
    if (w.name == "Conv+Relu") relu = &w;
    else if (w.name == "Conv+Add+Relu") add = &w;
    else others.insert(class_anchor(w.class_key));
  }
  ASSERT_TRUE(relu && add);
  ASSERT_NE(relu->class_key, add->class_key);
  const std::string anchor = class_anchor(relu->class_key);
  EXPECT_EQ(class_anchor(add->class_key), anchor);
  EXPECT_LT(anchor.size(), relu->class_key.size());
  EXPECT_EQ(anchor.back(), ';');
  EXPECT_NE(anchor.find("Conv("), std::string::npos) << anchor;
  EXPECT_EQ(anchor.find("Relu"), std::string::npos) << anchor;
  EXPECT_EQ(others.count(anchor), 0u);
  EXPECT_EQ(class_anchor("in0:float32;"), "") << "no operation: no anchor";
  EXPECT_EQ(class_anchor("in0:float32;in1:float32;Add(in0,in1)->t0;Relu(t0)->t1;out t1;"), "")
      << "an elementwise chain anchors nothing";
  // Quoted attribute text may hold ';' and '(': the statement ends after it.
  const std::string quoted = "in0:float32;Softmax(in0)->t0 note=\"a;b(c\";Relu(t0)->t1;out t1;";
  EXPECT_EQ(class_anchor(quoted), "in0:float32;Softmax(in0)->t0 note=\"a;b(c\";");
}

// A depthwise conv's class and a regular one's over the same input have different anchors.
TEST(Partition, DepthwiseAndRegularConvsHaveDifferentAnchors) {
  EXPECT_NE(class_anchor(class_of_conv("anchor_dw.onnx", 16, 3, 1, 16, "Relu")),
            class_anchor(class_of_conv("anchor_k3.onnx", 16, 3, 1, 1, "Relu")));
  EXPECT_EQ(class_anchor(class_of_conv("anchor_relu.onnx", 8, 3, 1, 1, "Relu")),
            class_anchor(class_of_conv("anchor_sigmoid.onnx", 8, 3, 1, 1, "Sigmoid")))
      << "the same conv, another activation after it";
}

}  // namespace
// A conv followed by SiLU (x * sigmoid(x), two readers of the conv's output) is one workload,
// and a conv whose output also leaves the gate is not fused with it.
TEST(Partition, FusesSiluGatesIntoTheirAnchor) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 4, 6, 6})
      .initializer("w", test::rand_f32({8, 4, 1, 1}, 1))
      .node("Conv", {"x", "w"}, {"c"})
      .node("Sigmoid", {"c"}, {"s"})
      .node("Mul", {"c", "s"}, {"y"})
      .node("Relu", {"y"}, {"z"})
      .node("Conv", {"z", "w2"}, {"c2"})
      .node("Sigmoid", {"c2"}, {"s2"})
      .node("Mul", {"c2", "s2"}, {"y2"})
      .node("Add", {"c2", "y2"}, {"out"})
      .initializer("w2", test::rand_f32({8, 8, 1, 1}, 2))
      .output("out");
  const Partition p = partition_graph(load(b.save("silu.onnx")));
  ASSERT_GE(p.workloads.size(), 2u);
  EXPECT_EQ(p.workloads[0].name, "Conv+Sigmoid+Mul+Relu");
  EXPECT_EQ(p.workloads[0].graph.outputs.size(), 1u);
  // c2 has three readers: no gate, the conv stands alone.
  EXPECT_EQ(p.workloads[1].name, "Conv");
  EXPECT_EQ(p.steps.size(), p.workloads.size());
}

// A blocked conv whose output is added to a plain tensor (a residual that comes through a
// Reshape, as in MaxViT's MBConv after window attention) is not fused with the Add: the rule
// tiles a conv in registers only inside an output of the conv's own layout.
TEST(Partition, AnAnchorIsNotFusedWithAnOpThatChangesItsLayout) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 64, 14, 14})
      .input("r", DType::Float32, {1, 64, 196})
      .initializer("w1", test::rand_f32({64, 64, 3, 3}, 1))
      .initializer("w2", test::rand_f32({64, 64, 1, 1}, 2))
      .initializer("square", Tensor::from_i64({1, 64, 14, 14}, {4}))
      .initializer("flat", Tensor::from_i64({1, 64, 196}, {3}))
      .node("Conv", {"x", "w1"}, {"c1"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("Relu", {"c1"}, {"a"})
      .node("Conv", {"a", "w2"}, {"c2"})
      .node("Reshape", {"r", "square"}, {"t"})
      .node("Add", {"c2", "t"}, {"s"})
      .node("Reshape", {"s", "flat"}, {"y"})
      .output("y");
  Graph g = load(b.save("conv_add_plain.onnx"));
  plan_layouts(g, 16);
  ASSERT_TRUE(g.tensor("c2").layout.blocked());
  ASSERT_FALSE(g.tensor("s").layout.blocked());
  const Partition p = partition_graph(g);
  std::vector<std::string> names;
  for (const auto& st : p.steps) names.push_back(p.workloads[st.workload].name);
  EXPECT_NE(std::find(names.begin(), names.end(), "Conv+Relu"), names.end());  // same layout: fused
  EXPECT_NE(std::find(names.begin(), names.end(), "Conv"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "Add"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "Conv+Add"), names.end());
}

namespace {

// A long elementwise chain is cut into workloads of at most 24 nodes: Halide's compile time of
// one fused chain grows about cubically with its length.
TEST(Partition, LongElementwiseChainsAreSplit) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {4, 8});
  std::string prev = "x";
  const char* ops[] = {"Relu", "Neg", "Abs", "Sigmoid"};
  for (int k = 0; k < 100; k++) {
    const std::string out = "t" + std::to_string(k);
    b.node(ops[k % 4], {prev}, {out});
    prev = out;
  }
  Graph g = load(b.output(prev).save("chain.onnx"));
  Partition p = partition_graph(g);
  size_t nodes = 0;
  for (const auto& step : p.steps) {
    EXPECT_LE(step.nodes.size(), 24u);
    nodes += step.nodes.size();
  }
  EXPECT_EQ(nodes, 100u);
  EXPECT_EQ(p.steps.size(), 5u);  // 24 + 24 + 24 + 24 + 4
}

// A workload takes its weights as inputs, and a measurement draws them at random: a variance
// drawn negative would make the output NaN, and Relu's max(NaN, 0) is 0 or NaN depending on the
// operand order each schedule compiles to, so correct schedules would disagree.
TEST(Partition, AWorkloadsBatchNormVarianceIsDrawnPositive) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 24, 5})
      .initializer("scale", test::rand_f32({24}, 1))
      .initializer("bias", test::rand_f32({24}, 2))
      .initializer("mean", test::rand_f32({24}, 3))
      .initializer("var", test::rand_f32({24}, 4))
      .node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"n"})
      .node("Relu", {"n"}, {"y"})
      .output("y");
  Partition p = partition_graph(load(b.save("bn_relu.onnx")));
  ASSERT_EQ(p.workloads.size(), 1u);
  const Graph& w = p.workloads[0].graph;
  ASSERT_EQ(w.inputs.size(), 5u);
  const auto in = random_inputs(w, 1);
  const Tensor& var = in.at(w.nodes[0].inputs[4]);
  const Tensor& mean = in.at(w.nodes[0].inputs[3]);
  bool mean_negative = false;
  for (int64_t i = 0; i < var.size(); i++) {
    EXPECT_GE(var.get_f64(i), 0.5);
    EXPECT_LT(var.get_f64(i), 1.5);
    mean_negative |= mean.get_f64(i) < 0;
  }
  EXPECT_TRUE(mean_negative);  // the other weights keep the usual [-1, 1) draw
}

}  // namespace

}  // namespace ts
