// Import of real ONNX files: Debian's conformance data and models built here with libonnx.
#include "graph/onnx_import.h"

#include <gtest/gtest.h>

#include <fstream>

#include "graph/passes.h"
#include "lower/lower.h"
#include "support/onnx_builder.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using test::OnnxBuilder;

ImportOptions strict() {
  ImportOptions o;
  o.op_supported = op_supported;
  o.quiet = true;
  return o;
}

TEST(OnnxImport, ReadsDebianTestdataModel) {
  ImportOptions o = strict();
  o.generate_weights = false;  // W is a real input of this case, not a missing weight
  Graph g = import_onnx(std::string(TENSORSCHED_TESTDATA_DIR) + "/node/test_conv_with_strides_padding/model.onnx", o);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, "Conv");
  EXPECT_EQ(g.nodes[0].attr_ints("strides"), (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.tensor("x").shape, (Shape{1, 1, 7, 5}));
  EXPECT_EQ(g.tensor(g.outputs[0]).shape, (Shape{1, 1, 4, 3}));
  EXPECT_EQ(g.opset, 11);
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as torch exports flatten.
TEST(OnnxImport, FoldsShapeArithmeticToStaticShapes) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 3, 4})
      .initializer("zero", Tensor::from_i64({0}, {}))
      .initializer("minus1", Tensor::from_i64({-1}, {1}))
      .initializer("ax0", Tensor::from_i64({0}, {1}))
      .node("Shape", {"x"}, {"s"})
      .node("Gather", {"s", "zero"}, {"n"}, {{"axis", int64_t{0}}})
      .node("Unsqueeze", {"n", "ax0"}, {"n1"})
      .node("Concat", {"n1", "minus1"}, {"target"}, {{"axis", int64_t{0}}})
      .node("Reshape", {"x", "target"}, {"y"})
      .output("y");
  Graph g = import_onnx(b.save("flatten.onnx"), strict());
  ASSERT_EQ(g.nodes.size(), 1u) << "only the Reshape should remain";
  EXPECT_EQ(g.nodes[0].op, "Reshape");
  EXPECT_EQ(g.tensor("y").shape, (Shape{2, 12}));
  EXPECT_EQ(g.tensor("target").value->to_i64_vector(), (std::vector<int64_t>{2, -1}));
}

// 24 such Reshapes in a row, each reading the shape of the one before (as a transformer's blocks
// do): every Reshape's target folds only once inference has the shape before it, one round each.
TEST(OnnxImport, FoldsShapeArithmeticThroughManyBlocks) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 3, 4})
      .initializer("zero", Tensor::from_i64({0}, {1}))
      .initializer("minus1", Tensor::from_i64({-1}, {1}))
      .initializer("three", Tensor::from_i64({3}, {1}));
  std::string y = "x";
  const int blocks = 24;
  for (int k = 0; k < blocks; k++) {
    const std::string at = std::to_string(k), next = "y" + at;
    b.node("Shape", {y}, {"s" + at})
        .node("Gather", {"s" + at, "zero"}, {"n" + at}, {{"axis", int64_t{0}}});
    if (k % 2 == 0) b.node("Concat", {"n" + at, "minus1"}, {"target" + at}, {{"axis", int64_t{0}}});
    else b.node("Concat", {"n" + at, "three", "minus1"}, {"target" + at}, {{"axis", int64_t{0}}});
    b.node("Reshape", {y, "target" + at}, {next});
    y = next;
  }
  b.output(y);
  Graph g = import_onnx(b.save("reshape_blocks.onnx"), strict());
  ASSERT_EQ(g.nodes.size(), static_cast<size_t>(blocks)) << "only the Reshapes should remain";
  for (const Node& n : g.nodes) EXPECT_EQ(n.op, "Reshape");
  EXPECT_EQ(g.tensor(y).shape, (Shape{2, 3, 4}));
  EXPECT_EQ(g.tensor("y22").shape, (Shape{2, 12}));
}

// An If node whose then / else branch reads outer tensor `x` through one op each.
void add_if(OnnxBuilder& b, const std::string& cond, const std::string& then_op, const std::string& else_op) {
  onnx::NodeProto* n = b.proto().mutable_graph()->add_node();
  n->set_op_type("If");
  n->set_name("pick");
  n->add_input(cond);
  n->add_output("y");
  for (const auto& [attr, op] : {std::pair{"then_branch", then_op}, std::pair{"else_branch", else_op}}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* g = a->mutable_g();
    g->set_name(attr);
    onnx::NodeProto* inner = g->add_node();
    inner->set_op_type(op);
    inner->add_input("x");
    inner->add_output("branch_out");  // the same name in both branches
    onnx::ValueInfoProto* out = g->add_output();
    out->set_name("branch_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
}

// An If on a dimension (as exporters test one) takes its branch once --shape fixes the
// dimension: the branch's nodes replace it. An If on input values is refused, naming it, and so
// is one whose branch holds an If of its own.
TEST(OnnxImport, AnIfOnAShapeTakesItsBranch) {
  for (const int64_t rows : {2, 4}) {
    OnnxBuilder b(13);
    b.dynamic_input("x", DType::Float32, {-1, 3})
        .initializer("zero", Tensor::from_i64({0}, {}))
        .initializer("two", Tensor::from_i64({2}, {}))
        .node("Shape", {"x"}, {"s"})
        .node("Gather", {"s", "zero"}, {"rows"}, {{"axis", int64_t{0}}})
        .node("Equal", {"rows", "two"}, {"cond"});
    add_if(b, "cond", "Relu", "Neg");
    b.output("y");
    ImportOptions o = strict();
    o.shape_overrides["x"] = {rows, 3};
    const Graph g = import_onnx(b.save("if_on_shape.onnx"), o);
    std::vector<std::string> ops;
    for (const Node& n : g.nodes) ops.push_back(n.op);
    EXPECT_EQ(ops, (std::vector<std::string>{rows == 2 ? "Relu" : "Neg", "Identity"})) << rows;
    EXPECT_EQ(g.tensor("y").shape, (Shape{rows, 3}));
  }
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 3}).node("ReduceSum", {"x"}, {"sum"}, {{"keepdims", int64_t{0}}});
  b.initializer("zero", test::make_f32({}, {0.0f})).node("Greater", {"sum", "zero"}, {"cond"});
  add_if(b, "cond", "Relu", "Neg");
  b.output("y");
  EXPECT_TRUE(test::throws_naming<Unsupported>([&] { import_onnx(b.save("if_on_values.onnx"), strict()); },
                                               {"node 'pick'", "If whose condition depends on input values"}));
  // A constant condition whose branch is itself an If (a graph in a graph) is not spliced.
  OnnxBuilder nested(13);
  Tensor yes(DType::Bool, {});
  yes.bytes[0] = 1;
  nested.input("x", DType::Float32, {2, 3}).initializer("yes", yes);
  add_if(nested, "yes", "Relu", "Neg");
  onnx::NodeProto* outer = nested.proto().mutable_graph()->mutable_node(0);
  onnx::NodeProto inner = *outer;
  inner.set_output(0, "branch_out");
  *outer->mutable_attribute(0)->mutable_g()->mutable_node(0) = inner;
  nested.output("y");
  EXPECT_TRUE(test::throws_naming<Unsupported>([&] { import_onnx(nested.save("if_nested.onnx"), strict()); },
                                               {"node 'pick'", "If whose branch holds graphs of its own"}));
}

TEST(OnnxImport, GraphOnlyModelGetsDeterministicWeights) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {1, 3, 8, 8})
      .input("w", DType::Float32, {4, 3, 3, 3})
      .input("bias", DType::Float32, {4})
      .node("Conv", {"x", "w", "bias"}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .output("y");
  std::string path = b.save("graph_only.onnx");
  Graph g1 = import_onnx(path, strict());
  Graph g2 = import_onnx(path, strict());
  EXPECT_EQ(g1.inputs, (std::vector<std::string>{"x"}));
  ASSERT_TRUE(g1.tensor("w").value.has_value());
  EXPECT_EQ(g1.tensor("w").value->bytes, g2.tensor("w").value->bytes);
  // uniform(+-1/sqrt(fan_in)) with fan_in = 27
  for (double v : g1.tensor("w").value->to_f64_vector()) EXPECT_LE(std::fabs(v), 1.0 / std::sqrt(27.0));
  ImportOptions other = strict();
  other.weight_seed = 7;
  EXPECT_NE(import_onnx(path, other).tensor("w").value->bytes, g1.tensor("w").value->bytes);
}

TEST(OnnxImport, MetadataNamesTheWeightsOfAGraphOnlyModel) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 4}).input("b", DType::Float32, {4}).metadata("tensorsched.weights", "b");
  b.node("Add", {"x", "b"}, {"y"}).output("y");
  Graph g = import_onnx(b.save("meta.onnx"), strict());
  EXPECT_EQ(g.inputs, (std::vector<std::string>{"x"}));
  EXPECT_TRUE(g.is_constant("b"));
}

TEST(OnnxImport, ShapeOverrideFixesDynamicInput) {
  OnnxBuilder b(13);
  b.dynamic_input("x", DType::Float32, {-1, 3}).node("Relu", {"x"}, {"y"}).output("y");
  std::string path = b.save("dyn.onnx");
  EXPECT_TRUE(test::throws_naming<Error>([&] { import_onnx(path, strict()); },
                                         {"input 'x'", "dimension 0 ('dyn0') is dynamic", "--shape x="}));
  ImportOptions o = strict();
  o.shape_overrides["x"] = {5, 3};
  Graph g = import_onnx(path, o);
  EXPECT_EQ(g.tensor("y").shape, (Shape{5, 3}));
}

TEST(OnnxImport, ParseShapeOverride) {
  auto [name, shape] = parse_shape_override("input=1,3,224,224");
  EXPECT_EQ(name, "input");
  EXPECT_EQ(shape, (Shape{1, 3, 224, 224}));
  EXPECT_THROW(parse_shape_override("input"), Error);
  EXPECT_THROW(parse_shape_override("input=1,x"), Error);
  EXPECT_THROW(parse_shape_override("input=0,3"), Error);
}

// Bad input: every case is a one-line Error naming what is wrong, never a crash.
std::string import_error(const std::string& path, const ImportOptions& o = strict()) {
  return test::error_message<Error>([&] { import_onnx(path, o); });
}

TEST(OnnxImport, MissingFile) {
  EXPECT_NE(import_error("/nonexistent/model.onnx").find("/nonexistent/model.onnx: no such file"), std::string::npos);
}

TEST(OnnxImport, TruncatedFile) {
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {2, 3}).node("Relu", {"x"}, {"y"}).output("y");
  std::string path = b.save("whole.onnx");
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::string cut = (test::temp_dir() / "truncated.onnx").string();
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::string m = import_error(cut);
  EXPECT_NE(m.find("truncated.onnx"), std::string::npos) << m;
  EXPECT_NE(m.find("not an ONNX model"), std::string::npos) << m;
}

TEST(OnnxImport, NotOnnx) {
  std::string path = (test::temp_dir() / "readme.onnx").string();
  std::ofstream(path) << "this is a text file, not a protobuf\n";
  EXPECT_NE(import_error(path).find("not an ONNX model"), std::string::npos);
  std::string empty = (test::temp_dir() / "empty.onnx").string();
  std::ofstream(empty).close();
  EXPECT_NE(import_error(empty).find("file is empty"), std::string::npos);
}

TEST(OnnxImport, UnsupportedOpNamesOpNodeAndOpset) {
  OnnxBuilder b(14);
  b.input("x", DType::Float32, {1, 2, 3})
      .node("LSTM", {"x"}, {"y"}, {}, "rnn_layer")
      .output("y");
  EXPECT_TRUE(test::throws_naming<Unsupported>([&] { import_onnx(b.save("lstm.onnx"), strict()); },
                                               {"node 'rnn_layer'", "op LSTM", "opset 14"}));
}

TEST(OnnxImport, UnsupportedDtype) {
  OnnxBuilder b(13);
  b.proto().mutable_graph()->add_input()->set_name("h");
  auto* tt = b.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT16);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  b.node("Relu", {"h"}, {"y"});
  auto* out = b.proto().mutable_graph()->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT16);
  std::string m = import_error(b.save("fp16.onnx"));
  EXPECT_NE(m.find("input 'h'"), std::string::npos) << m;
  EXPECT_NE(m.find("FLOAT16 is not supported"), std::string::npos) << m;
}

TEST(OnnxImport, UnsupportedOpset) {
  OnnxBuilder b(3);
  b.input("x", DType::Float32, {2}).node("Relu", {"x"}, {"y"}).output("y");
  EXPECT_NE(import_error(b.save("old.onnx")).find("opset 3 is not supported"), std::string::npos);
}

}  // namespace
}  // namespace ts
