#include "schedule/default_tile.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

#include <unistd.h>

#include "schedule/tile_cache_plan.h"

namespace ts {

namespace {

using Halide::Internal::Function;


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
// read transposed is a gather, and wider tiles only gather more), or also as x / c in outer
// dimensions (a panel-packed B, graph/layout_plan.h: dense within panels of c columns). `panel`
// gets the smallest such c (0: none).
bool loads_dense_along_x(const Function& r, int64_t& panel) {
  struct Visitor : Halide::Internal::IRGraphVisitor {
    std::string x, self;
    bool dense = true;
    int64_t panel = 0;
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      if (is_load(op, self))
        for (size_t i = 1; i < op->args.size(); i++) {
          if (!Halide::Internal::expr_uses_var(op->args[i], x)) continue;
          const auto* div = op->args[i].as<Halide::Internal::Div>();
          const auto* var = div ? div->a.as<Halide::Internal::Variable>() : nullptr;
          const int64_t* c = div ? Halide::Internal::as_const_int(div->b) : nullptr;
          if (var && var->name == x && c && *c > 1) panel = panel ? std::min(panel, *c) : *c;
          else dense = false;
        }
      IRGraphVisitor::visit(op);
    }
  } v;
  v.x = r.args()[0];
  v.self = r.name();
  for (const auto& e : r.update(0).values()) e.accept(&v);
  panel = v.panel;
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

// Columns of a blocked register tile whose columns hold `vectors` accumulators each: the
// largest divisor of the extent in [5, 8] (no tail); else, with the last tile shifted inwards,
// the count that computes the fewest columns, each tile counted one column more for reloading
// its weights (ties: more columns), from [5, 8], or [8, 12] for 1 vector (8 accumulators hide
// the FMA latency). Tiles of 2 vectors may take 9 columns (18 accumulators); 3 vectors x 8
// columns run out of registers. One vector takes a divisor only from 7 (a pair of half-vector
// blocks is one vector too): 5 or 6 accumulators left the FMA pipes idle; where 7 divides (14
// and 28 wide) it keeps 7 (measured: docs/benchmarks.md, "The default rule").
int64_t column_tile(int64_t extent, int vectors) {
  const int64_t most = vectors >= 3 ? 7 : 8;  // 3 vectors x 8 columns ran out of registers
  const int64_t d = divisor_at_most(extent, most);
  if (d >= (vectors == 1 ? 7 : 5)) return d;
  if (extent <= most) return extent;
  const int64_t lo = vectors == 1 ? 8 : 5, hi = vectors == 1 ? 12 : vectors == 2 ? 9 : most;
  int64_t best = hi, best_cost = -1;
  for (int64_t u = hi; u >= lo; u--) {
    const int64_t cost = (extent + u - 1) / u * (u + 1);
    if (best_cost < 0 || cost < best_cost) best = u, best_cost = cost;
  }
  return best;
}

// Rows of a plain register tile of 2 vectors (16 accumulators at 8 rows) where 8 does not divide
// the rows: the count in [7, 12] that computes the fewest rows with the last tile shifted
// inwards, each tile counted one row more for streaming its B panel (ties: more rows), as
// column_tile does (measured: docs/benchmarks.md, "The default rule").
int64_t plain_row_tile(int64_t rows) {
  if (rows <= 8 || rows % 8 == 0) return std::min<int64_t>(rows, 8);
  int64_t best = 12, best_cost = -1;
  for (int64_t u = 12; u >= 7; u--) {
    const int64_t cost = (rows + u - 1) / u * (u + 1);
    if (best_cost < 0 || cost < best_cost) best = u, best_cost = cost;
  }
  return best;
}

// Pure stages inlined into `f` (transitively), which are not computed elsewhere.
void inline_closure(const Function& f, const std::set<std::string>& root, std::set<std::string>& out) {
  for (auto& [name, g] : Halide::Internal::find_direct_calls(f)) {
    if (root.count(name) || g.has_update_definition() || out.count(name)) continue;
    out.insert(name);
    inline_closure(g, root, out);
  }
}

// The tile's block, vector and column counts (the register tile itself).
void plan_register_tile(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  const std::vector<int64_t>& ext = f.ext;
  const int u = f.u, v = f.v;
  // Half-vector blocks (8 lanes of 16: channel counts that are odd multiples of 8, 24 to 1000)
  // pair two output-channel blocks into one full vector of accumulators (the weights' two
  // halves load separately, the input broadcast serves both), so the FMAs run at full width
  // rather than 8 lanes. Their block count is odd, so the last pair overlaps the one before it
  // (shifted inwards). Two pairs (2 full vectors x 8 columns, 16 accumulators) from 5 blocks on
  // where the reduction is longer than 16 (else from 12): one pair's 8 accumulators left the FMA
  // pipes idle (measured: docs/benchmarks.md, "The default rule").
  if (v >= 0 && v != u) {
    if (f.blocked && f.V * 2 == f.native && ext[v] >= 2) {
      const int64_t reduction = f.work / stage_work(ext, {});  // iterations of the reduction loops
      const int b = clamp_knob(k.blocks, ext[v] >= 12 || (ext[v] >= 5 && reduction > 16) ? 4 : 2, 1, 4);
      p.Vt = b >= 4 && ext[v] >= 4 ? 4 : b >= 2 ? 2 : 1;
      p.pair_blocks = p.Vt > 1;
    } else {
      // Two blocks where they divide the count, else three (144 or 240 channels: 9 or 15 blocks;
      // one block per tile left every broadcast serving one FMA; 3 blocks x 8 columns run out of
      // registers). Other odd counts of 7 or more take two blocks, the last tile overlapping the
      // one before (one block left 6-8 accumulators, below the FMA pipes' latency x width); 5
      // blocks keep one (measured: docs/benchmarks.md, "The default rule").
      const int rule = ext[v] % 2 == 0 ? 2 : ext[v] % 3 == 0 ? 3 : ext[v] >= 7 ? 2 : 1;
      p.Vt = clamp_knob(k.blocks, rule, 1, std::min<int64_t>(4, ext[v]));
    }
  }
  // Plain layouts: rows at least 4 vectors wide (a matmul's output columns) take 2 vectors per
  // tile and 8 rows of the reuse loop, 16 accumulators (12 rows over a long dot product, below);
  // others 1 vector.
  // A panel-packed B caps the tile at one panel's vectors (wider ones would gather).
  if (!f.blocked && u >= 0 && f.dense_x) {
    const int64_t most = std::min<int64_t>({4, ext[0] / f.V, f.x_panel ? f.x_panel / f.V : 4});
    p.X = clamp_knob(k.vectors, static_cast<int>(std::min<int64_t>(ext[0] >= 4 * f.V ? 2 : 1, most)), 1, most);
  }
  // A plain tile of 2 vectors whose B does not fit in L2 (one reduction loop, weights of more
  // than kDefaultL2Bytes: a Transformer's 512 x 2048 and 2048 x 512 matmuls stream their 4 MB B
  // from L3) takes 12 rows: 24 accumulators, 14 loads per step for 24 FMAs instead of 10 for 16.
  // A B within L2 (attention matmuls run from L1) and a panel-packed B (contiguous per tile) keep
  // 8 rows (measured: docs/benchmarks.md, "The default rule").
  const bool b_beyond_l2 = f.rvar_ext.size() == 1 && f.weight_bytes > kDefaultL2Bytes && f.x_panel == 0;
  if (u >= 0) {
    const int64_t plain_rows = b_beyond_l2 && p.X == 2 ? 12 : 8;
    const int vectors = p.pair_blocks ? p.Vt / 2 : p.Vt * p.X;
    const int64_t rows = plain_rows == 8 && p.X == 2 ? plain_row_tile(ext[u]) : std::min<int64_t>(plain_rows, ext[u]);
    const int rule = static_cast<int>(f.blocked ? column_tile(ext[u], vectors) : rows);
    p.U = clamp_knob(k.columns, rule, 1, std::min<int64_t>(16, ext[u]));
    p.U = std::min(p.U, std::max(1, kMaxAccumulators / vectors));
    // Rows stream only when no column loop lies between them and the tile: a streamed tile at
    // most 16 wide that would take two column tiles takes its whole width with one block
    // instead (ResNet-50's 14-wide 3x3 convs: 14 columns x 1 block, not 7 x 2).
    if (!k.columns && !k.blocks && !p.pair_blocks && f.blocked && clamp_knob(k.stream, streams_by_rule(f), 0, 1) &&
        ext[u] > p.U && ext[u] <= 16) {
      p.U = static_cast<int>(ext[u]);
      p.Vt = 1;
    }
  }
  // A plain matmul with more output columns than rows (N > M: B, K x N, is larger than A, M x K)
  // runs column tiles outermost and row tiles inside: each K x (2 vectors) panel of B is loaded
  // once and reused by every row tile from L1/L2, and A, the smaller, is re-read instead
  // (a Transformer's 128 x 512 by 512 x 1536 re-read its 3 MB B from L3 for every 8 rows).
  if (!f.blocked && u >= 0) p.columns_outer = clamp_knob(k.columns_outer, p.X == 2 && ext[0] > ext[u], 0, 1) != 0;
}

// A blocked tile whose activations do not fit in L2 runs its rows outermost: each row's input
// (all its channel blocks) then stays in L2 for every output block, where block pairs outermost
// re-read the whole input from L3 per pair, a 7-pixel slice per input block 50 KB apart that the
// prefetchers do not follow. Inputs within L2 keep their order; 3x3 convs' padded input is no
// parameter here, so the rule leaves them. Intel hosts only (other hosts untested)
// (measured: docs/benchmarks.md, "The default rule"). The index of the rows in `outer`.
std::optional<int> rows_outermost_by_rule(const TileFacts& f, const std::vector<OuterLoop>& outer) {
  if (!f.blocked || f.input_bytes <= host_l2_bytes() || !intel_host()) return std::nullopt;
  for (size_t j = 0; j < outer.size(); j++)
    if (outer[j].kind == OuterKind::Pure && outer[j].extent > 1) return static_cast<int>(j);
  return std::nullopt;
}

// The outer loops (innermost first, the tile loop r is computed at first) and the loop order knob.
void plan_outer_loops(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  const std::vector<int64_t>& ext = f.ext;
  const int n = static_cast<int>(ext.size());
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const OuterLoop vectors{OuterKind::Vectors, 0, ceil_div(ext[0], f.V * p.X)};
  if (p.columns_outer) p.outer = {{OuterKind::Columns, f.u, ceil_div(ext[f.u], p.U)}, vectors};
  else p.outer = {vectors};
  for (int d = 1; d < n; d++) {
    if (d == f.u) {
      if (!p.columns_outer) p.outer.push_back({OuterKind::Columns, d, ceil_div(ext[d], p.U)});
    } else if (d == f.v && p.Vt > 1) {
      p.outer.push_back({OuterKind::Blocks, d, ceil_div(ext[d], p.Vt)});
    } else {
      p.outer.push_back({OuterKind::Pure, d, ext[d]});
    }
  }
  // The tile loop stays innermost (r is computed there); another loop may move outermost.
  const std::optional<int> outermost = k.outermost ? k.outermost : rows_outermost_by_rule(f, p.outer);
  if (outermost && *outermost >= 1 && *outermost < static_cast<int>(p.outer.size()) - 1 && p.outer[*outermost].extent > 1) {
    const OuterLoop moved = p.outer[*outermost];
    p.outer.erase(p.outer.begin() + *outermost);
    p.outer.push_back(moved);
  }
}

// The parallel loop: the outer loops fused outermost-first until there are enough tasks.
void plan_parallel_loop(const TileFacts& f, const DefaultKnobs& k, TilePlan& p) {
  const int last = static_cast<int>(p.outer.size()) - 1;
  const int64_t wanted = k.tasks ? std::max(1, *k.tasks) : kDefaultParallelTasks;
  if (last < 1 || wanted < 2) return;
  int lo = last;
  int64_t tasks = p.outer[lo].extent;
  while (tasks < wanted && lo > 1) tasks *= p.outer[--lo].extent;
  if (tasks < 2 || (!k.tasks && f.work < kDefaultParallelWork && f.largest_operand_bytes < kParallelReadBytes)) return;
  p.fused = last - lo + 1;
  p.tasks = tasks;
  p.grain = k.grain ? std::clamp<int64_t>(*k.grain, 1, std::max<int64_t>(1, tasks / 2)) : default_task_grain(tasks, f.work);
  if (!k.tasks && !k.grain) prefer_block_tasks(f, p);
}

}  // namespace

int clamp_knob(const std::optional<int>& knob, int rule, int lo, int64_t hi) {
  if (!knob) return rule;
  return static_cast<int>(std::clamp<int64_t>(*knob, lo, std::max<int64_t>(lo, hi)));
}

int64_t host_l2_bytes() {
  static const int64_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? static_cast<int64_t>(l2) : kDefaultL2Bytes;
  }();
  return bytes;
}

int host_cores() {
  static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores;
}

bool intel_host() {
  static const bool intel = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("vendor_id", 0) == 0) return line.find("GenuineIntel") != std::string::npos;
    return false;
  }();
  return intel;
}

// prefetcht0 (into L1 and L2) ran faster than prefetcht1 on the prefetching convs in the network
// on AMD hosts; Intel hosts, where the pass was measured with prefetcht1, keep it
// (measured: docs/benchmarks.md, "The default rule").
int weight_prefetch_locality() { return intel_host() ? 2 : 3; }

std::vector<int64_t> estimate_extents(const Function& f) {
  std::vector<int64_t> e(f.args().size(), 0);
  for (const auto& b : f.schedule().estimates())
    for (size_t i = 0; i < f.args().size(); i++)
      if (f.args()[i] == b.var) {
        if (const int64_t* v = Halide::Internal::as_const_int(b.extent)) e[i] = *v;
      }
  return e;
}

int64_t stage_work(const std::vector<int64_t>& ext, const std::vector<Halide::Internal::ReductionVariable>& rvars) {
  int64_t w = 1;
  for (int64_t e : ext) w *= std::max<int64_t>(e, 1);
  for (const auto& rv : rvars)
    if (const int64_t* e = Halide::Internal::as_const_int(Halide::Internal::simplify(rv.extent))) w *= std::max<int64_t>(*e, 1);
  return w;
}

int64_t default_task_grain(int64_t tasks, int64_t work) {
  const int64_t per_task = std::max<int64_t>(work / std::max<int64_t>(tasks, 1), 1);
  const int64_t grain = std::min((kDefaultTaskWork + per_task - 1) / per_task, tasks / kDefaultGroupedTasks);
  return grain < 2 ? 1 : grain;
}

namespace {

// An input parameter r's update loads through renames (an input's wrapper, ImageParam's own Func).
struct TileOperand {
  Halide::Internal::Parameter param;
  Function first;     // the Func r calls for it
  bool uses_u = false;  // a load's indices use the reuse loop's var
};

// r's update's operands, in the order its loads are first visited.
std::vector<TileOperand> tile_operands(const Function& r, const std::string& u_var) {
  struct Visitor : Halide::Internal::IRGraphVisitor {
    std::string self, u;
    std::vector<TileOperand> found;
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      IRGraphVisitor::visit(op);
      if (op->call_type != Halide::Internal::Call::Halide || op->name == self) return;
      const bool uses_u = !u.empty() && std::any_of(op->args.begin(), op->args.end(), [&](const Halide::Expr& a) {
        return Halide::Internal::expr_uses_var(a, u);
      });
      // Follow renames to the parameter.
      Function f(op->func);
      while (!f.has_update_definition() && f.values().size() == 1) {
        const auto* c = f.values()[0].as<Halide::Internal::Call>();
        if (!c) return;
        if (c->call_type == Halide::Internal::Call::Image && c->param.defined()) {
          found.push_back({c->param, Function(op->func), uses_u});
          return;
        }
        if (c->call_type != Halide::Internal::Call::Halide) return;
        f = Function(c->func);
      }
    }
  } v;
  v.self = r.name();
  v.u = u_var;
  for (const auto& e : r.update(0).values()) e.accept(&v);
  return v.found;
}

// The first of the operands whose indices use the reuse loop's var (indexed) or do not (!indexed).
const TileOperand* first_operand(const std::vector<TileOperand>& operands, bool indexed) {
  auto it = std::find_if(operands.begin(), operands.end(), [&](const TileOperand& o) { return o.uses_u == indexed; });
  return it == operands.end() ? nullptr : &*it;
}

// A parameter's bytes by its extent estimates, 0 when one is not constant.
int64_t estimated_bytes(const Halide::Internal::Parameter& p) {
  int64_t bytes = p.type().bytes();
  for (int d = 0; d < p.dimensions(); d++) {
    const int64_t* e = Halide::Internal::as_const_int(p.extent_constraint_estimate(d));
    bytes = e ? bytes * *e : 0;
  }
  return bytes;
}

// Bytes of one block of a parameter whose outermost dimension has `blocks` entries and spans it
// (its stride times the entries is the whole buffer), 0 when it is not so. A blocked conv's
// weights are packed OIHW[x]o (lower/conv.cpp): their outermost dimension is the output blocks.
int64_t contiguous_block_bytes(const Halide::Internal::Parameter& p, int64_t blocks) {
  const int last = p.dimensions() - 1;
  if (last < 1) return 0;
  const int64_t* extent = Halide::Internal::as_const_int(p.extent_constraint(last));
  const int64_t* stride = Halide::Internal::as_const_int(p.stride_constraint(last));
  const int64_t bytes = estimated_bytes(p);
  if (!extent || !stride || *extent != blocks || bytes <= 0 || *stride * *extent * p.type().bytes() != bytes) return 0;
  return *stride * p.type().bytes();
}

}  // namespace

std::optional<Halide::Internal::Parameter> tile_weights(const Function& r, const std::string& u_var,
                                                        std::optional<Function>* first) {
  const std::vector<TileOperand> operands = tile_operands(r, u_var);
  const TileOperand* w = first_operand(operands, false);
  if (!w) return std::nullopt;
  if (first) *first = w->first;
  return w->param;
}

std::optional<Halide::Internal::Parameter> tile_input(const Function& r, const std::string& u_var) {
  if (u_var.empty()) return std::nullopt;
  const std::vector<TileOperand> operands = tile_operands(r, u_var);
  const TileOperand* in = first_operand(operands, true);
  return in ? std::optional(in->param) : std::nullopt;
}

std::optional<TileFacts> tile_facts(const Halide::Func& o, const Halide::Func& r, const Halide::Target& target) {
  const Function &of = o.function(), &rf = r.function();
  TileFacts f;
  f.ext = estimate_extents(of);
  if (f.ext != estimate_extents(rf) || f.ext.empty() || rf.updates().size() != 1 || of.args().size() != rf.args().size())
    return std::nullopt;
  f.native = target.natural_vector_size(o.output_types()[0]);
  f.V = vector_width_for(f.ext[0], f.native);
  if (f.V == 0) return std::nullopt;
  f.blocked = of.args()[0].rfind("dl", 0) == 0 && f.ext[0] == f.V && f.ext.size() >= 2;
  f.u = reuse_loop(rf, f.ext);
  // No load is reused along any loop (depthwise conv, pooling): each input element is read by a
  // few taps only, so a materialized padded copy would double the memory traffic.
  f.streams_input = f.blocked && f.u < 0;
  if (f.blocked && f.u < 0 && f.ext[1] >= 2) f.u = 1;
  f.v = f.blocked && f.u >= 0 ? block_loop(rf, f.ext) : -1;
  f.dense_x = loads_dense_along_x(rf, f.x_panel);
  if (f.x_panel % f.V != 0) f.dense_x = false;  // a vector would straddle two panels
  for (const auto& rv : rf.update(0).schedule().rvars()) {
    const int64_t* e = Halide::Internal::as_const_int(Halide::Internal::simplify(rv.extent));
    f.rvar_ext.push_back(e ? *e : 0);
  }
  f.work = stage_work(f.ext, rf.update(0).schedule().rvars());
  const std::string u_var = f.u >= 0 ? rf.args()[f.u] : "";
  const std::vector<TileOperand> operands = tile_operands(rf, u_var);
  if (const TileOperand* w = first_operand(operands, false)) {
    f.weight_bytes = estimated_bytes(w->param);
    if (f.v >= 0) f.block_weight_bytes = contiguous_block_bytes(w->param, f.ext[f.v]);
    else if (f.x_panel > 0 && f.ext[0] % f.x_panel == 0) f.block_weight_bytes = contiguous_block_bytes(w->param, f.ext[0] / f.x_panel);
  }
  if (const TileOperand* in = u_var.empty() ? nullptr : first_operand(operands, true)) f.input_bytes = estimated_bytes(in->param);
  for (const TileOperand& op : operands) f.largest_operand_bytes = std::max(f.largest_operand_bytes, estimated_bytes(op.param));
  return f;
}

const OuterLoop* row_group_loop(const TilePlan& p) {
  for (const OuterLoop& l : p.outer)
    if (l.kind == OuterKind::PureGroup) return &l;
  return nullptr;
}

int row_group_of(const TilePlan& p) {
  const OuterLoop* group = row_group_loop(p);
  return group ? static_cast<int>(group->extent) : 0;
}

TilePlan plan_tile(const TileFacts& f, const DefaultKnobs& k) {
  TilePlan p;
  plan_register_tile(f, k, p);
  plan_outer_loops(f, k, p);
  plan_row_groups(f, k, p);
  plan_parallel_loop(f, k, p);
  // Unroll the innermost reduction loops while their product stays within 16 (a 3x3 kernel's
  // 9 taps, or a 1x1 conv's 16 block lanes): blocked tiles only, unless the knob says.
  const int rule_max = f.blocked ? static_cast<int>(f.rvar_ext.size()) : 0;
  const int wanted = clamp_knob(k.unroll, rule_max, 0, static_cast<int64_t>(f.rvar_ext.size()));
  int64_t product = 1;
  int n = 0;
  while (n < wanted && f.rvar_ext[n] > 0 && product * f.rvar_ext[n] <= (k.unroll ? 64 : 16)) product *= f.rvar_ext[n++];
  while (n > 0 && f.rvar_ext[n - 1] == 1) n--;  // unrolling a loop of one iteration changes nothing
  p.unrolled_rvars = n;
  plan_streaming(f, k, p);
  plan_task_prefetch(f, k, p);
  if (p.k_block > 0 && !f.blocked) p.unrolled_rvars = 0;  // K's blocks are loops (an unroll knob would name the same code twice)
  return p;
}

DefaultStructure default_structure(const std::vector<Halide::Func>& outputs, const Halide::Target& target) {
  DefaultStructure ds;
  auto& env = ds.env;
  for (const auto& o : outputs) {
    env[o.name()] = o.function();
    for (auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) env[name] = fn;
  }
  // Which stages are read by a reduction (their values would be recomputed in its loops).
  std::set<std::string> read_by_reduction;
  for (auto& [name, fn] : env)
    if (fn.has_update_definition())
      for (auto& [callee, cfn] : Halide::Internal::find_direct_calls(fn)) read_by_reduction.insert(callee);
  for (const auto& o : outputs) ds.output_names.insert(o.name());
  for (auto& [name, fn] : env)
    if (ds.output_names.count(name) || fn.has_update_definition() || (read_by_reduction.count(name) && !is_rename(fn)))
      ds.root.insert(name);
  // Callers of each stage, to find reductions read only by one output's inlined chain.
  std::map<std::string, std::set<std::string>> callers;
  for (auto& [name, fn] : env)
    for (auto& [callee, cfn] : Halide::Internal::find_direct_calls(fn))
      if (callee != name) callers[callee].insert(name);  // an update reads its own stage
  for (const auto& o : outputs) {
    std::set<std::string> chain;
    inline_closure(o.function(), ds.root, chain);
    chain.insert(o.name());
    std::vector<std::string> reductions;
    for (auto& [name, fn] : env) {
      if (!fn.has_update_definition()) continue;
      bool read_by_chain = false, read_elsewhere = false;
      for (const auto& c : callers[name]) (chain.count(c) ? read_by_chain : read_elsewhere) = true;
      if (read_by_chain && !read_elsewhere) reductions.push_back(name);
    }
    if (reductions.size() != 1) continue;
    Halide::Func r(env.at(reductions[0]));
    if (auto facts = tile_facts(o, r, target)) ds.tiles.push_back({o, r, *facts});
  }
  return ds;
}

}  // namespace ts
