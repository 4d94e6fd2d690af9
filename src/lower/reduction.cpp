#include "lower/reduction.h"

namespace ts {

using Halide::Expr;

Shape reduced_shape(const ReduceSpec& spec) {
  Shape s;
  for (int d = 0; d < static_cast<int>(spec.in_shape.size()); d++) {
    if (!spec.axes.count(d)) s.push_back(spec.in_shape[d]);
    else if (spec.keepdims) s.push_back(1);
  }
  return s;
}

int64_t reduction_size(const ReduceSpec& spec) {
  int64_t n = 1;
  for (int a : spec.axes) n *= spec.in_shape[a];
  return n;
}

LTensor reduce_tensor(const std::string& name, const ReduceSpec& spec, Expr init,
                      const std::function<Expr(Expr, Expr)>& combine,
                      const std::function<Expr(const Idx&)>& value) {
  Shape out_shape = reduced_shape(spec);
  std::vector<Halide::Range> ranges;
  for (int a : spec.axes) ranges.emplace_back(0, static_cast<int>(spec.in_shape[a]));
  Halide::RDom r(ranges, name + "_r");
  Halide::Type t = halide_type(spec.acc_type);
  LTensor out = define_tensor(name, out_shape, spec.acc_type, [&](const Idx&) { return Halide::cast(t, init); });
  // Rebuild the pure arguments to write the update with the same left-hand side.
  std::vector<Halide::Var> args = out.func.args();
  const int R = static_cast<int>(out_shape.size());
  Idx out_idx(R);
  for (int d = 0; d < R; d++) out_idx[d] = args[R - 1 - d];
  Idx in_idx;
  int od = 0, rk = 0;
  for (int d = 0; d < static_cast<int>(spec.in_shape.size()); d++) {
    if (spec.axes.count(d)) {
      in_idx.push_back(r[rk++]);
      if (spec.keepdims) od++;
    } else {
      in_idx.push_back(out_idx[od++]);
    }
  }
  std::vector<Expr> lhs(args.begin(), args.end());
  out.func(lhs) = Halide::cast(t, combine(out.func(lhs), value(in_idx)));
  return out;
}

LTensor reduce_last_axis(const std::string& name, const ReduceSpec& spec, Expr init,
                         const std::function<Expr(Expr, Expr)>& combine, const std::function<Expr(const Idx&)>& value) {
  const int rank = static_cast<int>(spec.in_shape.size());
  const int64_t K = rank > 0 ? spec.in_shape.back() : 0;
  if (rank == 0 || spec.axes != std::set<int>{rank - 1} || !spec.keepdims || K < 2 * kReduceLanes)
    return reduce_tensor(name, spec, init, combine, value);
  const int L = static_cast<int>(kReduceLanes);
  const int64_t steps = (K + L - 1) / L;
  // Partials: [..., steps, L] reduced over its axis rank - 1 (keepdims: [..., 1, L]). Past the
  // row's end (K not a multiple of L) a lane reads the last element and contributes init.
  ReduceSpec lanes = spec;
  lanes.in_shape.back() = steps;
  lanes.in_shape.push_back(L);
  const LTensor part = reduce_tensor(name + "_lanes", lanes, init, combine, [&](const Idx& i) {
    Idx j(i.begin(), i.end() - 1);
    const Expr k = i[rank - 1] * L + i[rank];
    if (K % L == 0) {
      j.back() = k;
      return value(j);
    }
    j.back() = Halide::min(k, static_cast<int>(K - 1));
    return Halide::select(k < static_cast<int>(K), value(j), init);
  });
  ReduceSpec across = spec;
  across.in_shape.back() = L;
  return reduce_tensor(name, across, init, combine, [&](const Idx& i) {
    Idx j = i;
    j.back() = 0;
    j.push_back(i[rank - 1]);
    return part.at(j);
  });
}

Expr read_reduced(const LTensor& reduced, const Idx& in_idx, const std::set<int>& axes) {
  Idx idx = in_idx;
  for (int a : axes) idx[a] = 0;
  return reduced.at(idx);
}

}  // namespace ts
