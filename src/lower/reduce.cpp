// Reduce* ops and ArgMax/ArgMin, on the shared reduction stage (reduction.h).
#include <fmt/format.h>

#include <limits>

#include "graph/const_eval.h"
#include "lower/math.h"
#include "lower/reduction.h"

namespace ts {

using Halide::Expr;

namespace {

// How each Reduce* op starts, combines, maps its input and finishes (n = elements reduced).
struct ReduceKind {
  std::function<Expr(Halide::Type)> init;
  std::function<Expr(Expr, Expr)> combine;
  std::function<Expr(Expr)> map;              // applied to each input value
  std::function<Expr(Expr, int64_t)> finish;  // applied to the reduced value
};

Expr identity(Expr x) { return x; }
Expr lowest(Halide::Type t) {
  return t.is_float() ? typed_const(t, -std::numeric_limits<double>::infinity()) : t.min();
}
Expr highest(Halide::Type t) {
  return t.is_float() ? typed_const(t, std::numeric_limits<double>::infinity()) : t.max();
}
Expr sum(Expr a, Expr b) { return a + b; }

ReduceSpec spec_from_node(const LowerContext& c, bool* noop) {
  const LTensor& x = c.in(0);
  std::vector<int64_t> axes;
  if (c.has_input(1)) {
    axes = c.require_constant(1, "axes").to_i64_vector();
  } else {
    axes = c.node.attr_ints("axes");
  }
  ReduceSpec s;
  s.in_shape = x.shape;
  s.keepdims = c.node.attr_int("keepdims", 1) != 0;
  s.acc_type = x.dtype;
  for (int64_t a : axes) s.axes.insert(static_cast<int>(normalize_axis(a, x.rank(), c.node)));
  *noop = s.axes.empty() && c.node.attr_int("noop_with_empty_axes", 0) != 0;
  if (s.axes.empty())
    for (int d = 0; d < x.rank(); d++) s.axes.insert(d);
  return s;
}

LowerFn reduce_op(ReduceKind k) {
  return [k](const LowerContext& c) {
    const LTensor& x = c.in(0);
    bool noop = false;
    ReduceSpec s = spec_from_node(c, &noop);
    if (noop) return std::vector<LTensor>{c.output([&](const Idx& i) { return x.at(i); })};
    if (x.rank() == 0) return std::vector<LTensor>{c.output([&](const Idx& i) { return k.finish(k.map(x.at(i)), 1); })};
    const int64_t n = reduction_size(s);
    LTensor acc = reduce_tensor(c.name("_acc"), s, k.init(x.type()), k.combine,
                                [&](const Idx& i) { return k.map(x.at(i)); });
    return std::vector<LTensor>{c.output([&](const Idx& i) { return k.finish(acc.at(i), n); })};
  };
}

// ArgMax/ArgMin: the extreme value along `axis`, then its first (or last) index.
LowerFn arg_op(bool is_max) {
  return [is_max](const LowerContext& c) {
    const LTensor& x = c.in(0);
    ReduceSpec s;
    s.in_shape = x.shape;
    s.axes = {static_cast<int>(normalize_axis(c.node.attr_int("axis", 0), x.rank(), c.node))};
    s.keepdims = true;
    s.acc_type = x.dtype;
    const int axis = *s.axes.begin();
    auto pick = [is_max](Expr a, Expr b) { return is_max ? Halide::max(a, b) : Halide::min(a, b); };
    LTensor best = reduce_tensor(c.name("_best"), s, is_max ? lowest(x.type()) : highest(x.type()), pick,
                                 [&](const Idx& i) { return x.at(i); });
    const bool last = c.node.attr_int("select_last_index", 0) != 0;
    ReduceSpec si = s;
    si.acc_type = DType::Int64;
    const Expr none = typed_const(Halide::Int(64), last ? int64_t{-1} : x.shape[axis]);
    LTensor index = reduce_tensor(
        c.name("_index"), si, none,
        [last](Expr a, Expr b) { return last ? Halide::max(a, b) : Halide::min(a, b); },
        [&](const Idx& i) {
          return Halide::select(x.at(i) == read_reduced(best, i, s.axes), Halide::cast<int64_t>(i[axis]), none);
        });
    const bool keep = c.node.attr_int("keepdims", 1) != 0;
    return std::vector<LTensor>{c.output([&](const Idx& o) {
      Idx i = o;
      if (!keep) i.insert(i.begin() + axis, Expr(0));
      return index.at(i);
    })};
  };
}

}  // namespace

void register_reduce_ops(std::map<std::string, LowerFn>& r) {
  auto zero = [](Halide::Type t) { return typed_const(t, int64_t{0}); };
  auto one = [](Halide::Type t) { return typed_const(t, int64_t{1}); };
  auto no_finish = [](Expr v, int64_t) { return v; };
  auto square = [](Expr x) { return x * x; };
  r["ReduceSum"] = reduce_op({zero, sum, identity, no_finish});
  r["ReduceMean"] = reduce_op({zero, sum, identity, [](Expr v, int64_t n) { return v / typed_const(v.type(), n); }});
  r["ReduceMax"] = reduce_op({lowest, [](Expr a, Expr b) { return Halide::max(a, b); }, identity, no_finish});
  r["ReduceMin"] = reduce_op({highest, [](Expr a, Expr b) { return Halide::min(a, b); }, identity, no_finish});
  r["ReduceProd"] = reduce_op({one, [](Expr a, Expr b) { return a * b; }, identity, no_finish});
  r["ReduceL1"] = reduce_op({zero, sum, [](Expr x) { return Halide::cast(x.type(), Halide::abs(x)); }, no_finish});
  r["ReduceL2"] = reduce_op({zero, sum, square, [](Expr v, int64_t) {
                               return v.type().is_float() ? Halide::sqrt(v)
                                                          : Halide::cast(v.type(), Halide::sqrt(Halide::cast<double>(v)));
                             }});
  r["ReduceSumSquare"] = reduce_op({zero, sum, square, no_finish});
  r["ReduceLogSum"] = reduce_op({zero, sum, identity, [](Expr v, int64_t) { return ts_log(v); }});
  r["ReduceLogSumExp"] = reduce_op({zero, sum, [](Expr x) { return ts_exp(x); }, [](Expr v, int64_t) { return ts_log(v); }});
  r["ArgMax"] = arg_op(true);
  r["ArgMin"] = arg_op(false);
}

}  // namespace ts
