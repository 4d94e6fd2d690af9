#include "schedule/default_schedule.h"

#include "schedule/autoscheduler.h"
#include "schedule/default_tile.h"
#include "schedule/schedule_builder.h"
#include "schedule/task_prefetch.h"
#include "schedule/winograd_schedule.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace ts {

namespace {

using Halide::Internal::Function;

// Stages of at least this many points run in parallel whatever their work: a conv's padded copy
// of its input (ResNet-18's 64 x 58 x 58) is otherwise a serial gap in which the other threads
// wait. Smaller ones stay serial (ShuffleNet's 116 x 14 x 14 depthwise convs were slower split).
constexpr int64_t kMinParallelPoints = int64_t{1} << 17;

// Runs `loop` in parallel, `grain` consecutive iterations per task; returns the loop of one
// iteration of `loop` (itself, or the inner loop of the split).
Halide::VarOrRVar parallel_in_tasks(StageRef s, const Halide::VarOrRVar& loop, int64_t grain) {
  if (grain < 2) {
    s.parallel(loop);
    return loop;
  }
  Halide::Var outer(loop.name() + "_t"), inner(loop.name() + "_g");
  s.split(loop, outer, inner, static_cast<int>(grain), Halide::TailStrategy::GuardWithIf).parallel(outer);
  return inner;
}

// Fuses `loops` (innermost first) into one loop, outermost first, named after the outermost.
Halide::VarOrRVar fuse_outermost_first(StageRef s, const std::vector<Halide::VarOrRVar>& loops) {
  Halide::VarOrRVar outer = loops.back();
  for (int k = static_cast<int>(loops.size()) - 2; k >= 0; k--) {
    Halide::Var fused(loops.back().name() + "_" + loops[k].name() + "_f");
    s.fuse(outer, loops[k], fused);
    outer = fused;
  }
  return outer;
}

void vectorize_and_parallelize(StageRef s, const std::vector<Halide::Var>& args, const std::vector<int64_t>& ext,
                               int width, bool vectorize_inner, int64_t work) {
  const int n = static_cast<int>(args.size());
  if (n == 0) return;
  if (vectorize_inner) s.vectorize(args[0], width, Halide::TailStrategy::GuardWithIf);
  if (work < kDefaultParallelWork && stage_work(ext, {}) < kMinParallelPoints) return;
  // Outer loops (all but the innermost, unless it is the only one), fused outermost-first.
  int lo = n - 1;
  int64_t tasks = std::max<int64_t>(ext[n - 1], 1);
  while (tasks < kDefaultParallelTasks && lo > 1) tasks *= std::max<int64_t>(ext[--lo], 1);
  if (tasks < 2) return;
  // The last loop fused may be long (a blocked tensor's row, right outside its lanes): only its
  // outer part joins, so a task is a run of it, not one vector.
  std::vector<Halide::VarOrRVar> loops(args.begin() + lo, args.end());
  const int64_t before = tasks / std::max<int64_t>(ext[lo], 1);
  if (lo < n - 1 && tasks > 8 * kDefaultParallelTasks && ext[lo] >= 2 * kDefaultParallelTasks) {
    const int64_t parts = (kDefaultParallelTasks + before - 1) / before;  // outer iterations of the split loop
    const int factor = static_cast<int>((ext[lo] + parts - 1) / parts);
    Halide::Var lo_o(args[lo].name() + "_po"), lo_i(args[lo].name() + "_pi");
    s.split(args[lo], lo_o, lo_i, factor, Halide::TailStrategy::GuardWithIf);
    loops[0] = lo_o;
    tasks = before * ((ext[lo] + factor - 1) / factor);
  }
  parallel_in_tasks(s, fuse_outermost_first(s, loops), default_task_grain(tasks, work));
}

// The dimension of a transposing copy: the output dimension k > 0 whose variable indexes the
// innermost dimension of every load the pure stage makes (through the Funcs inlined into it: a
// Transpose after a Slice and a Reshape), while its innermost variable indexes none; none when
// the stage is not such a copy. Indices are simplified within the stage's estimated extents, so a
// Reshape's div/mod of a flattened index resolves to the variables it really depends on. A
// dimension whose index steps by one only within blocks (a channel-blocked input read by a plain
// output: lane c % 16) is transposed by blocks of that many.
class TransposedLoads : public Halide::Internal::IRVisitor {
 public:
  TransposedLoads(const Function& fn, const std::vector<int64_t>& ext, const DefaultStructure& ds, int width)
      : args_(fn.args()), ext_(ext), ds_(ds), width_(width) {
    for (size_t d = 0; d < args_.size(); d++) bounds_.push(args_[d], Halide::Internal::Interval(0, static_cast<int>(ext[d] - 1)));
  }
  int found = -1;      // the transposed dimension of the loads seen so far
  int block = 0;       // > 0: found steps by one within blocks of this many (and not across them)
  bool other = false;  // a load dense along the innermost variable, indexed by several, or not analysed

 private:
  using IRVisitor::visit;
  void visit(const Halide::Internal::Call* c) override {
    using namespace Halide::Internal;
    const auto callee = ds_.env.find(c->name);
    if (c->call_type == Call::Halide && callee != ds_.env.end() && !ds_.root.count(c->name)) {
      // An inlined Func: its value with the call's arguments substituted (which visits them too).
      const Function& g = callee->second;
      if (depth_ >= 8 || g.has_update_definition() || g.values().size() != 1) return void(other = true);
      std::map<std::string, Halide::Expr> subs;
      for (size_t i = 0; i < g.args().size(); i++) subs[g.args()[i]] = c->args[i];
      depth_++;
      substitute(subs, g.values()[0]).accept(this);
      depth_--;
      return;
    }
    IRVisitor::visit(c);  // loads inside the arguments (a gather's indices)
    if ((c->call_type != Call::Image && c->call_type != Call::Halide) || c->args.empty()) return;
    // Loads indexed along the innermost variable keep it innermost; others are transposing
    // along the variable that steps their innermost index by one.
    const Halide::Expr inner = simplify(c->args[0], true, bounds_);
    if (expr_uses_var(inner, args_[0])) return void(other = true);
    int k = -1, b = 0;
    for (size_t d = 1; d < args_.size() && k < 0; d++) {
      if (!expr_uses_var(inner, args_[d])) continue;
      const Halide::Var v(args_[d]);
      if (is_const_one(simplify(substitute(args_[d], v + 1, inner) - inner, true, bounds_))) k = static_cast<int>(d);
      for (const int by : {width_, width_ / 2})
        if (k < 0 && by >= 2 && ext_[d] % by == 0 && steps_within_blocks(inner, d, by)) k = static_cast<int>(d), b = by;
    }
    if (k < 0 || (found >= 0 && (found != k || block != b))) other = true;
    else found = k, block = b;
  }
  // Whether `index` steps by one along args_[d] written as (outer * by + inner), inner < by.
  bool steps_within_blocks(const Halide::Expr& index, size_t d, int by) {
    using namespace Halide::Internal;
    const Halide::Var o(args_[d] + "_bo"), i(args_[d] + "_bi");
    bounds_.push(o.name(), Interval(0, static_cast<int>(ext_[d] / by - 1)));
    bounds_.push(i.name(), Interval(0, by - 2));  // a step from inner to inner + 1 stays in the block
    // Simplified first: ((o * 16 + i) + 1) % 16 does not simplify, (o * 16 + i) % 16 does (to i).
    const Halide::Expr split = simplify(substitute(args_[d], o * by + i, index), true, bounds_);
    const bool ok = expr_uses_var(split, i.name()) &&
                    is_const_one(simplify(substitute(i.name(), i + 1, split) - split, true, bounds_));
    bounds_.pop(i.name());
    bounds_.pop(o.name());
    return ok;
  }
  std::vector<std::string> args_;
  const std::vector<int64_t>& ext_;
  const DefaultStructure& ds_;
  int width_;
  Halide::Internal::Scope<Halide::Internal::Interval> bounds_;
  int depth_ = 0;
};

struct TransposedCopy {
  int dim = -1;   // the transposed dimension, -1: not a transposing copy
  int block = 0;  // > 0: it is transposed by blocks of this many (TransposedLoads)
};
TransposedCopy transposed_copy(const Function& fn, const std::vector<int64_t>& ext, const DefaultStructure& ds, int width) {
  if (fn.has_update_definition() || fn.values().size() != 1 || fn.args().size() < 2) return {};
  if (std::any_of(ext.begin(), ext.end(), [](int64_t e) { return e <= 0; })) return {};
  TransposedLoads loads(fn, ext, ds, width);
  fn.values()[0].accept(&loads);
  if (loads.other) return {};
  return {loads.found, loads.block};
}

// A transposing copy (transposed_copy) runs in square tiles of one vector: the vector loop over
// the output's innermost dimension, the transposed dimension unrolled inside it, so a tile's
// gathers read the same few cache lines of the input, where a vector down the whole row gathered
// from rows far apart (the Transformer's key heads: 16 rows 6 KB apart). A copy transposed by
// blocks takes one block per tile (a channel-blocked tensor to a plain one), where each vector
// down a row read one lane of every block's 64-byte line.
void schedule_transposing_copy(FuncRef f, const std::vector<Halide::Var>& args, const std::vector<int64_t>& ext,
                               TransposedCopy t, int width) {
  const int k = t.dim;
  Halide::Var xo(args[0].name() + "_to"), xi(args[0].name() + "_ti"), ko(args[k].name() + "_to"), ki(args[k].name() + "_ti");
  const int kw = t.block > 0 ? t.block : static_cast<int>(std::min<int64_t>(width, ext[k]));
  f.split(args[0], xo, xi, width, Halide::TailStrategy::GuardWithIf)
      .split(args[k], ko, ki, kw, Halide::TailStrategy::GuardWithIf);
  std::vector<Halide::Var> outer = {xo};  // the tile loops, innermost first
  std::vector<int64_t> outer_ext = {(ext[0] + width - 1) / width};
  for (size_t d = 1; d < args.size(); d++) {
    outer.push_back(static_cast<int>(d) == k ? ko : args[d]);
    outer_ext.push_back(static_cast<int>(d) == k ? (ext[d] + kw - 1) / kw : ext[d]);
  }
  std::vector<Halide::VarOrRVar> order = {xi, ki};
  order.insert(order.end(), outer.begin(), outer.end());
  f.reorder(order).vectorize(xi).unroll(ki);
  vectorize_and_parallelize(f, outer, outer_ext, width, false, stage_work(ext, {}));
}

// A root reduction whose lanes are one vector (a classifier's matrix-vector dot, lowered with
// its 16 lanes along K: lower/gemm.cpp) accumulates one vector per point of its next dimension:
// run alone, each point's K loop is one chain of dependent FMAs and one stream of B. This many
// points of that dimension run together, interleaved inside the reduction loops (independent
// accumulators, as many B rows streaming at once); 16 points run the same as 8
// (measured: docs/benchmarks.md, "The default rule").
constexpr int kInterleavedReductionPoints = 8;

// Splits the pure loop `arg` of a reduction's update into groups of kInterleavedReductionPoints,
// the points of a group unrolled (to be placed inside the reduction loops): {groups, points}.
std::pair<Halide::Var, Halide::Var> interleave_points(StageRef st, const Halide::Var& arg) {
  Halide::Var groups(arg.name() + "_io"), points(arg.name() + "_ii");
  st.split(arg, groups, points, kInterleavedReductionPoints, Halide::TailStrategy::GuardWithIf).unroll(points);
  return {groups, points};
}

// A root reduction with no vector loop among its outputs (an SE block's squeeze conv: one pixel,
// 68 output channels that do not block, over 1632 input channels) whose reduction has a loop of
// exactly one vector of lanes (a blocked input's channel lanes, dense in both operands): those
// lanes are factored out (rfactor) into a vector of partial sums per output point, and
// kInterleavedReductionPoints points accumulate together; each point's lanes are summed once at
// the end. Scalar, each point was one chain of dependent FMAs. Returns false, scheduling
// nothing, when `f` is not such a reduction.
bool schedule_lane_factored_reduction(ScheduleBuilder& sb, const Halide::Func& f, const std::vector<int64_t>& ext, int width) {
  const Function& fn = f.function();
  if (f.num_update_definitions() != 1 || ext.empty()) return false;
  const auto& rvars = fn.update(0).schedule().rvars();
  int lane_rvar = -1;
  int64_t other_iterations = 1;
  for (size_t i = 0; i < rvars.size(); i++) {
    const int64_t* e = Halide::Internal::as_const_int(Halide::Internal::simplify(rvars[i].extent));
    if (!e) return false;
    if (*e == width && lane_rvar < 0) lane_rvar = static_cast<int>(i);
    else other_iterations *= *e;
  }
  if (lane_rvar < 0 || other_iterations < 4) return false;
  // rfactor needs a reduction Halide can prove associative.
  const auto& def = fn.update(0);
  if (!Halide::Internal::prove_associativity(fn.name(), def.args(), def.values()).associative()) return false;
  const std::vector<Halide::Var> args = f.args();
  Halide::Var lane(func_base_name(f.name()) + "_lane");
  FuncRef partial = sb.func(f).update(0).rfactor(Halide::RVar(rvars[lane_rvar].var), lane);
  // rfactor appends the lanes as the outermost dimension: store them innermost, one vector.
  std::vector<Halide::Var> storage = {lane};
  storage.insert(storage.end(), args.begin(), args.end());
  partial.compute_root().reorder_storage(storage).reorder(std::vector<Halide::VarOrRVar>(storage.begin(), storage.end())).vectorize(lane);
  // The partial sums' loops, innermost first: lanes, [interleaved points,] reduction, pure.
  StageRef st = partial.update(0);
  std::vector<Halide::VarOrRVar> order = {lane};
  std::vector<Halide::VarOrRVar> outer;
  int points_dim = -1;
  for (size_t d = 0; d < args.size(); d++)
    if (ext[d] >= 2 * kInterleavedReductionPoints && (points_dim < 0 || ext[d] > ext[points_dim])) points_dim = static_cast<int>(d);
  for (size_t d = 0; d < args.size(); d++) {
    if (static_cast<int>(d) != points_dim) {
      outer.push_back(args[d]);
      continue;
    }
    const auto [groups, points] = interleave_points(st, args[d]);
    order.push_back(points);
    outer.push_back(groups);
  }
  // The partial sums reduce over the RVars not factored out, in their order.
  for (size_t i = 0; i < rvars.size(); i++)
    if (static_cast<int>(i) != lane_rvar) order.push_back(Halide::RVar(rvars[i].var));
  order.insert(order.end(), outer.begin(), outer.end());
  st.reorder(order).vectorize(lane);
  return true;
}

void schedule_root(ScheduleBuilder& sb, const Halide::Func& f, const Halide::Target& target, const DefaultStructure& ds) {
  const Function& fn = f.function();
  const std::vector<int64_t> ext = estimate_extents(fn);
  const std::vector<Halide::Var> args = f.args();
  const int width = target.natural_vector_size(f.output_types()[0]);
  const bool vec = !args.empty() && ext[0] * 2 >= width;
  // A row shorter than a vector takes half a vector and a guarded tail, never one guarded vector
  // over the whole row: Halide 14's code generator asserts on such a vector of a reversed load
  // (a reversed Slice of 9 elements) and has faulted on such loops.
  const int row_width = vec && ext[0] < width ? width / 2 : width;
  FuncRef F = sb.func(f);
  F.compute_root();
  if (const TransposedCopy t = vec ? transposed_copy(fn, ext, ds, width) : TransposedCopy{}; t.dim > 0)
    return schedule_transposing_copy(F, args, ext, t, width);
  vectorize_and_parallelize(F, args, ext, row_width, vec, stage_work(ext, {}));
  if (!vec && schedule_lane_factored_reduction(sb, f, ext, width)) return;
  for (int u = 0; u < f.num_update_definitions(); u++) {
    StageRef st = F.update(u);
    const auto& rvars = fn.update(u).schedule().rvars();
    // Loop order, innermost first: vector loop, [interleaved points,] reduction loops, other pure loops.
    std::vector<Halide::VarOrRVar> order;
    if (!args.empty()) order.push_back(args[0]);
    std::vector<Halide::Var> outer_args = args;
    std::vector<int64_t> outer_ext = ext;
    const int points = kInterleavedReductionPoints;
    const bool interleave = vec && ext[0] == width && !rvars.empty() && args.size() >= 2 && ext[1] >= 2 * points;
    if (interleave) {
      const auto [groups, inner] = interleave_points(st, args[1]);
      order.push_back(inner);
      outer_args[1] = groups;
      outer_ext[1] = (ext[1] + points - 1) / points;
    }
    for (const auto& rv : rvars) order.push_back(Halide::RVar(rv.var));
    for (size_t k = 1; k < args.size(); k++) order.push_back(outer_args[k]);
    if (order.size() > 1) st.reorder(order);
    vectorize_and_parallelize(st, outer_args, outer_ext, row_width, vec, stage_work(ext, rvars));
    // A row too short for a vector is unrolled inside the reduction loops (never parallel: the
    // parallel loops are outer ones): its points accumulate independently, and LLVM's loop
    // vectorizer, which Halide 14 still runs, does not see the short loop. Over a 2 x 3
    // AveragePool at stride 2 (rows of 2, 16 planes) it turned it into gathers and scatters that
    // summed the second window without its first column.
    if (!vec && !rvars.empty() && args.size() >= 2 && ext[0] >= 2)
      st.unroll(args[0], static_cast<int>(ext[0]), Halide::TailStrategy::GuardWithIf);
  }
}

// Whether a K-blocked tile runs its output-channel block loop inside the blocks of K (r then
// holds every block).
bool blocks_inside_k_blocks(const TilePlan& p) {
  return p.k_block > 0 && std::any_of(p.outer.begin(), p.outer.begin() + p.streamed + 1,
                                      [](const OuterLoop& l) { return l.kind == OuterKind::Blocks; });
}

// A K-blocked update (default_tile.cpp plan_matmul_streaming, plan_reduction_chunks): r holds
// every row of a column panel (a plain matmul) or every column of a row (a blocked conv); its
// reuse loop split in register tiles runs inside blocks of the outermost reduction loop, the
// inner reduction loops (a blocked conv's lanes) unrolled as the plan says. A plain matmul's
// block of B is copied contiguous once per block (into a wrapper of the Func r reads B through,
// which only r calls: the workload's other stages may read B too) unless B is stored in panels.
void schedule_k_blocked_update(ScheduleBuilder& sb, const Halide::Func& r, const Halide::Func& weights_via, const TileFacts& f,
                               const TilePlan& p) {
  const std::vector<Halide::Var> ra = r.args();
  StageRef st = sb.func(r).update(0);
  const auto& rvars = r.function().update(0).schedule().rvars();
  const Halide::RVar k(rvars.back().var);
  Halide::RVar ko(k.name() + "_ko"), ki(k.name() + "_ki");
  Halide::Var ro(ra[f.u].name() + "_ro"), ri(ra[f.u].name() + "_ri");
  st.split(k, ko, ki, p.k_block, Halide::TailStrategy::GuardWithIf)
      .split(ra[f.u], ro, ri, p.U, Halide::TailStrategy::GuardWithIf);
  const bool blocks = f.v >= 0 && p.Vt > 1;
  // The outer loops inside the blocks of K (p.outer[0..streamed]: r holds all their iterations)
  // run right inside ko, in the tile's order; r's other loops are one iteration (or the tile's).
  std::vector<Halide::VarOrRVar> inside;
  std::set<int> dims_inside = {f.u};
  Halide::Var vo(ra[std::max(f.v, 0)].name() + "_vo"), vi(ra[std::max(f.v, 0)].name() + "_vi");
  const bool blocks_inside = blocks_inside_k_blocks(p);
  for (int j = 0; j <= p.streamed; j++) {
    const OuterLoop& l = p.outer[j];
    if (l.kind == OuterKind::Columns) inside.push_back(ro);
    else if (l.kind == OuterKind::Blocks) inside.push_back(vo);
    else if (l.kind == OuterKind::Pure || l.kind == OuterKind::PureGroup) inside.push_back(ra[l.dim]);
    if (l.kind != OuterKind::Vectors) dims_inside.insert(l.dim);
  }
  if (blocks_inside) st.split(ra[f.v], vo, vi, p.Vt, Halide::TailStrategy::GuardWithIf);
  std::vector<Halide::VarOrRVar> order = {ra[0]};
  if (blocks) order.push_back(blocks_inside ? vi : ra[f.v]);
  order.push_back(ri);
  for (size_t i = 0; i + 1 < rvars.size(); i++) order.push_back(Halide::RVar(rvars[i].var));
  order.push_back(ki);
  order.insert(order.end(), inside.begin(), inside.end());
  order.push_back(ko);
  for (int d = 1; d < static_cast<int>(ra.size()); d++)
    if (!dims_inside.count(d) && !(blocks && d == f.v)) order.push_back(ra[d]);
  st.reorder(order).vectorize(ra[0]).unroll(ri);
  if (blocks) st.unroll(blocks_inside ? vi : ra[f.v]);
  for (int i = 0; i < p.unrolled_rvars; i++)
    if (f.rvar_ext[i] > 1) st.unroll(Halide::RVar(rvars[i].var));
  if (f.blocked) return;
  // A panel-packed B (graph/layout_plan.h, 3 dimensions) is contiguous per block already.
  if (!weights_via.defined() || f.weight_dims > 2) return;
  // The copy has the arguments of the Func r reads B through; r's update (its definition 1) reads it.
  FuncRef staged = sb.func(weights_via).in(sb.func(r));
  staged.compute_at(sb.func(r), ko, 1);
  if (!weights_via.args().empty()) staged.vectorize(weights_via.args()[0], f.V, Halide::TailStrategy::GuardWithIf);
}

// The update of a register tile's accumulator r (computed inside the tile): lanes innermost
// and vectorized, then the reuse loop u and the block loop v (Vt blocks) unrolled, then the
// reduction loops, the innermost ones the plan says unrolled. A streamed tile runs its streamed
// pure loop right inside the outermost reduction loop and prefetches the weights of that loop's
// next iteration from its innermost rolled reduction loop (default_tile.cpp plan_streaming).
void schedule_tile_update(ScheduleBuilder& sb, const Halide::Func& r, const Halide::Func& weights_via, const TileFacts& f,
                          const TilePlan& p) {
  if (p.k_block > 0) return schedule_k_blocked_update(sb, r, weights_via, f, p);
  const std::vector<Halide::Var> ra = r.args();
  const int n = static_cast<int>(ra.size());
  const int u = f.u, v = f.v;
  StageRef st = sb.func(r).update(0);
  // Paired blocks put the block loop right outside the lanes (in the loops and the
  // accumulator's storage): one dense vector of 2 x V lanes per column.
  std::vector<Halide::VarOrRVar> rorder = {ra[0]};
  if (p.pair_blocks) rorder.push_back(ra[v]);
  if (u >= 0) rorder.push_back(ra[u]);
  if (p.Vt > 1 && !p.pair_blocks) rorder.push_back(ra[v]);
  const auto& rvars = r.function().update(0).schedule().rvars();
  const int streamed = p.streamed >= 0 ? p.outer[p.streamed].dim : -1;
  for (size_t i = 0; i < rvars.size(); i++) {
    if (streamed >= 0 && i + 1 == rvars.size()) rorder.push_back(ra[streamed]);
    rorder.push_back(Halide::RVar(rvars[i].var));
  }
  for (int k = 1; k < n; k++)
    if (k != u && !(k == v && p.Vt > 1) && k != streamed) rorder.push_back(ra[k]);
  st.reorder(rorder).vectorize(ra[0]);
  if (u >= 0) st.unroll(ra[u]);
  if (p.pair_blocks) {
    std::vector<Halide::Var> storage = {ra[0], ra[v]};
    for (int k = 1; k < n; k++)
      if (k != v) storage.push_back(ra[k]);
    sb.func(r).reorder_storage(storage);
    // Both loops vectorized (nested ramps): the weights' halves stay two dense loads, where a
    // fused loop's div/mod index became a gather.
    if (p.Vt == 2) {
      st.vectorize(ra[v]);
    } else {
      Halide::Var pair_o("pair_o"), pair_i("pair_i");
      st.split(ra[v], pair_o, pair_i, 2).vectorize(pair_i).unroll(pair_o);
    }
  } else if (p.Vt > 1) {
    st.unroll(ra[v]);
  }
  for (int k = 0; k < p.unrolled_rvars; k++)
    if (f.rvar_ext[k] > 1) st.unroll(Halide::RVar(rvars[k].var));
  // A plain matmul's K loop (one reduction loop, too long to unroll whole) unrolled by 8 (or 4):
  // the loop's own instructions share ports with the FMAs; 8 and 4 run alike
  // (measured: docs/benchmarks.md, "The default rule").
  if (!f.blocked && rvars.size() == 1 && p.unrolled_rvars == 0 && f.rvar_ext[0] >= 16) {
    const int by = f.rvar_ext[0] % 8 == 0 ? 8 : f.rvar_ext[0] % 4 == 0 ? 4 : 1;
    const Halide::RVar k(rvars[0].var), ko(rvars[0].var + "_ko"), ki(rvars[0].var + "_ki");
    if (by > 1) st.split(k, ko, ki, by).unroll(ki);
  }
  if (streamed < 0) return;
  if (!f.weights.empty()) {
    // Halide 14 lowers the region to one prefetch every 64 elements (256 bytes) of its innermost
    // dimension, not one per cache line; the slice is still covered, as consecutive iterations of
    // that loop shift the region by a few lines.
    const int at = std::min(p.unrolled_rvars, static_cast<int>(rvars.size()) - 1);
    st.prefetch(f.weights, Halide::RVar(rvars[at].var), Halide::RVar(rvars.back().var), 1,
                Halide::PrefetchBoundStrategy::NonFaulting);
  }
}

// The tile's parallel loop (`task`: its block tiles, default_tile.cpp tasks_are_block_tiles)
// prefetches the next task's weights over r's loops (schedule/task_prefetch.h).
void request_next_task_weights(ScheduleBuilder& sb, const Halide::Func& o, const Halide::Func& r, const TileFacts& f,
                               const TilePlan& p, const std::string& task) {
  if (f.weights.empty()) return;
  TaskPrefetch req;
  req.task_loop = task;
  req.spread_stage = func_base_name(r.name()) + ".s1";
  req.buffer = f.weights;
  req.task_bytes = task_slice_bytes(f, p);
  req.buffer_bytes = f.weight_bytes;  // the blocks span the weights (tile_facts' contiguous_block_bytes)
  req.locality = weight_prefetch_locality();
  req.walk_ahead_tasks = p.walk_pages_ahead ? kWalkAheadTasks : 0;
  sb.func(o).task_prefetch(req);
}

// Rule 5: output o, elementwise in one reduction r over the same domain, is tiled (vector loop
// x, unrolled reuse loop u) and r computed inside each tile, so its accumulators stay in
// registers. Channel-blocked reductions get the micro-kernel of oneDNN's and ONNX Runtime's
// NCHWc convs: the lane vector times up to 8 columns (u, a divisor of its extent; the next loop
// when no load is reused along one, e.g. depthwise) times 2 output-channel blocks (v), 12-16
// accumulators, with the innermost reduction loops (the kernel's taps, or a 1x1 conv's block
// lanes) unrolled. default_tile.h plans it; this issues the calls.
void schedule_tile(ScheduleBuilder& sb, const DefaultStructure::Tiled& t, const TilePlan& p) {
  const Halide::Func &of = t.o, &rf = t.r;
  const TileFacts& f = t.facts;
  const std::vector<Halide::Var> oa = of.args(), ra = rf.args();
  FuncRef o = sb.func(of), r = sb.func(rf);
  const int u = f.u, v = f.v;
  Halide::Var xo("xo"), xi("xi"), uo("uo"), ui("ui"), vo("vo"), vi("vi");
  o.compute_root();
  o.split(oa[0], xo, xi, f.V * p.X, Halide::TailStrategy::ShiftInwards);  // X vectors: one vectorize, legalized per register
  std::vector<Halide::VarOrRVar> order = {xi};
  if (u >= 0) {
    o.split(oa[u], uo, ui, p.U, Halide::TailStrategy::ShiftInwards);
    order.push_back(ui);
  }
  if (p.Vt > 1) {
    o.split(oa[v], vo, vi, p.Vt, Halide::TailStrategy::ShiftInwards);
    order.push_back(vi);
  }
  // A row group splits its pure loop: the group inside, the groups where the loop was.
  const OuterLoop* group = row_group_loop(p);
  const int grouped_dim = group ? group->dim : -1;
  Halide::Var go, gi;
  if (grouped_dim >= 0) {
    go = Halide::Var(oa[grouped_dim].name() + "_go");
    gi = Halide::Var(oa[grouped_dim].name() + "_gi");
    o.split(oa[grouped_dim], go, gi, static_cast<int>(group->extent), Halide::TailStrategy::ShiftInwards);
  }
  std::vector<Halide::VarOrRVar> outer;  // p.outer's loops, innermost first
  for (const OuterLoop& l : p.outer) {
    switch (l.kind) {
      case OuterKind::Columns: outer.push_back(uo); break;
      case OuterKind::Blocks: outer.push_back(vo); break;
      case OuterKind::Vectors: outer.push_back(xo); break;
      case OuterKind::PureGroup: outer.push_back(gi); break;
      case OuterKind::Pure: outer.push_back(l.dim == grouped_dim ? go : oa[l.dim]); break;
    }
  }
  order.insert(order.end(), outer.begin(), outer.end());
  o.reorder(order).vectorize(xi);
  if (u >= 0) o.unroll(ui);
  if (p.Vt > 1) o.unroll(vi);
  // r at the loop just outside the register tile, or outside the streamed loop: the next outer
  // loop, which may be the parallel one.
  Halide::VarOrRVar at = outer[p.streamed >= 0 ? p.streamed + 1 : 0];
  std::optional<Halide::VarOrRVar> task;  // the loop of one parallel iteration
  if (p.fused > 0) {
    task = parallel_in_tasks(o, fuse_outermost_first(o, std::vector<Halide::VarOrRVar>(outer.end() - p.fused, outer.end())), p.grain);
    if (p.streamed >= 0 && p.streamed + 1 == static_cast<int>(outer.size()) - p.fused) at = *task;
  }
  r.compute_at(o, at).vectorize(ra[0]);
  if (u >= 0 && p.k_block == 0) r.unroll(ra[u]);  // a K-blocked r holds every row: a loop
  if (p.Vt > 1 && !blocks_inside_k_blocks(p)) r.unroll(ra[v]);  // else r holds every block: a loop
  schedule_tile_update(sb, rf, t.weights_via, f, p);
  if (p.prefetch_next_task && task) request_next_task_weights(sb, of, rf, f, p, task->name());
}

}  // namespace

Schedule default_schedule(const PipelineView& view, const std::vector<Halide::Func>& outputs, const Halide::Target& target,
                          const DefaultKnobs& knobs) {
  ScheduleBuilder sb;
  sb.schedule.origin = ScheduleOrigin{kRuleGenerator, knobs.params()};
  if (winograd_schedule(sb, outputs, knobs)) {
    sb.inline_the_rest(outputs);
    return sb.schedule;
  }
  const DefaultStructure ds = default_structure(view, outputs, target);
  std::set<std::string> tiled;
  for (const auto& t : ds.tiles) {
    schedule_tile(sb, t, plan_tile(t.facts, knobs));
    tiled.insert(t.o.name());
    tiled.insert(t.r.name());
    // Its padded inputs are then read in place (inlined, bounds checked per tap).
    if (t.facts.streams_input)
      for (const std::string& callee : view.stage(t.r.name())->producers)
        if (const Stage* c = view.stage(callee); c && !ds.output_names.count(callee) && c->definitions.size() == 1)
          tiled.insert(callee);
  }
  for (const auto& name : ds.root)
    if (!tiled.count(name)) schedule_root(sb, Halide::Func(ds.env.at(name)), target, ds);
  sb.inline_the_rest(outputs);
  return sb.schedule;
}

Schedule default_schedule(const std::vector<Halide::Func>& outputs, const Halide::Target& target, const DefaultKnobs& knobs) {
  return default_schedule(build_pipeline_view(outputs), outputs, target, knobs);
}

std::optional<DefaultKnobs> rule_knobs(const Schedule& s) {
  const AutoschedulerRecipe* legacy = s.autoscheduler && s.autoscheduler->name == kDefaultRecipeName ? &*s.autoscheduler : nullptr;
  const std::map<std::string, std::string>* params = legacy ? &legacy->params : nullptr;
  if (s.origin && s.origin->generator == kRuleGenerator) params = &s.origin->params;
  if (!params || check_default_params(*params)) return std::nullopt;
  return DefaultKnobs::from_params(*params);
}

bool is_rule_default(const Schedule& s) {
  const std::optional<DefaultKnobs> k = rule_knobs(s);
  return k && *k == DefaultKnobs{};
}

void apply_default_schedule(const std::vector<Halide::Func>& outputs, const Halide::Target& target) {
  apply_default_variant(outputs, target, {});
}

void apply_default_variant(const std::vector<Halide::Func>& outputs, const Halide::Target& target,
                           const DefaultKnobs& knobs) {
  apply(default_schedule(outputs, target, knobs), outputs, target);
}

}  // namespace ts
