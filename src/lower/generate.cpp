// Ops whose values depend on element positions: Trilu, EyeLike, OneHot and CumSum. Inputs that
// set shapes or loop structure (OneHot's depth, CumSum's axis) must be constants, as shapes and
// loops are fixed at compile time; a diagonal offset only enters a comparison and may be read at
// run time.
#include <fmt/format.h>

#include "graph/const_eval.h"
#include "lower/lower.h"

namespace ts {

using Halide::Expr;
using Idx = std::vector<Expr>;

namespace {

std::vector<LTensor> one(LTensor t) { return {std::move(t)}; }

// A diagonal offset k (any integer type) for a rows x cols matrix as an int, clamped so that it
// fits: offsets beyond the matrix select all of it or none of it either way.
Expr diagonal_offset(Expr k, int64_t rows, int64_t cols) {
  const Halide::Type i64 = Halide::Int(64);
  return Halide::cast<int>(Halide::clamp(Halide::cast(i64, k), typed_const(i64, -rows - 1), typed_const(i64, cols + 1)));
}

// Trilu: keeps the elements on and above (upper=1) or on and below (upper=0) diagonal k of the
// last two axes, zeroes the others.
std::vector<LTensor> lower_trilu(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int r = x.rank();
  if (r < 2) c.fail(fmt::format("input rank {} (at least 2)", r));
  const bool upper = c.node.attr_int("upper", 1) != 0;
  const Halide::Type i64 = Halide::Int(64);
  Expr k = typed_const(i64, int64_t{0});
  if (c.has_input(1)) {
    const LTensor& kin = c.in(1);
    if (num_elements(kin.shape) != 1) c.fail("k must hold one value");
    const Tensor* kt = c.constant(1);  // a constant k becomes a literal, not a load
    k = kt ? typed_const(i64, kt->get_i64(0)) : kin.at(Idx(kin.rank(), Expr(0)));
  }
  k = diagonal_offset(k, x.shape[r - 2], x.shape[r - 1]);
  return one(c.output([&](const Idx& i) {
    Expr diag = i[r - 1] - i[r - 2];  // which diagonal the element lies on
    Expr keep = upper ? diag >= k : diag <= k;
    return Halide::select(keep, x.at(i), Halide::cast(x.type(), 0));
  }));
}

// EyeLike: ones on diagonal k of a 2-D tensor shaped like the input (which is never read).
std::vector<LTensor> lower_eye_like(const LowerContext& c) {
  const Shape& s = c.out_info().shape;
  if (s.size() != 2) c.fail(fmt::format("input rank {} (must be 2)", s.size()));
  const Expr k = diagonal_offset(typed_const(Halide::Int(64), c.node.attr_int("k", 0)), s[0], s[1]);
  return one(c.output([&](const Idx& i) { return Halide::select(i[1] - i[0] == k, 1, 0); }));
}

// OneHot: output[..., j (at axis), ...] = indices[...] == j ? on : off, with values = [off, on].
// The depth is the output's extent along axis: ONNX shape inference leaves that axis unknown, so a
// static output shape (declared by the model) is what fixes it. Negative indices count from
// depth; indices out of [-depth, depth) match nothing.
std::vector<LTensor> lower_one_hot(const LowerContext& c) {
  const LTensor &ind = c.in(0), &values = c.in(2);
  const Shape& os = c.out_info().shape;
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", -1), static_cast<int>(os.size()), c.node));
  if (values.rank() != 1 || values.shape[0] != 2) c.fail(fmt::format("values has shape {} (must be [2])", shape_str(values.shape)));
  if (const Tensor* d = c.constant(1); d && d->size() == 1 && static_cast<int64_t>(d->get_f64(0)) != os[axis])
    c.fail(fmt::format("depth {} but the output has {} along axis {}", d->get_f64(0), os[axis], axis));
  const Expr depth = typed_const(Halide::Int(64), os[axis]);
  return one(c.output([&](const Idx& i) {
    Idx src = i;
    src.erase(src.begin() + axis);
    // Float indices truncate, as the spec's cast to int64 does.
    Expr v = Halide::cast(Halide::Int(64), ind.at(src));
    v = Halide::select(v < 0, v + depth, v);
    return Halide::select(v == Halide::cast(Halide::Int(64), i[axis]), values.at({Expr(1)}), values.at({Expr(0)}));
  }));
}

// CumSum as one reduction stage: out = 0, then out += x along the axis over an RDom whose `where`
// keeps the positions before (or, reversed, after) the output's, the output's own included unless
// exclusive. Quadratic in the axis length, but shaped like every other reduction for the schedules.
std::vector<LTensor> lower_cumsum(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int r = x.rank();
  // Of rank 1, every valid axis (0 or -1) is axis 0, constant or not.
  const Tensor* at = r == 1 && !c.constant(1) ? nullptr : &c.require_constant(1, "axis");
  if (at && at->size() != 1) c.fail("axis must hold one value");
  const int axis = at ? static_cast<int>(normalize_axis(at->get_i64(0), r, c.node)) : 0;
  const bool exclusive = c.node.attr_int("exclusive", 0) != 0, reverse = c.node.attr_int("reverse", 0) != 0;
  LTensor out = c.output([&](const Idx&) { return Halide::cast(x.type(), 0); });
  if (num_elements(x.shape) == 0) return one(out);
  const std::vector<Halide::Var> args = out.func.args();
  Idx idx(r);
  for (int d = 0; d < r; d++) idx[d] = args[r - 1 - d];
  Halide::RDom rd(0, static_cast<int>(x.shape[axis]), c.name("_r"));
  const Expr j = idx[axis];
  rd.where(reverse ? (exclusive ? rd > j : rd >= j) : (exclusive ? rd < j : rd <= j));
  Idx src = idx;
  src[axis] = rd;
  const std::vector<Expr> lhs(args.begin(), args.end());
  out.func(lhs) = out.func(lhs) + x.at(src);
  return one(out);
}

}  // namespace

void register_generate_ops(std::map<std::string, LowerFn>& r) {
  r["Trilu"] = lower_trilu;
  r["EyeLike"] = lower_eye_like;
  r["OneHot"] = lower_one_hot;
  r["CumSum"] = lower_cumsum;
}

}  // namespace ts
