#include <gtest/gtest.h>

#include <algorithm>

#include "lower/lower_test_util.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

using test::OnnxBuilder;

Tensor ramp(const Shape& s, float scale) {
  Tensor t(DType::Float32, s);
  for (int64_t i = 0; i < t.size(); i++) t.data<float>()[i] = scale * static_cast<float>(i % 7 - 3);
  return t;
}

Tensor run_einsum(const std::string& equation, const std::vector<Tensor>& in) {
  OnnxBuilder m(13);
  std::vector<std::string> names;
  std::map<std::string, Tensor> feeds;
  for (size_t k = 0; k < in.size(); k++) {
    names.push_back("x" + std::to_string(k));
    m.input(names.back(), DType::Float32, in[k].shape);
    feeds[names.back()] = in[k];
  }
  m.node("Einsum", names, {"y"}, {{"equation", equation}}).output("y");
  return test::run_model(m.save("einsum.onnx"), feeds).at(0);
}

// Reference: a [Na, I, J] x b [Nb, J, K] per batch, a batch of 1 broadcast.
Tensor batched_matmul(const Tensor& a, const Tensor& b) {
  const int64_t batches = std::max(a.shape[0], b.shape[0]), I = a.shape[1], J = a.shape[2], K = b.shape[2];
  Tensor want(DType::Float32, {batches, I, K});
  for (int64_t n = 0; n < batches; n++)
    for (int64_t i = 0; i < I; i++)
      for (int64_t k = 0; k < K; k++) {
        float s = 0;
        for (int64_t j = 0; j < J; j++)
          s += a.data<float>()[test::flat(a.shape, {a.shape[0] == 1 ? 0 : n, i, j})] *
               b.data<float>()[test::flat(b.shape, {b.shape[0] == 1 ? 0 : n, j, k})];
        want.data<float>()[test::flat(want.shape, {n, i, k})] = s;
      }
  return want;
}

TEST(LowerEinsum, BatchedMatMulWithExplicitOutput) {
  const Tensor a = ramp({2, 3, 4}, 0.5f), b = ramp({2, 4, 5}, 0.25f);
  test::expect_close(run_einsum("bij, bjk -> bik", {a, b}), batched_matmul(a, b));
}

TEST(LowerEinsum, ImplicitOutputEllipsisBroadcastAndDiagonal) {
  // "...ij,...jk": implicit output ...ik, the first operand's batch axis of 1 broadcast.
  const Tensor a = ramp({1, 2, 3}, 1.0f), b = ramp({4, 3, 2}, 1.0f);
  test::expect_close(run_einsum("...ij,...jk", {a, b}), batched_matmul(a, b));
  // The trace (a label twice, summed away), a transpose and an outer product.
  const Tensor sq = ramp({3, 3}, 1.0f);
  const float* q = sq.data<float>();
  test::expect_close(run_einsum("ii->", {sq}), test::make_f32({}, {q[0] + q[4] + q[8]}));
  test::expect_close(run_einsum("ij->ji", {sq}), test::make_f32({3, 3}, {q[0], q[3], q[6], q[1], q[4], q[7], q[2], q[5], q[8]}));
  test::expect_close(run_einsum("i,j", {test::make_f32({2}, {2, 3}), test::make_f32({3}, {1, 10, 100})}),
                     test::make_f32({2, 3}, {2, 20, 200, 3, 30, 300}));
}

TEST(LowerEinsum, MismatchedExtentsNameTheNode) {
  EXPECT_TRUE(test::throws_naming([&] { run_einsum("ij,jk->ik", {ramp({2, 3}, 1.0f), ramp({4, 2}, 1.0f)}); },
                                  {"Einsum_0", "label 'j' has extents 3 and 4"}));
}

}  // namespace
}  // namespace ts
