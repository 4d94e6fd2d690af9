#include "schedule/default_tile.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>

#include <unistd.h>

#include "schedule/restructure.h"
#include "schedule/tile_cache_plan.h"

namespace ts {

namespace {

using Halide::Internal::Function;


// The loads of reduction r's update (its definition 1) other than of r itself, one per call
// site: its producer and the names of the loops its indices use. From the view, whose indices
// have the stage's lets substituted (a load's variables are loop variables).
struct UpdateLoad {
  const Edge* edge = nullptr;      // the producer it reads
  const Access* access = nullptr;  // the call site
  std::set<std::string> vars;      // loops its indices use
};
std::vector<UpdateLoad> update_loads(const PipelineView& view, const Stage& r) {
  std::vector<UpdateLoad> out;
  const Definition& d = r.definitions.at(1);
  for (const Edge* e : view.edges_into(r.name))
    for (const Access& a : e->accesses) {
      if (a.definition != 1) continue;
      UpdateLoad l{e, &a, {}};
      for (const AccessDim& dim : a.dims) {
        for (int k : dim.depends_on) l.vars.insert(d.loops[k].name);
        if (dim.div_loop >= 0) l.vars.insert(d.loops[dim.div_loop].name);
      }
      out.push_back(std::move(l));
    }
  return out;
}

// The pure loop of reduction r (not the vector loop x) whose iterations reuse the vector loads:
// a variable absent from every load that depends on x (a conv's output channel or column, a
// matmul's row); the longest. A channel-blocked reduction (`blocked`, a conv) takes the innermost
// such loop where it holds kMinReuseExtent iterations: consecutive columns of its input lie next
// to each other, consecutive rows a row apart (a 1x1 conv over a plain 106-channel input tiled
// along its 61 rows, rather than its 32 columns, broadcast each input from another cache line:
// 16% of the FMA peak, 58% along the columns). A plain matmul keeps the longest (a batched
// [2, 346, 10, 8] x [8, 27] with an activation epilogue ran 1.8x slower tiled along its 10 rows).
constexpr int64_t kMinReuseExtent = 8;
int reuse_loop(const std::vector<UpdateLoad>& loads, const Stage& r, const std::vector<int64_t>& ext, bool blocked) {
  const std::string& x = r.dims[0].name;
  int best = -1;
  for (size_t k = 1; k < r.dims.size(); k++) {
    bool absent = ext[k] >= 2;
    for (const auto& l : loads)
      if (l.vars.count(x) && l.vars.count(r.dims[k].name)) absent = false;
    if (absent && (best < 0 || (ext[k] > ext[best] && (!blocked || ext[best] < kMinReuseExtent)))) best = static_cast<int>(k);
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
bool loads_dense_along_x(const std::vector<UpdateLoad>& loads, const Stage& r, int64_t& panel) {
  const int x = 0;  // the update's loop 0 is x: its pure loops come first, in argument order
  const bool x_is_loop = r.definitions.at(1).loops.at(0).name == r.dims[0].name;
  bool dense = true;
  panel = 0;
  for (const auto& l : loads)
    for (size_t i = 1; x_is_loop && i < l.access->dims.size(); i++) {
      const AccessDim& d = l.access->dims[i];
      if (d.div_loop == x) panel = panel ? std::min(panel, d.divisor) : d.divisor;
      else if (std::find(d.depends_on.begin(), d.depends_on.end(), x) != d.depends_on.end()) dense = false;
    }
  return dense;
}

// For a channel-blocked reduction (its innermost loop is the lane of a blocked layout, one
// vector wide, lower/lower.h tensor_args): the pure loop other than x that every x-dependent
// load uses and no x-free load does (the output-channel block a weight vector belongs to), so
// tiling it gives accumulators that share their broadcast input loads; -1 when none.
int block_loop(const std::vector<UpdateLoad>& loads, const Stage& r, const std::vector<int64_t>& ext) {
  const std::string& x = r.dims[0].name;
  bool any_free = false;
  for (const auto& l : loads) any_free |= !l.vars.count(x);
  if (!any_free) return -1;
  for (size_t k = 1; k < r.dims.size(); k++) {
    bool ok = ext[k] >= 2;
    const std::string& var = r.dims[k].name;
    for (const auto& l : loads) ok = ok && (l.vars.count(x) ? l.vars.count(var) > 0 : l.vars.count(var) == 0);
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

// Pure stages inlined into stage `f` (transitively), which are not computed elsewhere.
void inline_closure(const PipelineView& view, const Stage& f, const std::set<std::string>& root, std::set<std::string>& out) {
  for (const auto& name : f.producers) {
    const Stage* g = view.stage(name);
    if (!g || root.count(name) || g->definitions.size() > 1 || out.count(name)) continue;
    out.insert(name);
    inline_closure(view, *g, root, out);
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

// An input parameter r's update loads through copies (an input's wrapper, a rename, a transposed
// or shifted copy, all inlined).
struct TileOperand {
  const InputTensor* param = nullptr;
  std::string first;    // the Func r calls for it (the input's wrapper, or the outermost copy)
  bool uses_u = false;  // the call's indices use the reuse loop
};

// r's update's operands, one per call site, by producer name.
std::vector<TileOperand> tile_operands(const PipelineView& view, const std::vector<UpdateLoad>& loads, const std::string& u_var) {
  std::vector<TileOperand> found;
  for (const auto& l : loads) {
    const std::string& producer = l.edge->producer;
    const bool uses_u = !u_var.empty() && l.vars.count(u_var) > 0;
    if (const InputTensor* in = view.input(producer)) {
      // An ImageParam read through its wrapper; a Buffer is no parameter.
      if (in->is_param && !in->wrapper.empty()) found.push_back({in, in->wrapper, uses_u});
      continue;
    }
    for (const Stage* s = view.stage(producer); s && !s->copy_of.empty();) {
      if (const InputTensor* in = view.input(s->copy_of)) {
        if (in->is_param) found.push_back({in, producer, uses_u});
        break;
      }
      s = view.stage(s->copy_of);
    }
  }
  return found;
}

// The first of the operands whose indices use the reuse loop's var (indexed) or do not (!indexed).
const TileOperand* first_operand(const std::vector<TileOperand>& operands, bool indexed) {
  auto it = std::find_if(operands.begin(), operands.end(), [&](const TileOperand& o) { return o.uses_u == indexed; });
  return it == operands.end() ? nullptr : &*it;
}

// An input's bytes by its extent estimates, 0 when one is not known.
int64_t estimated_bytes(const InputTensor& in) {
  if (!in.dims_estimated) return 0;
  int64_t bytes = in.bytes;
  for (const Loop& d : in.dims) bytes *= d.extent;
  return bytes;
}

// Bytes of one block of an input whose outermost dimension has `blocks` entries and spans it
// (its stride times the entries is the whole buffer), 0 when it is not so. A blocked conv's
// weights are packed OIHW[x]o (lower/conv.cpp): their outermost dimension is the output blocks.
int64_t contiguous_block_bytes(const InputTensor& in, int64_t blocks) {
  const size_t last = in.dims.size() - 1;
  if (in.dims.size() < 2) return 0;
  const int64_t extent = in.extent_constraints[last], stride = in.stride_constraints[last];
  const int64_t bytes = estimated_bytes(in);
  if (!extent || !stride || extent != blocks || bytes <= 0 || stride * extent * in.bytes != bytes) return 0;
  return stride * in.bytes;
}

// The Halide type a view's dtype names ("float32", "int8", "bool").
Halide::Type type_of(const std::string& dtype) {
  auto bits = [&](size_t from) { return std::stoi(dtype.substr(from)); };
  if (dtype == "bool") return Halide::Bool();
  if (dtype.rfind("float", 0) == 0) return Halide::Float(bits(5));
  if (dtype.rfind("uint", 0) == 0) return Halide::UInt(bits(4));
  if (dtype.rfind("int", 0) == 0) return Halide::Int(bits(3));
  return Halide::Handle();
}

std::vector<int64_t> dim_extents(const Stage& s) {
  std::vector<int64_t> e;
  for (const Loop& d : s.dims) e.push_back(d.extent);
  return e;
}

}  // namespace

std::optional<TileFacts> tile_facts(const PipelineView& view, const std::string& o_name, const std::string& r_name,
                                    const Halide::Target& target) {
  const Stage *o = view.stage(o_name), *r = view.stage(r_name);
  if (!o || !r || !o->dims_estimated || !r->dims_estimated) return std::nullopt;
  TileFacts f;
  f.ext = dim_extents(*o);
  if (f.ext != dim_extents(*r) || f.ext.empty() || r->definitions.size() != 2) return std::nullopt;
  f.native = target.natural_vector_size(type_of(o->dtype));
  f.V = vector_width_for(f.ext[0], f.native);
  if (f.V == 0) return std::nullopt;
  const std::vector<UpdateLoad> loads = update_loads(view, *r);
  f.blocked = o->dims[0].name.rfind("dl", 0) == 0 && f.ext[0] == f.V && f.ext.size() >= 2;
  f.u = reuse_loop(loads, *r, f.ext, f.blocked);
  // No load is reused along any loop (depthwise conv, pooling): each input element is read by a
  // few taps only, so a materialized padded copy would double the memory traffic.
  f.streams_input = f.blocked && f.u < 0;
  if (f.blocked && f.u < 0 && f.ext[1] >= 2) f.u = 1;
  // A plain one still takes rows of its next loop of 2 or more: no load is shared between them,
  // but each row is an accumulator of its own, where one vector alone was one chain of dependent
  // FMAs (a conv of 9 groups of 18 -> 6 channels over 141 x 5 outputs: the output channel
  // indexes the input through its group, so no loop is free of the input's loads; 1.5% of the
  // FMA peak, 3.5x slower than the best of 32 schedules sampled from the space).
  for (size_t k = 1; !f.blocked && f.u < 0 && k < f.ext.size(); k++)
    if (f.ext[k] >= 2) f.u = static_cast<int>(k);
  f.v = f.blocked && f.u >= 0 ? block_loop(loads, *r, f.ext) : -1;
  f.dense_x = loads_dense_along_x(loads, *r, f.x_panel);
  if (f.x_panel % f.V != 0) f.dense_x = false;  // a vector would straddle two panels
  f.work = 1;
  for (int64_t e : f.ext) f.work *= std::max<int64_t>(e, 1);
  for (const Loop& l : r->definitions[1].loops)
    if (l.reduction) {
      f.rvar_ext.push_back(l.extent);
      f.work *= std::max<int64_t>(l.extent, 1);
    }
  const std::string u_var = f.u >= 0 ? r->dims[f.u].name : "";
  const std::vector<TileOperand> operands = tile_operands(view, loads, u_var);
  if (const TileOperand* w = first_operand(operands, false)) {
    f.weights = w->param->name;
    f.weights_via = w->first;
    f.weight_dims = static_cast<int>(w->param->dims.size());
    f.weight_bytes = estimated_bytes(*w->param);
    if (f.v >= 0) f.block_weight_bytes = contiguous_block_bytes(*w->param, f.ext[f.v]);
    else if (f.x_panel > 0 && f.ext[0] % f.x_panel == 0) f.block_weight_bytes = contiguous_block_bytes(*w->param, f.ext[0] / f.x_panel);
  }
  if (const TileOperand* in = u_var.empty() ? nullptr : first_operand(operands, true)) f.input_bytes = estimated_bytes(*in->param);
  for (const TileOperand& op : operands) f.largest_operand_bytes = std::max(f.largest_operand_bytes, estimated_bytes(*op.param));
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

DefaultStructure default_structure(const PipelineView& view, const std::vector<Halide::Func>& outputs, const Halide::Target& target) {
  DefaultStructure ds;
  ds.env = pipeline_funcs(outputs);  // to name their loops (the view names them; the rule's calls need handles)
  // Which stages are read by a reduction (their values would be recomputed in its loops).
  std::set<std::string> read_by_reduction;
  for (const Stage& s : view.stages)
    if (s.definitions.size() > 1) read_by_reduction.insert(s.producers.begin(), s.producers.end());
  for (const auto& o : outputs) ds.output_names.insert(o.name());
  for (const Stage& s : view.stages)
    if (ds.output_names.count(s.name) || s.definitions.size() > 1 || (read_by_reduction.count(s.name) && !s.is_rename))
      ds.root.insert(s.name);
  for (const auto& o : outputs) {
    const Stage* os = view.stage(o.name());
    if (!os) continue;
    std::set<std::string> chain;
    inline_closure(view, *os, ds.root, chain);
    chain.insert(o.name());
    // Reductions read by this output's inlined chain and nothing else.
    std::vector<std::string> reductions;
    for (const Stage& s : view.stages) {
      if (s.definitions.size() < 2 || s.consumers.empty()) continue;
      if (std::all_of(s.consumers.begin(), s.consumers.end(), [&](const std::string& c) { return chain.count(c) > 0; }))
        reductions.push_back(s.name);
    }
    if (reductions.size() != 1) continue;
    if (auto facts = tile_facts(view, o.name(), reductions[0], target)) {
      const Halide::Func via = facts->weights_via.empty() ? Halide::Func() : Halide::Func(ds.env.at(facts->weights_via));
      ds.tiles.push_back({o, Halide::Func(ds.env.at(reductions[0])), via, *facts});
    }
  }
  return ds;
}

DefaultStructure default_structure(const std::vector<Halide::Func>& outputs, const Halide::Target& target) {
  return default_structure(build_pipeline_view(outputs), outputs, target);
}

}  // namespace ts
