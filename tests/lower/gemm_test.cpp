#include <gtest/gtest.h>

#include "graph/workload.h"
#include "lower/lower_test_util.h"
#include "measure/workload_compiler.h"

namespace ts {
namespace {

using test::OnnxBuilder;

TEST(LowerGemm, TransposesAlphaBetaAndBias) {
  const int M = 5, K = 7, N = 3;
  Tensor a = test::rand_f32({K, M}, 1), b = test::rand_f32({N, K}, 2), c = test::rand_f32({N}, 3);
  OnnxBuilder m(13);
  m.input("a", DType::Float32, {K, M}).initializer("b", b).initializer("c", c);
  m.node("Gemm", {"a", "b", "c"}, {"y"}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
  m.output("y");
  Tensor got = test::run_model(m.save("gemm.onnx"), {{"a", a}})[0];
  Tensor want(DType::Float32, {M, N});
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += a.data<float>()[k * M + i] * b.data<float>()[j * K + k];
      want.data<float>()[i * N + j] = static_cast<float>(0.5 * s + 2.0 * c.data<float>()[j]);
    }
  test::expect_close(got, want);
}

TEST(LowerGemm, MatrixVectorWithTransposedBSplitsTheReductionByLanes) {
  // M <= 4, transB, K a multiple of 16 and >= 128: the dot-product form (lanes along k).
  const int M = 2, K = 272, N = 37;
  Tensor a = test::rand_f32({M, K}, 4), b = test::rand_f32({N, K}, 5), c = test::rand_f32({N}, 6);
  OnnxBuilder m(13);
  m.input("a", DType::Float32, {M, K}).initializer("b", b).initializer("c", c);
  m.node("Gemm", {"a", "b", "c"}, {"y"}, {{"transB", int64_t{1}}, {"alpha", 1.5}});
  m.output("y");
  Graph g = test::import_model(m.save("gemv.onnx"));
  const Partition p = partition_graph(g);
  ASSERT_EQ(p.workloads.size(), 1u);
  const auto outs = lower_workload(p.workloads[0]).outputs;
  bool has_dot = false;
  for (const auto& [name, f] : Halide::Internal::find_transitive_calls(outs[0].function()))
    has_dot |= name.find("_acc_dot") != std::string::npos;
  EXPECT_TRUE(has_dot);
  Tensor got = test::run_model(m.save("gemv.onnx"), {{"a", a}})[0];
  Tensor want(DType::Float32, {M, N});
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += a.data<float>()[i * K + k] * b.data<float>()[j * K + k];
      want.data<float>()[i * N + j] = static_cast<float>(1.5 * s + c.data<float>()[j]);
    }
  test::expect_close(got, want);
}

TEST(LowerMatMul, BatchedWithBroadcastAndVector) {
  Tensor a = test::rand_f32({2, 1, 4, 6}, 1), b = test::rand_f32({3, 6, 5}, 2), v = test::rand_f32({5}, 3);
  OnnxBuilder m(13);
  m.input("a", DType::Float32, a.shape).input("b", DType::Float32, b.shape).input("v", DType::Float32, v.shape);
  m.node("MatMul", {"a", "b"}, {"y"}).node("MatMul", {"y", "v"}, {"z"}).output("y").output("z");
  auto out = test::run_model(m.save("matmul.onnx"), {{"a", a}, {"b", b}, {"v", v}});
  Tensor y(DType::Float32, {2, 3, 4, 5}), z(DType::Float32, {2, 3, 4});
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 3; q++)
      for (int i = 0; i < 4; i++) {
        double zs = 0;
        for (int j = 0; j < 5; j++) {
          double s = 0;
          for (int k = 0; k < 6; k++)
            s += a.data<float>()[test::flat(a.shape, {p, 0, i, k})] * b.data<float>()[test::flat(b.shape, {q, k, j})];
          y.data<float>()[test::flat(y.shape, {p, q, i, j})] = static_cast<float>(s);
          zs += s * v.data<float>()[j];
        }
        z.data<float>()[test::flat(z.shape, {p, q, i})] = static_cast<float>(zs);
      }
  test::expect_close(out[0], y);
  test::expect_close(out[1], z);
}

}  // namespace
}  // namespace ts
