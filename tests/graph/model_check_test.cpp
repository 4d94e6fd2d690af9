// Validation before anything trusts a model (graph/model_check): each invalid model, built as a
// real ONNX file, is refused with an error naming the file, the node and the attribute or input
// at fault, before ONNX's shape inference (which divides by strides) sees it.
#include "graph/model_check.h"

#include <gtest/gtest.h>

#include <fstream>

#include "graph/error.h"
#include "graph/onnx_import.h"
#include "support/onnx_builder.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using test::OnnxBuilder;

// The import's error for `path`, or "" when it imports.
std::string import_error(const std::string& path) {
  return test::error_message<Error>([&] { test::import_model(path); });
}

void expect_error(const std::string& path, const std::vector<std::string>& parts) {
  const std::string e = import_error(path);
  ASSERT_FALSE(e.empty()) << path << " imported";
  EXPECT_NE(e.find(path), std::string::npos) << e;
  for (const auto& p : parts) EXPECT_NE(e.find(p), std::string::npos) << "missing '" << p << "' in: " << e;
}

OnnxBuilder conv_model(const std::map<std::string, test::AttrValue>& attrs, const Shape& w = {4, 3, 3, 3}) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {1, 3, 8, 8}).initializer("w", test::rand_f32(w, 1));
  b.node("Conv", {"x", "w"}, {"y"}, attrs, "conv1").output("y");
  return b;
}

TEST(ModelCheck, ZeroStrideIsAnErrorNotADivisionByZero) {
  expect_error(conv_model({{"strides", std::vector<int64_t>{0, 1}}}).save("stride0.onnx"),
               {"node 'conv1' (Conv)", "attribute 'strides' holds 0"});
  OnnxBuilder pool;
  pool.input("x", DType::Float32, {1, 3, 8, 8});
  pool.node("MaxPool", {"x"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{1, 0}}},
            "pool");
  expect_error(pool.output("y").save("pool_stride0.onnx"), {"node 'pool' (MaxPool)", "'strides'"});
}

TEST(ModelCheck, WindowAttributesAreChecked) {
  expect_error(conv_model({{"dilations", std::vector<int64_t>{1, -2}}}).save("dil.onnx"), {"'dilations' holds -2"});
  expect_error(conv_model({{"pads", std::vector<int64_t>{1, 1, 1}}}).save("pads3.onnx"), {"'pads' has 3 values"});
  expect_error(conv_model({{"pads", std::vector<int64_t>{-1, 0, 0, 0}}}).save("padsneg.onnx"), {"'pads' holds -1"});
  expect_error(conv_model({{"group", int64_t{0}}}).save("group0.onnx"), {"'group' is 0"});
  expect_error(conv_model({{"auto_pad", std::string("SIDEWAYS")}}).save("autopad.onnx"), {"'auto_pad' is 'SIDEWAYS'"});
}

TEST(ModelCheck, ConvWeightWithNoOutputChannelsIsRefused) {
  expect_error(conv_model({}, {0, 3, 3, 3}).save("cout0.onnx"), {"weight 'w'", "dimension 0 of size 0"});
}

TEST(ModelCheck, ChannelsMustMatchTheWeight) {
  expect_error(conv_model({}, {4, 2, 3, 3}).save("channels.onnx"), {"input 'x' has 3 channels", "need 2"});
}

TEST(ModelCheck, SchemaCheckerRejectsUnknownAttributesAndEmptyRequiredInputs) {
  OnnxBuilder extra;
  extra.input("x", DType::Float32, {2, 3}).node("Relu", {"x"}, {"y"}, {{"bogus", int64_t{1}}}, "r").output("y");
  expect_error(extra.save("extra_attr.onnx"), {"node 'r' (Relu)", "not valid ONNX", "bogus"});
  OnnxBuilder empty;
  empty.input("x", DType::Float32, {2, 3}).node("Add", {"x", ""}, {"y"}, {}, "add").output("y");
  expect_error(empty.save("empty_input.onnx"), {"node 'add' (Add)", "not valid ONNX"});
}

TEST(ModelCheck, MixedDtypesAreRefusedAsOnnxRuntimeDoes) {
  OnnxBuilder b;
  Tensor w(DType::Float64, {4, 3, 3, 3});
  b.input("x", DType::Float32, {1, 3, 8, 8}).initializer("w", w);
  b.node("Conv", {"x", "w"}, {"y"}, {}, "conv1").output("y");
  expect_error(b.save("mixed.onnx"), {"node 'conv1' (Conv)", "input 'w' is double but input 'x' is float"});
}

TEST(ModelCheck, NamesAndDefinitions) {
  OnnxBuilder dup;
  dup.input("x", DType::Float32, {2, 2}).initializer("c", test::rand_f32({2, 2}, 1)).initializer("c", test::rand_f32({2, 2}, 2));
  dup.node("Add", {"x", "c"}, {"y"}).output("y");
  // ONNX Runtime uses the last definition (measured: x + 5, not x + 1); so does tensorsched.
  Tensor five = test::make_f32({2, 2}, {5, 5, 5, 5});
  dup.proto().mutable_graph()->mutable_initializer(1)->clear_float_data();
  dup.proto().mutable_graph()->mutable_initializer(1)->clear_raw_data();
  dup.proto().mutable_graph()->mutable_initializer(1)->set_raw_data(std::string(
      reinterpret_cast<const char*>(five.bytes.data()), five.bytes.size()));
  auto out = test::run_model(dup.save("dup_init.onnx"), {{"x", test::make_f32({2, 2}, {1, 2, 3, 4})}});
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  EXPECT_EQ(out[0].data<float>()[3], 9.0f);

  OnnxBuilder undefined;
  undefined.input("x", DType::Float32, {2, 2}).node("Add", {"x", "nowhere"}, {"y"}, {}, "add").output("y");
  expect_error(undefined.save("undefined.onnx"), {"node 'add' (Add) reads 'nowhere'"});

  OnnxBuilder twice;
  twice.input("x", DType::Float32, {2, 2}).node("Relu", {"x"}, {"y"}, {}, "a").node("Neg", {"x"}, {"y"}, {}, "b");
  expect_error(twice.output("y").save("twice.onnx"), {"node 'b' (Neg) writes 'y'", "another node"});

  OnnxBuilder cycle;
  cycle.input("x", DType::Float32, {2, 2});
  cycle.node("Add", {"x", "b"}, {"a"}, {}, "first").node("Relu", {"a"}, {"b"}, {}, "second").output("b");
  expect_error(cycle.save("cycle.onnx"), {"cycle"});
}

TEST(ModelCheck, NodesOutOfOrderAreSortedAsOnnxRuntimeDoes) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {2, 2});
  b.node("Neg", {"a"}, {"y"}, {}, "second").node("Relu", {"x"}, {"a"}, {}, "first").output("y");
  const std::string path = b.save("unsorted.onnx");
  EXPECT_EQ(import_error(path), "");
  auto out = test::run_model(path, {{"x", test::make_f32({2, 2}, {-1, 2, -3, 4})}});
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);
  EXPECT_EQ(out[0].data<float>()[1], -2.0f);
}

TEST(ModelCheck, ShapeInferenceFailuresNameTheirCause) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {2, 3}).node("Transpose", {"x"}, {"y"}, {{"perm", std::vector<int64_t>{0, 5}}}, "t");
  expect_error(b.output("y").save("perm.onnx"), {"Transpose"});
}

TEST(ModelCheck, ExternalDataMustStayInTheModelsFolder) {
  for (const std::string location : {"/etc/passwd", "../secret.bin", "sub/../../x.bin"}) {
    OnnxBuilder b;
    b.input("x", DType::Float32, {2}).initializer("c", test::rand_f32({2}, 1));
    b.node("Add", {"x", "c"}, {"y"}).output("y");
    auto* t = b.proto().mutable_graph()->mutable_initializer(0);
    t->clear_float_data();
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    const std::string e = import_error(b.save("external.onnx"));
    EXPECT_NE(e.find("external data location"), std::string::npos) << location << ": " << e;
  }
}

TEST(ModelCheck, ExternalDataOutOfRangeIsAClearError) {
  OnnxBuilder b;
  b.input("x", DType::Float32, {2}).initializer("c", test::rand_f32({2}, 1));
  b.node("Add", {"x", "c"}, {"y"}).output("y");
  const std::string path = b.save("ext_range.onnx");
  std::ofstream(std::filesystem::path(path).parent_path() / "w.bin") << "12345678";
  auto* t = b.proto().mutable_graph()->mutable_initializer(0);
  t->clear_float_data();
  t->clear_raw_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{{"location", "w.bin"}, {"offset", "4"}}) {
    auto* kv = t->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  }
  const std::string e = import_error(b.save("ext_range.onnx"));
  EXPECT_NE(e.find("holds 8 bytes"), std::string::npos) << e;
  t->mutable_external_data(1)->set_value("-4");
  const std::string neg = import_error(b.save("ext_range.onnx"));
  EXPECT_NE(neg.find("'offset' is '-4'"), std::string::npos) << neg;
}

// Found by the fuzzer: initializer bytes are checked before ONNX's shape inference reads them
// (a 7-byte int64 'split' crashed it), and what ONNX Runtime refuses is refused.
TEST(ModelCheck, FuzzerFindingsAreClearErrors) {
  {
    OnnxBuilder b;
    Tensor split(DType::Int64, {1});
    split.data<int64_t>()[0] = 4;
    b.input("x", DType::Float32, {4}).initializer("split", split).node("Split", {"x", "split"}, {"y"}, {}, "s").output("y");
    auto* t = b.proto().mutable_graph()->mutable_initializer(0);
    t->clear_int64_data();
    t->set_raw_data(std::string(7, '\x01'));
    expect_error(b.save("short_raw.onnx"), {"initializer 'split'", "raw_data holds 7 bytes"});
  }
  OnnxBuilder names;
  names.input("x", DType::Float32, {2}).node("Relu", {"x"}, {"a"}, {}, "same").node("Neg", {"a"}, {"y"}, {}, "same");
  expect_error(names.output("y").save("names.onnx"), {"two nodes are named 'same'"});
  OnnxBuilder ir;
  ir.input("x", DType::Float32, {2}).node("Relu", {"x"}, {"y"}).output("y");
  ir.proto().set_ir_version(99);
  expect_error(ir.save("ir.onnx"), {"IR version 99"});
  OnnxBuilder keep;
  keep.input("x", DType::Float32, {2, 3}).node("ReduceMean", {"x"}, {"y"}, {{"keepdims", int64_t{2}}}, "r").output("y");
  expect_error(keep.save("keepdims.onnx"), {"node 'r' (ReduceMean)", "'keepdims' is 2"});
  expect_error(conv_model({{"auto_pad", std::string("SAME_LOWER")}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}})
                   .save("autopad_pads.onnx"),
               {"'pads' is given with auto_pad SAME_LOWER"});
  OnnxBuilder concat;
  concat.input("a", DType::Float32, {1, 4, 8, 8, 1}).input("b", DType::Float32, {1, 4, 8, 8});
  concat.node("Concat", {"a", "b"}, {"y"}, {{"axis", int64_t{1}}}, "cat").output("y");
  expect_error(concat.save("concat_ranks.onnx"), {"shape inference failed", "Concat"});
}

}  // namespace
}  // namespace ts
