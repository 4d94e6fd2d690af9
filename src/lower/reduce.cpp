// Reduce* ops, ArgMax/ArgMin and TopK, on the shared reduction stage (reduction.h).
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

// TopK: the k largest (or smallest) elements along `axis` and their indices, sorted, equal values
// in index order. Each element's rank along its row is the count of elements that precede it in
// that order (one reduction over the row: n^2 comparisons a row); output position k reads the
// element whose rank is k (a second reduction, n*k). No sort, so the schedule space sees two
// plain reduction loop nests; rows of a few thousand elements (detection heads) cost a few
// million comparisons.
std::vector<LTensor> lower_top_k(const LowerContext& c) {
  const LTensor& x = c.in(0);
  if (x.rank() == 0) c.fail("a scalar input (rank >= 1 expected)");
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", -1), x.rank(), c.node));
  const int64_t k = c.opset() < 10 ? c.node.attr_int("k", -1) : c.require_constant(1, "K").to_i64_vector().at(0);
  const int64_t n = x.shape[axis];
  if (k < 0 || k > n) c.fail(fmt::format("K = {} for an axis of {} elements", k, n));
  if (k == 0) c.unsupported("K = 0 (empty outputs)");
  if (c.out_info(0).shape[axis] != k) c.fail(fmt::format("output axis {} has {} elements for K = {}", axis, c.out_info(0).shape[axis], k));
  const bool largest = c.node.attr_int("largest", 1) != 0;
  const int r = x.rank();
  // Whether the element at index j of a row comes before the one at index i.
  auto before = [&](const Idx& i, Expr j) {
    Idx at_j = i;
    at_j[axis] = j;
    const Expr a = x.at(at_j), b = x.at(i);
    return (largest ? a > b : a < b) || (a == b && j < i[axis]);
  };
  auto count = [](Expr acc, Expr v) { return acc + v; };
  // rank[i] over the pairs (i, j): the extra last axis is j.
  ReduceSpec pairs;
  pairs.in_shape = x.shape;
  pairs.in_shape.push_back(n);
  pairs.axes = {r};
  pairs.keepdims = false;
  pairs.acc_type = DType::Int32;
  const LTensor rank = reduce_tensor(c.name("_rank"), pairs, Expr(0), count, [&](const Idx& p) {
    return Halide::select(before(Idx(p.begin(), p.end() - 1), p[r]), 1, 0);
  });
  // index[o]: the j whose rank is o's position along the axis.
  ReduceSpec pick = pairs;
  pick.in_shape = c.out_info(0).shape;
  pick.in_shape.push_back(n);
  pick.acc_type = DType::Int32;
  const LTensor index = reduce_tensor(c.name("_index"), pick, Expr(0), count, [&](const Idx& p) {
    Idx row(p.begin(), p.end() - 1);
    const Expr position = row[axis];
    row[axis] = p[r];
    return Halide::select(rank.at(row) == position, p[r], 0);
  });
  auto source = [&](const Idx& o) {
    Idx i = o;
    i[axis] = Halide::clamp(index.at(o), 0, static_cast<int>(n - 1));
    return i;
  };
  return {c.output([&](const Idx& o) { return x.at(source(o)); }, 0),
          c.output([&](const Idx& o) { return Halide::cast<int64_t>(index.at(o)); }, 1)};
}

}  // namespace

void register_reduce_ops(std::map<std::string, LowerFn>& r) {
  auto zero = [](Halide::Type t) { return typed_const(t, int64_t{0}); };
  auto one = [](Halide::Type t) { return typed_const(t, int64_t{1}); };
  auto no_finish = [](Expr v, int64_t) { return v; };
  auto square = [](Expr x) { return x * x; };
  r["ReduceSum"] = reduce_op({zero, sum, identity, no_finish});
  r["ReduceMean"] = reduce_op({zero, sum, identity, [](Expr v, int64_t n) { return v / typed_const(v.type(), n); }});
  r["ReduceMax"] = reduce_op({lowest, nan_max, identity, no_finish});  // a NaN makes the result NaN
  r["ReduceMin"] = reduce_op({highest, nan_min, identity, no_finish});
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
  r["TopK"] = lower_top_k;
}

}  // namespace ts
