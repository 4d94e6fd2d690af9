// Gemm and MatMul: an accumulation stage (pure init + one update over the K reduction) followed
// by the output stage that applies alpha/beta/bias, so the schedule space sees one matmul nest.
#include <fmt/format.h>

#include <cmath>

#include "graph/layout_plan.h"
#include "lower/lower.h"

namespace ts {

using Halide::Expr;
using Idx = std::vector<Expr>;

namespace {

// acc(out) = sum_k a_at(out, k) * b_at(out, k), over an RDom of extent K.
LTensor accumulate(const std::string& name, const Shape& out_shape, DType t, int64_t K,
                   const std::function<Expr(const Idx&, Expr)>& a_at, const std::function<Expr(const Idx&, Expr)>& b_at) {
  LTensor acc = define_tensor(name, out_shape, t, [&](const Idx&) { return Halide::cast(halide_type(t), 0); });
  Halide::RDom k(0, static_cast<int>(K), name + "_k");
  std::vector<Halide::Var> args = acc.func.args();
  const int R = static_cast<int>(out_shape.size());
  Idx o(R);
  for (int d = 0; d < R; d++) o[d] = args[R - 1 - d];
  std::vector<Expr> lhs(args.begin(), args.end());
  acc.func(lhs) += a_at(o, k.x) * b_at(o, k.x);
  return acc;
}

// Matrix-vector products with B read transposed (a classifier's Gemm: M <= 4, B = [N, K]): the
// reduction is split so that 16 lanes run along k, acc(n, m) = sum_l dot(l, n, m) with
// dot(l, n, m) = sum_ko a(m, 16 ko + l) * b(n, 16 ko + l). Every row of B then streams in storage
// order; vectorizing along n instead reads each vector of B as a 16-row gather.
constexpr int64_t kDotLanes = 16;

LTensor dot_accumulate(const std::string& name, const Shape& out_shape, DType t, int64_t K,
                       const std::function<Expr(Expr m, Expr k)>& a_at, const std::function<Expr(Expr n, Expr k)>& b_at) {
  const Halide::Type ht = halide_type(t);
  Halide::Var l("kl"), n("d1"), m("d0");
  Halide::RDom ko(0, static_cast<int>(K / kDotLanes), name + "_ko");
  Halide::Func dot(name + "_dot");
  dot(l, n, m) = Halide::cast(ht, 0);
  const Expr k = ko.x * static_cast<int>(kDotLanes) + l;
  dot(l, n, m) += a_at(m, k) * b_at(n, k);
  set_shape_estimates(dot, {out_shape[0], out_shape[1], kDotLanes});
  LTensor acc = define_tensor(name, out_shape, t, [&](const Idx&) { return Halide::cast(ht, 0); });
  Halide::RDom r(0, static_cast<int>(kDotLanes), name + "_l");
  const std::vector<Halide::Var> args = acc.func.args();  // (d1 = n, d0 = m)
  acc.func(args[0], args[1]) += dot(r.x, args[0], args[1]);
  return acc;
}

std::vector<LTensor> gemm(const LowerContext& c) {
  const LTensor &A = c.in(0), &B = c.in(1);
  if (A.rank() != 2 || B.rank() != 2) c.fail("A and B must be 2-D");
  const bool ta = c.node.attr_int("transA", 0) != 0, tb = c.node.attr_int("transB", 0) != 0;
  const int64_t K = ta ? A.shape[0] : A.shape[1];
  if ((tb ? B.shape[1] : B.shape[0]) != K) c.fail(fmt::format("inner dimensions differ: A {} B {}", shape_str(A.shape), shape_str(B.shape)));
  const auto& info = c.out_info();
  auto a_at = [&](Expr m, Expr k) { return ta ? A.at({k, m}) : A.at({m, k}); };
  const bool dot_form = tb && !ta && info.shape[0] <= 4 && K >= 8 * kDotLanes && K % kDotLanes == 0;
  LTensor acc = dot_form ? dot_accumulate(c.name("_acc"), info.shape, info.dtype, K, a_at,
                                          [&](Expr n, Expr k) { return B.at({n, k}); })
                         : accumulate(c.name("_acc"), info.shape, info.dtype, K,
                                      [&](const Idx& o, Expr k) { return a_at(o[0], k); },
                                      [&](const Idx& o, Expr k) { return tb ? B.at({o[1], k}) : B.at({k, o[1]}); });
  const Halide::Type t = halide_type(info.dtype);
  const double alpha = c.node.attr_float("alpha", 1.0), beta = c.node.attr_float("beta", 1.0);
  return {c.output([&](const Idx& o) {
    Expr y = acc.at(o);
    if (alpha != 1.0) y = y * typed_const(t, alpha);
    if (c.has_input(2) && beta != 0.0) {  // as ONNX Runtime: beta 0 ignores C (an Inf in C stays out)
      Expr bias = c.in(2).at_broadcast(o);
      y = y + (beta != 1.0 ? bias * typed_const(t, beta) : bias);
    }
    // Halide compiles float math with LLVM's no-NaN/no-Inf flags, under which a NaN or Inf
    // constant is poison (an alpha of NaN gave 0): such a scale is applied in strict IEEE math.
    return std::isfinite(alpha) && std::isfinite(beta) ? y : Halide::strict_float(y);
  })};
}

// numpy matmul: 1-D operands get a unit dim (then dropped), batch dims broadcast.
std::vector<LTensor> matmul(const LowerContext& c) {
  const LTensor &A = c.in(0), &B = c.in(1);
  const bool a1 = A.rank() == 1, b1 = B.rank() == 1;
  // A constant B the layout plan stored as [N, K] panels (graph/layout_plan.h).
  const bool b_nk = c.node.attr_int(kTransposedBAttr, 0) != 0;
  if (b_nk && B.rank() != 2) c.fail(fmt::format("{} B must be 2-D, got {}", kTransposedBAttr, shape_str(B.shape)));
  const int64_t K = a1 ? A.shape[0] : A.shape[A.rank() - 1];
  if ((b1 ? B.shape[0] : B.shape[B.rank() - (b_nk ? 1 : 2)]) != K)
    c.fail(fmt::format("inner dimensions differ: A {} B {}", shape_str(A.shape), shape_str(B.shape)));
  const auto& info = c.out_info();
  const int R = static_cast<int>(info.shape.size());
  const int batch = R - (a1 ? 0 : 1) - (b1 ? 0 : 1);  // output batch dims
  auto batch_idx = [&](const Idx& o, const LTensor& t) {
    // Right-aligned batch dims of t (all but its last two), broadcast against the output's.
    Idx i;
    const int tb = t.rank() - 2;
    for (int d = 0; d < tb; d++) i.push_back(t.shape[d] == 1 ? Expr(0) : o[batch - tb + d]);
    return i;
  };
  LTensor acc = accumulate(
      c.name("_acc"), info.shape, info.dtype, K,
      [&](const Idx& o, Expr k) {
        if (a1) return A.at({k});
        Idx i = batch_idx(o, A);
        i.push_back(o[batch]);
        i.push_back(k);
        return A.at(i);
      },
      [&](const Idx& o, Expr k) {
        if (b1) return B.at({k});
        if (b_nk) return B.at({o[R - 1], k});
        Idx i = batch_idx(o, B);
        i.push_back(k);
        i.push_back(o[R - 1]);
        return B.at(i);
      });
  return {c.output([&](const Idx& o) { return acc.at(o); })};
}

}  // namespace

void register_gemm_ops(std::map<std::string, LowerFn>& r) {
  r["Gemm"] = gemm;
  r["MatMul"] = matmul;
}

}  // namespace ts
