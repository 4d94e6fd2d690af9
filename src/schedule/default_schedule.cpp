#include "schedule/default_schedule.h"

#include <algorithm>
#include <map>
#include <set>

namespace ts {

namespace {

using Halide::Internal::Function;

constexpr int64_t kMinParallelTasks = 8;  // fuse outer loops until there are this many tasks
// Below this much work a stage runs on one thread: splitting a small stage costs more than it
// saves (ShuffleNet's 149 steps ran slower on 2 threads than on 1 with Halide's own pool, whose
// wake-up costs tens of microseconds; measure/spinning_pool.h cut that, not the cache traffic).
// Work = the stage's points x its reduction's iterations.
constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Stages of at least this many points run in parallel whatever their work: a conv's padded copy
// of its input (ResNet-18's 64 x 58 x 58) is otherwise a serial gap in which the other threads
// wait. Smaller ones stay serial (ShuffleNet's 116 x 14 x 14 depthwise convs were slower split).
constexpr int64_t kMinParallelPoints = int64_t{1} << 17;
// Work (points x reduction iterations) a parallel task should have at least: Halide 14's thread
// pool takes a global lock per task, so a thousand ~1 us tasks (a WaveNet conv's column tiles)
// ran slower on 2 threads than on 1. Runs of consecutive iterations are grouped into one task
// until it holds this much, keeping at least kMinGroupedTasks tasks for load balance.
constexpr int64_t kMinTaskWork = int64_t{1} << 18;
constexpr int64_t kMinGroupedTasks = 64;

// True when f's value is g(args...) with f's own arguments: a rename that costs nothing inline.
bool is_rename(const Function& f) {
  if (f.has_update_definition() || f.values().size() != 1) return false;
  const auto* call = f.values()[0].as<Halide::Internal::Call>();
  if (!call || call->args.size() != f.args().size()) return false;
  for (size_t i = 0; i < call->args.size(); i++) {
    const auto* v = call->args[i].as<Halide::Internal::Variable>();
    if (!v || v->name != f.args()[i]) return false;
  }
  return true;
}

// Extent of each pure argument (innermost first) from the Func's estimates; 0 when unknown.
std::vector<int64_t> extents(const Function& f) {
  std::vector<int64_t> e(f.args().size(), 0);
  for (const auto& b : f.schedule().estimates())
    for (size_t i = 0; i < f.args().size(); i++)
      if (f.args()[i] == b.var) {
        if (const int64_t* v = Halide::Internal::as_const_int(b.extent)) e[i] = *v;
      }
  return e;
}

// Points of a loop nest with extents `ext` times the iterations of the reduction `rvars`.
int64_t stage_work(const std::vector<int64_t>& ext, const std::vector<Halide::Internal::ReductionVariable>& rvars) {
  int64_t w = 1;
  for (int64_t e : ext) w *= std::max<int64_t>(e, 1);
  for (const auto& rv : rvars)
    if (const int64_t* e = Halide::Internal::as_const_int(Halide::Internal::simplify(rv.extent))) w *= std::max<int64_t>(*e, 1);
  return w;
}

// Runs `loop` (with `tasks` iterations, `work` in all) in parallel, grouping consecutive
// iterations into tasks of at least kMinTaskWork.
template <typename StageT>
void parallel_in_tasks(StageT s, const Halide::VarOrRVar& loop, int64_t tasks, int64_t work) {
  const int64_t per_task = std::max<int64_t>(work / std::max<int64_t>(tasks, 1), 1);
  const int64_t grain = std::min((kMinTaskWork + per_task - 1) / per_task, tasks / kMinGroupedTasks);
  if (grain < 2) {
    s.parallel(loop);
    return;
  }
  Halide::Var outer(loop.name() + "_t"), inner(loop.name() + "_g");
  s.split(loop, outer, inner, static_cast<int>(grain), Halide::TailStrategy::GuardWithIf).parallel(outer);
}

template <typename StageT>
void vectorize_and_parallelize(StageT s, const std::vector<Halide::Var>& args, const std::vector<int64_t>& ext,
                               int width, bool vectorize_inner, int64_t work) {
  const int n = static_cast<int>(args.size());
  if (n == 0) return;
  if (vectorize_inner) s.vectorize(args[0], width, Halide::TailStrategy::GuardWithIf);
  if (work < kMinParallelWork && stage_work(ext, {}) < kMinParallelPoints) return;
  // Outer loops (all but the innermost, unless it is the only one), fused outermost-first.
  int lo = n - 1;
  int64_t tasks = std::max<int64_t>(ext[n - 1], 1);
  while (tasks < kMinParallelTasks && lo > 1) tasks *= std::max<int64_t>(ext[--lo], 1);
  if (tasks < 2) return;
  // The last loop fused may be long (a blocked tensor's row, right outside its lanes): only its
  // outer part joins, so a task is a run of it, not one vector.
  std::vector<Halide::VarOrRVar> loops(args.begin(), args.end());
  const int64_t before = tasks / std::max<int64_t>(ext[lo], 1);
  if (lo < n - 1 && tasks > 8 * kMinParallelTasks && ext[lo] >= 2 * kMinParallelTasks) {
    const int64_t parts = (kMinParallelTasks + before - 1) / before;  // outer iterations of the split loop
    const int factor = static_cast<int>((ext[lo] + parts - 1) / parts);
    Halide::Var lo_o(args[lo].name() + "_po"), lo_i(args[lo].name() + "_pi");
    s.split(args[lo], lo_o, lo_i, factor, Halide::TailStrategy::GuardWithIf);
    loops[lo] = lo_o;
    tasks = before * ((ext[lo] + factor - 1) / factor);
  }
  Halide::VarOrRVar outer = loops[n - 1];
  for (int k = n - 2; k >= lo; k--) {
    Halide::Var fused(loops[n - 1].name() + "_" + loops[k].name() + "_f");
    s.fuse(outer, loops[k], fused);
    outer = fused;
  }
  parallel_in_tasks(s, outer, tasks, work);
}

void schedule_root(Halide::Func f, const Halide::Target& target) {
  const Function& fn = f.function();
  const std::vector<int64_t> ext = extents(fn);
  const std::vector<Halide::Var> args = f.args();
  const int width = target.natural_vector_size(f.output_types()[0]);
  const bool vec = !args.empty() && ext[0] * 2 >= width;
  f.compute_root();
  vectorize_and_parallelize(f, args, ext, width, vec, stage_work(ext, {}));
  for (int u = 0; u < f.num_update_definitions(); u++) {
    Halide::Stage st = f.update(u);
    // Loop order, innermost first: vector loop, reduction loops, other pure loops.
    std::vector<Halide::VarOrRVar> order;
    if (!args.empty()) order.push_back(args[0]);
    for (const auto& rv : fn.update(u).schedule().rvars()) order.push_back(Halide::RVar(rv.var));
    for (size_t k = 1; k < args.size(); k++) order.push_back(args[k]);
    if (order.size() > 1) st.reorder(order);
    vectorize_and_parallelize(st, args, ext, width, vec, stage_work(ext, fn.update(u).schedule().rvars()));
  }
}

// A load of another Func or input (reading a stage's own accumulator is not a load to reuse).
bool is_load(const Halide::Internal::Call* op, const std::string& self) {
  return (op->call_type == Halide::Internal::Call::Halide || op->call_type == Halide::Internal::Call::Image) &&
         op->name != self;
}

// Variables named in the arguments of each call in e. A tree walk, not an IRGraphVisitor: that
// visits a shared node once, so a pure variable already met in the stage's own accumulator call
// went missing from the loads that share it (a depthwise conv's input load then looked free of
// its spatial loops, and its padded input was materialized instead of streamed).
struct CallVars : Halide::Internal::IRVisitor {
  std::string self;  // the stage's own name
  std::vector<std::set<std::string>> calls;
  std::set<std::string>* current = nullptr;
  using IRVisitor::visit;
  void visit(const Halide::Internal::Call* op) override {
    if (!is_load(op, self)) {
      IRVisitor::visit(op);
      return;
    }
    calls.emplace_back();
    std::set<std::string>* saved = current;
    current = &calls.back();
    for (const auto& a : op->args) a.accept(this);
    current = saved;
  }
  void visit(const Halide::Internal::Variable* op) override {
    if (current) current->insert(op->name);
  }
};

// The variables of each load in reduction r's update.
std::vector<std::set<std::string>> update_loads(const Function& r) {
  CallVars cv;
  cv.self = r.name();
  for (const auto& v : r.update(0).values()) v.accept(&cv);
  return cv.calls;
}

// The pure loop of reduction r (not the vector loop x) whose iterations reuse the vector loads:
// a variable absent from every load that depends on x (a conv's output channel, a matmul's row).
int reuse_loop(const Function& r, const std::vector<int64_t>& ext) {
  const auto calls = update_loads(r);
  const std::string x = r.args()[0];
  int best = -1;
  for (size_t k = 1; k < r.args().size(); k++) {
    bool absent = ext[k] >= 2;
    for (const auto& c : calls)
      if (c.count(x) && c.count(r.args()[k])) absent = false;
    if (absent && (best < 0 || ext[k] > ext[best])) best = static_cast<int>(k);
  }
  return best;
}

// Largest power of two <= extent, capped at the native width; 0 below 4 (not worth a vector).
int vector_width_for(int64_t extent, int native) {
  int v = native;
  while (v > extent) v /= 2;
  return v >= 4 ? v : 0;
}

// Whether every load of reduction r that depends on its vector loop x uses x in the callee's
// innermost dimension only (a dense or strided row, not a gather across rows: a matmul's B
// read transposed is a gather, and wider tiles only gather more).
bool loads_dense_along_x(const Function& r) {
  struct Visitor : Halide::Internal::IRGraphVisitor {
    std::string x, self;
    bool dense = true;
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      if (is_load(op, self))
        for (size_t i = 1; i < op->args.size(); i++) dense = dense && !Halide::Internal::expr_uses_var(op->args[i], x);
      IRGraphVisitor::visit(op);
    }
  } v;
  v.x = r.args()[0];
  v.self = r.name();
  for (const auto& e : r.update(0).values()) e.accept(&v);
  return v.dense;
}

// For a channel-blocked reduction (its innermost loop is the lane of a blocked layout, one
// vector wide, lower/lower.h tensor_args): the pure loop other than x that every x-dependent
// load uses and no x-free load does (the output-channel block a weight vector belongs to), so
// tiling it gives accumulators that share their broadcast input loads; -1 when none.
int block_loop(const Function& r, const std::vector<int64_t>& ext) {
  const auto calls = update_loads(r);
  const std::string x = r.args()[0];
  bool any_free = false;
  for (const auto& c : calls) any_free |= !c.count(x);
  if (!any_free) return -1;
  for (size_t k = 1; k < r.args().size(); k++) {
    bool ok = ext[k] >= 2;
    for (const auto& c : calls) ok = ok && (c.count(x) ? c.count(r.args()[k]) > 0 : c.count(r.args()[k]) == 0);
    if (ok) return static_cast<int>(k);
  }
  return -1;
}

// Largest divisor of `extent` that is at most `cap` (so a register tile has no tail).
int64_t divisor_at_most(int64_t extent, int64_t cap) {
  for (int64_t d = std::min(extent, cap); d > 1; d--)
    if (extent % d == 0) return d;
  return 1;
}

// Columns of a blocked register tile: a divisor of the extent in [5, 8] (no tail), else 8
// (capped by the extent) with the last tile shifted inwards (73 or 17 columns, prime, would
// otherwise get 1-column tiles).
int64_t column_tile(int64_t extent) {
  const int64_t d = divisor_at_most(extent, 8);
  return d >= 5 ? d : std::min<int64_t>(8, extent);
}

// The update of a register tile's accumulator r (computed inside the tile): lanes innermost
// and vectorized, then the reuse loop u and the block loop v (Vt blocks) unrolled, then the
// reduction loops, the kernel's small ones unrolled. pair_blocks: half-vector blocks, two per
// full vector (schedule_tiled).
void schedule_tile_update(Halide::Func r, int u, int v, int Vt, bool pair_blocks, bool blocked) {
  const Function& rf = r.function();
  const std::vector<Halide::Var> ra = r.args();
  const int n = static_cast<int>(ra.size());
  Halide::Stage st = r.update(0);
  // Paired blocks put the block loop right outside the lanes (in the loops and the
  // accumulator's storage): one dense vector of 2 x V lanes per column.
  std::vector<Halide::VarOrRVar> rorder = {ra[0]};
  if (pair_blocks) rorder.push_back(ra[v]);
  if (u >= 0) rorder.push_back(ra[u]);
  if (Vt > 1 && !pair_blocks) rorder.push_back(ra[v]);
  const auto& rvars = rf.update(0).schedule().rvars();
  for (const auto& rv : rvars) rorder.push_back(Halide::RVar(rv.var));
  for (int k = 1; k < n; k++)
    if (k != u && !(k == v && Vt > 1)) rorder.push_back(ra[k]);
  st.reorder(rorder).vectorize(ra[0]);
  if (u >= 0) st.unroll(ra[u]);
  if (pair_blocks) {
    std::vector<Halide::Var> storage = {ra[0], ra[v]};
    for (int k = 1; k < n; k++)
      if (k != v) storage.push_back(ra[k]);
    r.reorder_storage(storage);
    // Both loops vectorized (nested ramps): the weights' halves stay two dense loads, where a
    // fused loop's div/mod index became a gather.
    if (Vt == 2) {
      st.vectorize(ra[v]);
    } else {
      Halide::Var pair_o("pair_o"), pair_i("pair_i");
      st.split(ra[v], pair_o, pair_i, 2).vectorize(pair_i).unroll(pair_o);
    }
  } else if (Vt > 1) {
    st.unroll(ra[v]);
  }
  // Unroll the innermost reduction loops while their product stays within 16 (a 3x3 kernel's
  // 9 taps, or a 1x1 conv's 16 block lanes).
  int64_t unrolled = 1;
  for (size_t k = 0; blocked && k < rvars.size(); k++) {
    const int64_t* e = Halide::Internal::as_const_int(Halide::Internal::simplify(rvars[k].extent));
    if (!e || unrolled * *e > 16) break;
    if (*e > 1) st.unroll(Halide::RVar(rvars[k].var));
    unrolled *= *e;
  }
}

// Output o whose value is an elementwise function of one reduction r over the same domain:
// o is tiled (vector loop x, unrolled reuse loop u) and r computed inside each tile, so its
// accumulators stay in registers. Returns false when the pattern does not apply.
// Channel-blocked reductions get the micro-kernel of oneDNN's and ONNX Runtime's NCHWc convs:
// the lane vector times up to 8 columns (u, a divisor of its extent; the next loop when no load
// is reused along one, e.g. depthwise) times 2 output-channel blocks (v), 12-16 accumulators,
// with the innermost reduction loops (the kernel's taps, or a 1x1 conv's block lanes) unrolled.
bool schedule_tiled(Halide::Func o, Halide::Func r, const Halide::Target& target, bool* streams_input) {
  const Function &of = o.function(), &rf = r.function();
  const std::vector<int64_t> ext = extents(of);
  if (ext != extents(rf) || ext.empty() || rf.updates().size() != 1 || of.args().size() != rf.args().size()) return false;
  const int native = target.natural_vector_size(o.output_types()[0]);
  const int V = vector_width_for(ext[0], native);
  if (V == 0) return false;
  const bool blocked = of.args()[0].rfind("dl", 0) == 0 && ext[0] == V && ext.size() >= 2;
  int u = reuse_loop(rf, ext);
  // No load is reused along any loop (depthwise conv, pooling): each input element is read by a
  // few taps only, so a materialized padded copy would double the memory traffic.
  *streams_input = blocked && u < 0;
  if (blocked && u < 0 && ext[1] >= 2) u = 1;
  const int v = blocked && u >= 0 ? block_loop(rf, ext) : -1;
  // Half-vector blocks (8 lanes of 16: channel counts that are odd multiples of 8, 24 to 1000)
  // pair two output-channel blocks into one full vector of accumulators (the weights' two
  // halves load separately, the input broadcast serves both), so the FMAs run at full width
  // (SqueezeNet's 1000-channel classifier ran at 75 GFLOP/s of 8-lane FMAs). Their block count
  // is odd, so the last pair overlaps the one before it (shifted inwards).
  const bool pair_blocks = blocked && v >= 0 && v != u && V * 2 == native && ext[v] >= 2;
  // Two pairs (2 full vectors x 8 columns, 16 accumulators) where the last tile's overlap is small.
  const int Vt = v < 0 || v == u ? 1
                 : pair_blocks   ? (ext[v] >= 12 ? 4 : 2)
                                 : static_cast<int>(divisor_at_most(ext[v], 2));
  // Plain layouts: rows at least 4 vectors wide (a matmul's output columns) take 2 vectors per
  // tile and 8 rows of the reuse loop, 16 accumulators; others 1 vector x 4.
  const int X = !blocked && u >= 0 && ext[0] >= 4 * V && loads_dense_along_x(rf) ? 2 : 1;
  const int U = u < 0 ? 1
                      : static_cast<int>(blocked ? column_tile(ext[u]) : std::min<int64_t>(8, ext[u]));
  const std::vector<Halide::Var> oa = o.args(), ra = r.args();
  const int n = static_cast<int>(oa.size());
  // A plain matmul with more output columns than rows (N > M: B, K x N, is larger than A, M x K)
  // runs column tiles outermost and row tiles inside: each K x (2 vectors) panel of B is loaded
  // once and reused by every row tile from L1/L2, and A, the smaller, is re-read instead
  // (a Transformer's 128 x 512 by 512 x 1536 re-read its 3 MB B from L3 for every 8 rows).
  const bool columns_outer = !blocked && X == 2 && u >= 0 && ext[0] > ext[u];

  Halide::Var xo("xo"), xi("xi"), uo("uo"), ui("ui"), vo("vo"), vi("vi");
  o.compute_root();
  o.split(oa[0], xo, xi, V * X, Halide::TailStrategy::ShiftInwards);  // X vectors: one vectorize, legalized per register
  std::vector<Halide::VarOrRVar> order = {xi};
  if (u >= 0) {
    o.split(oa[u], uo, ui, U, Halide::TailStrategy::ShiftInwards);
    order.push_back(ui);
  }
  if (Vt > 1) {
    o.split(oa[v], vo, vi, Vt, Halide::TailStrategy::ShiftInwards);
    order.push_back(vi);
  }
  std::vector<Halide::Var> outer;  // remaining pure loops, innermost first
  std::vector<int64_t> outer_ext;
  if (columns_outer) {
    outer = {uo, xo};
    outer_ext = {(ext[u] + U - 1) / U, (ext[0] + V * X - 1) / (V * X)};
  } else {
    order.push_back(xo);
  }
  for (int k = 1; k < n; k++) {
    if (columns_outer && k == u) continue;
    outer.push_back(k == u ? uo : (k == v && Vt > 1) ? vo : oa[k]);
    outer_ext.push_back(k == u ? (ext[k] + U - 1) / U : (k == v && Vt > 1) ? (ext[k] + Vt - 1) / Vt : ext[k]);
  }
  for (const auto& w : outer) order.push_back(w);
  o.reorder(order).vectorize(xi);
  if (u >= 0) o.unroll(ui);
  if (Vt > 1) o.unroll(vi);
  // Parallel over the outer loops, fused outermost-first until there are enough tasks.
  if (!outer.empty()) {
    int lo = static_cast<int>(outer.size()) - 1;
    int64_t tasks = outer_ext[lo];
    while (tasks < kMinParallelTasks && lo > 0) tasks *= outer_ext[--lo];
    Halide::VarOrRVar par = outer.back();
    for (int k = static_cast<int>(outer.size()) - 2; k >= lo; k--) {
      Halide::Var fused(outer.back().name() + "_" + outer[k].name() + "_f");
      o.fuse(par, outer[k], fused);
      par = fused;
    }
    const int64_t work = stage_work(ext, rf.update(0).schedule().rvars());
    if (tasks >= 2 && work >= kMinParallelWork) parallel_in_tasks(o, par, tasks, work);
  }

  r.compute_at(o, columns_outer ? uo : xo).vectorize(ra[0]);  // at the loop just outside the register tile
  if (u >= 0) r.unroll(ra[u]);
  if (Vt > 1) r.unroll(ra[v]);
  schedule_tile_update(r, u, v, Vt, pair_blocks, blocked);
  return true;
}

// Pure stages inlined into `f` (transitively), which are not computed elsewhere.
void inline_closure(const Function& f, const std::set<std::string>& root, std::set<std::string>& out,
                    std::map<std::string, Function>& env) {
  for (auto& [name, g] : Halide::Internal::find_direct_calls(f)) {
    if (root.count(name) || g.has_update_definition() || out.count(name)) continue;
    out.insert(name);
    inline_closure(g, root, out, env);
  }
}

}  // namespace

void bound_outputs_to_estimates(const std::vector<Halide::Func>& outputs) {
  for (const auto& o : outputs) {
    const std::vector<int64_t> ext = extents(o.function());
    if (ext.empty() || !std::all_of(ext.begin(), ext.end(), [](int64_t e) { return e > 0; })) continue;
    Halide::Func f = o;
    for (size_t d = 0; d < ext.size(); d++) f.bound(f.args()[d], 0, static_cast<int>(ext[d]));
  }
}

void apply_default_schedule(const std::vector<Halide::Func>& outputs, const Halide::Target& target) {
  std::map<std::string, Function> env;
  for (const auto& o : outputs) {
    env[o.name()] = o.function();
    for (auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) env[name] = fn;
  }
  // Which stages are read by a reduction (their values would be recomputed in its loops).
  std::set<std::string> read_by_reduction;
  for (auto& [name, fn] : env)
    if (fn.has_update_definition())
      for (auto& [callee, cfn] : Halide::Internal::find_direct_calls(fn)) read_by_reduction.insert(callee);
  std::set<std::string> output_names;
  for (const auto& o : outputs) output_names.insert(o.name());
  std::set<std::string> root;
  for (auto& [name, fn] : env)
    if (output_names.count(name) || fn.has_update_definition() || (read_by_reduction.count(name) && !is_rename(fn)))
      root.insert(name);
  // Callers of each stage, to find reductions read only by one output's inlined chain.
  std::map<std::string, std::set<std::string>> callers;
  for (auto& [name, fn] : env)
    for (auto& [callee, cfn] : Halide::Internal::find_direct_calls(fn))
      if (callee != name) callers[callee].insert(name);  // an update reads its own stage
  bound_outputs_to_estimates(outputs);
  std::set<std::string> tiled;
  for (const auto& o : outputs) {
    std::set<std::string> chain;
    inline_closure(o.function(), root, chain, env);
    chain.insert(o.name());
    std::vector<std::string> reductions;
    for (auto& [name, fn] : env) {
      if (!fn.has_update_definition()) continue;
      bool read_by_chain = false, read_elsewhere = false;
      for (const auto& c : callers[name]) (chain.count(c) ? read_by_chain : read_elsewhere) = true;
      if (read_by_chain && !read_elsewhere) reductions.push_back(name);
    }
    bool streams_input = false;
    if (reductions.size() == 1 && schedule_tiled(o, Halide::Func(env.at(reductions[0])), target, &streams_input)) {
      tiled.insert(o.name());
      tiled.insert(reductions[0]);
      // Its padded inputs are then read in place (inlined, bounds checked per tap).
      for (auto& [callee, cfn] : Halide::Internal::find_direct_calls(env.at(reductions[0])))
        if (streams_input && callee != reductions[0] && !output_names.count(callee) && !cfn.has_update_definition())
          tiled.insert(callee);
    }
  }
  for (const auto& name : root)
    if (!tiled.count(name)) schedule_root(Halide::Func(env.at(name)), target);
}

}  // namespace ts
