#include <gtest/gtest.h>

#include <cmath>

#include "lower/lower_test_util.h"
#include "runtime/compiled_model.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Tensor unary(const std::string& op, const Tensor& x, std::map<std::string, test::AttrValue> attrs = {}) {
  OnnxBuilder b(14);
  b.input("x", x.dtype, x.shape).node(op, {"x"}, {"y"}, attrs).output("y");
  return test::run_model(b.save(op + ".onnx"), {{"x", x}})[0];
}

Tensor map_ref(const Tensor& x, const std::function<double(double)>& f) {
  Tensor r = x;
  for (int64_t i = 0; i < r.size(); i++) r.set_f64(i, f(x.get_f64(i)));
  return r;
}

TEST(LowerElementwise, Activations) {
  Tensor x = random_tensor(DType::Float32, {3, 17}, 1, -6, 6);
  test::expect_close(unary("Relu", x), map_ref(x, [](double v) { return std::max(v, 0.0); }));
  test::expect_close(unary("Sigmoid", x), map_ref(x, [](double v) { return 1 / (1 + std::exp(-v)); }));
  test::expect_close(unary("Tanh", x), map_ref(x, [](double v) { return std::tanh(v); }));
  test::expect_close(unary("Erf", x), map_ref(x, [](double v) { return std::erf(v); }));
  test::expect_close(unary("LeakyRelu", x, {{"alpha", 0.1}}), map_ref(x, [](double v) { return v < 0 ? 0.1 * v : v; }));
  test::expect_close(unary("HardSwish", x), map_ref(x, [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }));
  test::expect_close(unary("Softplus", x), map_ref(x, [](double v) { return std::log1p(std::exp(v)); }));
  test::expect_close(unary("Elu", x, {{"alpha", 0.5}}), map_ref(x, [](double v) { return v < 0 ? 0.5 * (std::exp(v) - 1) : v; }));
}

// Gelu is ONNX opset 20, newer than the checker of libonnx 1.12, so no file can carry it here: the
// node comes from graph/passes.h's fusion. The test renames an Erf node to lower it directly.
Tensor gelu(const Tensor& x, const std::string& approximate) {
  OnnxBuilder b(14);
  b.input("x", x.dtype, x.shape).node("Erf", {"x"}, {"y"}).output("y");
  Graph g = test::import_model(b.save("gelu_" + approximate + ".onnx"));
  g.nodes.at(0).op = "Gelu";
  g.nodes.at(0).attrs["approximate"] = Attribute{approximate};
  return GraphRunner(g).run({{"x", x}})[0];
}

TEST(LowerElementwise, GeluExactAndTanhApproximation) {
  Tensor x = random_tensor(DType::Float32, {3, 17}, 2, -6, 6);
  test::expect_close(gelu(x, "none"), map_ref(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  test::expect_close(gelu(x, "tanh"), map_ref(x, [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }));
  EXPECT_THROW(gelu(x, "sigmoid"), Error);
}

TEST(LowerElementwise, ReluCeluAndClipLetNaNThrough) {
  // ONNX Runtime's Relu, Celu and Clip propagate NaN; max(NaN, 0) would give 0.
  Tensor x = Tensor::from_i64({-2, 0, 3, 7}, {4}).cast(DType::Float32);
  x.set_f64(1, std::nan(""));
  Tensor relu = unary("Relu", x);
  EXPECT_EQ(relu.get_f64(0), 0);
  EXPECT_TRUE(std::isnan(relu.get_f64(1)));
  EXPECT_EQ(relu.get_f64(2), 3);
  Tensor celu = unary("Celu", x, {{"alpha", 2.0}});
  EXPECT_NEAR(celu.get_f64(0), 2 * (std::exp(-1.0) - 1), 1e-6);
  EXPECT_TRUE(std::isnan(celu.get_f64(1)));
  EXPECT_EQ(celu.get_f64(2), 3);
  OnnxBuilder b(13);
  b.input("x", DType::Float32, {4})
      .initializer("lo", Tensor::scalar_f32(-1))
      .initializer("hi", Tensor::scalar_f32(5))
      .node("Clip", {"x", "lo", "hi"}, {"y"})
      .output("y");
  Tensor clip = test::run_model(b.save("clip_nan.onnx"), {{"x", x}})[0];
  EXPECT_EQ(clip.get_f64(0), -1);
  EXPECT_TRUE(std::isnan(clip.get_f64(1)));
  EXPECT_EQ(clip.get_f64(3), 5);
}

// A NaN computed in the same loop (Inf - Inf of one tensor, or Inf + -Inf, fused with what
// reads it) passes Relu, Max and IsNaN, in the JIT and in the compiled model's vectorized
// workloads: Halide compiles float arithmetic as never NaN, so LLVM folded a float NaN test of
// such a value to false.
TEST(LowerElementwise, ANaNComputedInTheSameLoopPassesReluMaxAndIsNaN) {
  Tensor a = test::rand_f32({64}, 7), b = test::rand_f32({64}, 8);
  a.set_f64(0, INFINITY), b.set_f64(0, -INFINITY);
  a.set_f64(1, 1), b.set_f64(1, 2);
  OnnxBuilder m(13);
  m.input("a", DType::Float32, {64}).input("b", DType::Float32, {64});
  m.node("Sub", {"a", "a"}, {"d"}).node("Relu", {"d"}, {"relu"}).node("Add", {"a", "b"}, {"s"});
  m.node("Max", {"s", "b"}, {"max"}).node("IsNaN", {"s"}, {"nan"});
  m.output("relu").output("max").output("nan", DType::Bool);
  const Graph g = test::import_model(m.save("computed_nan.onnx"));
  CompileOptions opts;
  opts.cache_root = (test::temp_dir() / "cache").string();
  CompiledModel compiled(g, opts);
  const std::map<std::string, Tensor> in{{"a", a}, {"b", b}};
  for (const auto& out : {GraphRunner(g).run(in), compiled.run(in)}) {
    EXPECT_TRUE(std::isnan(out[0].get_f64(0)));
    EXPECT_EQ(out[0].get_f64(1), 0);
    EXPECT_TRUE(std::isnan(out[1].get_f64(0)));
    EXPECT_EQ(out[1].get_f64(1), 3);
    EXPECT_EQ(out[2].get_f64(0), 1);
    EXPECT_EQ(out[2].get_f64(1), 0);
  }
}

// Min and Max return NaN when either operand is NaN, as ONNX Runtime does; the vector
// instructions alone return one operand or the other by their order.
TEST(LowerElementwise, MinAndMaxPropagateNaNFromEitherSide) {
  Tensor a = test::make_f32({4}, {1, 0, 3, -2}), b = test::make_f32({4}, {0, 5, 0, -1});
  a.set_f64(0, std::nan(""));
  b.set_f64(2, std::nan(""));
  OnnxBuilder m(13);
  m.input("a", DType::Float32, {4}).input("b", DType::Float32, {4});
  m.node("Max", {"a", "b"}, {"max_ab"}).node("Max", {"b", "a"}, {"max_ba"});
  m.node("Min", {"a", "b"}, {"min_ab"}).node("Min", {"b", "a", "b"}, {"min_bab"});
  m.output("max_ab").output("max_ba").output("min_ab").output("min_bab");
  const auto out = test::run_model(m.save("min_max_nan.onnx"), {{"a", a}, {"b", b}});
  for (size_t k = 0; k < out.size(); k++) {
    SCOPED_TRACE(k);
    EXPECT_TRUE(std::isnan(out[k].get_f64(0)));
    EXPECT_TRUE(std::isnan(out[k].get_f64(2)));
    EXPECT_EQ(out[k].get_f64(1), k < 2 ? 5 : 0);
    EXPECT_EQ(out[k].get_f64(3), k < 2 ? -1 : -2);
  }
}

// One tensor on both sides of Sub, Div and Equal: Inf - Inf and Inf / Inf are NaN and NaN is
// not equal to itself, where Halide's simplifier would fold x - x to 0, x / x to 1, x == x to true.
TEST(LowerElementwise, OneTensorOnBothSidesKeepsInfAndNaN) {
  Tensor x = test::make_f32({3}, {2, 0, 0});
  x.set_f64(1, INFINITY);
  x.set_f64(2, std::nan(""));
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {3});
  m.node("Sub", {"x", "x"}, {"d"}).node("Div", {"x", "x"}, {"q"}).node("Equal", {"x", "x"}, {"e"});
  m.output("d").output("q").output("e", DType::Bool);
  const auto out = test::run_model(m.save("same_operands.onnx"), {{"x", x}});
  EXPECT_EQ(out[0].get_f64(0), 0);
  EXPECT_TRUE(std::isnan(out[0].get_f64(1)));
  EXPECT_TRUE(std::isnan(out[0].get_f64(2)));
  EXPECT_EQ(out[1].get_f64(0), 1);
  EXPECT_TRUE(std::isnan(out[1].get_f64(1)));
  EXPECT_EQ(out[2].get_f64(0), 1);
  EXPECT_EQ(out[2].get_f64(1), 1);
  EXPECT_EQ(out[2].get_f64(2), 0);
}

// The same where the Inf comes from the ops before (3e38 + 3e38): the Sub starts a workload of its
// own, so the Inf it reads is a value in memory, not one fast math may assume away.
TEST(LowerElementwise, OneTensorOnBothSidesAfterAChainThatOverflows) {
  const Tensor x = test::make_f32({4}, {3e38f, 1.f, -3e38f, 0.f});
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {4});
  m.node("Relu", {"x"}, {"r"}).node("Add", {"x", "x"}, {"t"}).node("Sub", {"t", "t"}, {"d"}).node("Abs", {"d"}, {"y"});
  m.output("y").output("r");
  const auto out = test::run_model(m.save("overflow_then_same_operands.onnx"), {{"x", x}});
  EXPECT_TRUE(std::isnan(out[0].get_f64(0)));
  EXPECT_EQ(out[0].get_f64(1), 0);
  EXPECT_TRUE(std::isnan(out[0].get_f64(2)));
  EXPECT_EQ(out[0].get_f64(3), 0);
}

TEST(LowerElementwise, BroadcastingBinary) {
  Tensor a = test::rand_f32({2, 3, 4}, 1), b = test::rand_f32({3, 1}, 2);
  OnnxBuilder m(13);
  m.input("a", DType::Float32, a.shape).input("b", DType::Float32, b.shape);
  m.node("Sub", {"a", "b"}, {"y"}).output("y");
  Tensor got = test::run_model(m.save("sub.onnx"), {{"a", a}, {"b", b}})[0];
  Tensor want(DType::Float32, {2, 3, 4});
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) want.data<float>()[(i * 3 + j) * 4 + k] = a.data<float>()[(i * 3 + j) * 4 + k] - b.data<float>()[j];
  test::expect_close(got, want, 0, 0);
}

TEST(LowerElementwise, IntegerDivisionTruncatesTowardZero) {
  OnnxBuilder m(13);
  m.input("a", DType::Int32, {4}).input("b", DType::Int32, {4}).node("Div", {"a", "b"}, {"y"}).output("y", DType::Int32);
  Tensor a(DType::Int32, {4}), b(DType::Int32, {4});
  std::vector<int> av = {7, -7, 7, -7}, bv = {2, 2, -2, -2};
  for (int i = 0; i < 4; i++) a.data<int>()[i] = av[i], b.data<int>()[i] = bv[i];
  Tensor got = test::run_model(m.save("idiv.onnx"), {{"a", a}, {"b", b}})[0];
  EXPECT_EQ(got.to_i64_vector(), (std::vector<int64_t>{3, -3, -3, 3}));
}

// Mod of every sign combination: fmod=0 takes the divisor's sign (Python %), fmod=1 the
// dividend's (C fmod), for integers and floats.
TEST(LowerElementwise, ModSignRules) {
  const std::vector<double> av = {7, -7, 7, -7, 6, -6, 5.5, -5.5}, bv = {3, 3, -3, -3, 3, -3, 2, -2};
  auto python_mod = [](double a, double b) {
    double r = std::fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  };
  for (DType t : {DType::Int32, DType::Int64, DType::Float32, DType::Float64})
    for (int64_t fmod : {0, 1}) {
      SCOPED_TRACE(testing::Message() << dtype_name(t) << " fmod " << fmod);
      const size_t n = dtype_is_float(t) ? av.size() : 6;  // integers skip the fractional pair
      Tensor a(t, {static_cast<int64_t>(n)}), b(t, {static_cast<int64_t>(n)}), want(t, {static_cast<int64_t>(n)});
      for (size_t i = 0; i < n; i++) {
        a.set_f64(i, av[i]);
        b.set_f64(i, bv[i]);
        want.set_f64(i, fmod ? std::fmod(av[i], bv[i]) : python_mod(av[i], bv[i]));
      }
      OnnxBuilder m(13);
      m.input("a", t, a.shape).input("b", t, b.shape).node("Mod", {"a", "b"}, {"y"}, {{"fmod", fmod}}).output("y", t);
      Tensor got = test::run_model(m.save("mod.onnx"), {{"a", a}, {"b", b}})[0];
      test::expect_close(got, want, 0, 0);
    }
}

TEST(LowerElementwise, WhereCompareCast) {
  OnnxBuilder m(13);
  m.input("x", DType::Float32, {5})
      .initializer("zero", Tensor::scalar_f32(0))
      .node("Greater", {"x", "zero"}, {"pos"})
      .node("Where", {"pos", "x", "zero"}, {"relu"})
      .node("Cast", {"pos"}, {"posf"}, {{"to", int64_t{1}}})
      .output("relu")
      .output("posf");
  Tensor x = test::make_f32({5}, {-2, -0.5, 0, 0.5, 2});
  auto out = test::run_model(m.save("where.onnx"), {{"x", x}});
  test::expect_close(out[0], test::make_f32({5}, {0, 0, 0, 0.5, 2}));
  test::expect_close(out[1], test::make_f32({5}, {0, 0, 0, 1, 1}));
}

TEST(LowerElementwise, VariadicMeanAndClip) {
  OnnxBuilder m(13);
  Tensor a = test::rand_f32({2, 3}, 1), b = test::rand_f32({3}, 2), c = test::rand_f32({2, 1}, 3);
  m.input("a", DType::Float32, {2, 3}).input("b", DType::Float32, {3}).input("c", DType::Float32, {2, 1});
  m.initializer("lo", Tensor::scalar_f32(-0.2f)).initializer("hi", Tensor::scalar_f32(0.3f));
  m.node("Mean", {"a", "b", "c"}, {"m"}).node("Clip", {"m", "lo", "hi"}, {"y"}).output("y");
  Tensor got = test::run_model(m.save("mean.onnx"), {{"a", a}, {"b", b}, {"c", c}})[0];
  Tensor want(DType::Float32, {2, 3});
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      float v = (a.data<float>()[i * 3 + j] + b.data<float>()[j] + c.data<float>()[i]) / 3;
      want.data<float>()[i * 3 + j] = std::clamp(v, -0.2f, 0.3f);
    }
  test::expect_close(got, want);
}

}  // namespace
}  // namespace ts
