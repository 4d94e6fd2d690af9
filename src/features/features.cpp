// FeatureExtractor: the feature layouts, what is precomputed per pipeline (intrinsic features,
// call sites as index matrices), the placement pass (regions, executions, allocations) and the
// flat vector with AutoTVM's context relations. The per-definition model is in stage_model.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "features/features_internal.h"
#include "graph/error.h"
#include "schedule/restructure.h"

namespace ts {

using namespace fdetail;

namespace fdetail {

namespace {

struct Names {
  std::vector<std::string>& v;
  int operator()(const std::string& n) {
    v.push_back(n);
    return static_cast<int>(v.size()) - 1;
  }
};

const char* const kOpNames[] = {"f_add", "f_sub", "f_mul", "f_div", "f_minmax", "f_cmp", "f_select", "f_math",
                                "i_add", "i_mul", "i_divmod", "i_minmax", "i_cmp", "i_select", "i_shift", "i_bit",
                                "i_other", "bool_ops", "casts", "loads", "self_loads", "stores"};
constexpr int kNumOps = 22;

std::array<int64_t, kNumOps> op_values(const OpHistogram& h) {
  return {h.f_add, h.f_sub, h.f_mul, h.f_div, h.f_minmax, h.f_cmp, h.f_select, h.f_math, h.i_add, h.i_mul, h.i_divmod,
          h.i_minmax, h.i_cmp, h.i_select, h.i_shift, h.i_bit, h.i_other, h.bool_ops, h.casts, h.loads, h.self_loads, h.stores};
}

const char* const kLevelNames[] = {"L0", "L1", "L2", "L3", "L4", "L5", "root"};
static_assert(sizeof(kLevelNames) / sizeof(kLevelNames[0]) == kLevels + 1);
const char* const kBufNames[] = {"p0", "p1", "p2", "out"};
const char* const kCurveNames[] = {"touch", "bytes", "reuse"};

StageLayout make_stage_layout() {
  StageLayout L;
  Names a{L.names};
  L.i_update = a("i_update");
  L.i_output = a("i_output");
  L.i_bytes = a("i_bytes");
  L.i_elements = a("i_elements");
  L.i_points = a("i_points");
  L.i_reduction_points = a("i_reduction_points");
  L.i_loops = a("i_loops");
  L.i_reduction_loops = a("i_reduction_loops");
  for (int k = 0; k < kLevels; k++) L.i_loop_extent[k] = a(fmt::format("i_loop{}_extent", k));
  L.i_ops_begin = static_cast<int>(L.names.size());
  for (const char* o : kOpNames) a(fmt::format("i_op_{}", o));
  L.i_flops = a("i_flops");
  L.i_int_ops = a("i_int_ops");
  L.i_flops_per_load = a("i_flops_per_load");
  L.i_intensity = a("i_intensity");
  for (int q = 0; q < kProducers; q++) {
    auto n = [&](const char* f) { return a(fmt::format("i_p{}_{}", q, f)); };
    L.i_prod[q] = {n("present"), n("is_input"), n("bytes"), n("sites"), n("loads"), n("stride_inner"),
                   n("non_affine"), n("transposed"), n("broadcast_loops"), n("footprint")};
  }
  L.acquired_begin = static_cast<int>(L.names.size());
  L.a_inline = a("a_inline");
  L.a_root = a("a_root");
  L.a_compute_at = a("a_compute_at");
  L.a_store_outside = a("a_store_outside");
  L.a_executions = a("a_executions");
  L.a_points = a("a_points");
  L.a_recompute = a("a_recompute");
  L.a_loops = a("a_loops");
  for (int k = 0; k < kLevels; k++) L.a_loop_extent[k] = a(fmt::format("a_loop{}_extent", k));
  for (int k = 0; k < kLevels; k++) L.a_loop_reduction[k] = a(fmt::format("a_loop{}_reduction", k));
  L.a_parallel_depth = a("a_parallel_depth");
  L.a_unroll_extent = a("a_unroll_extent");
  L.a_vector_lanes = a("a_vector_lanes");
  L.a_vec_frac = a("a_vec_frac");
  L.a_vec_float_ops = a("a_vec_float_ops");
  L.a_scalar_float_ops = a("a_scalar_float_ops");
  L.a_vec_int_ops = a("a_vec_int_ops");
  L.a_scalar_int_ops = a("a_scalar_int_ops");
  L.a_vec_loads = a("a_vec_loads");
  L.a_scalar_loads = a("a_scalar_loads");
  L.a_vec_stores = a("a_vec_stores");
  L.a_scalar_stores = a("a_scalar_stores");
  L.a_vec_loads_dense = a("a_vec_loads_dense");
  L.a_vec_loads_broadcast = a("a_vec_loads_broadcast");
  L.a_vec_loads_strided = a("a_vec_loads_strided");
  L.a_vec_loads_gather = a("a_vec_loads_gather");
  L.a_inlined_stages = a("a_inlined_stages");
  L.a_inlined_ops = a("a_inlined_ops");
  for (int k = 0; k <= kLevels; k++) {
    auto n = [&](const char* pre, const char* f) { return a(fmt::format("{}_{}_{}", pre, kLevelNames[k], f)); };
    L.level[k] = {n("a", "points"), n("a", "read_bytes"), n("a", "write_bytes"), n("a", "read_lines"),
                  n("a", "write_lines"), n("a", "reused_bytes"), n("d", "intensity")};
  }
  for (int q = 0; q < kProducers; q++) {
    auto n = [&](const char* f) { return a(fmt::format("a_p{}_{}", q, f)); };
    L.a_prod[q] = {n("present"), n("loads"), n("stride_inner"), n("dense"), n("broadcast"),
                   n("gather"), n("reuse_distance"), n("root_lines"), n("local")};
  }
  L.a_out_stride_inner = a("a_out_stride_inner");
  L.a_out_reuse_distance = a("a_out_reuse_distance");
  L.a_tasks = a("a_tasks");
  L.a_core_util = a("a_core_util");
  L.a_launches = a("a_launches");
  L.a_false_sharing = a("a_false_sharing");
  L.a_alloc_bytes = a("a_alloc_bytes");
  L.a_allocs = a("a_allocs");
  L.a_heap = a("a_heap");
  L.a_stack = a("a_stack");
  L.a_page_faults = a("a_page_faults");
  L.a_prefetches = a("a_prefetches");
  L.a_prefetch_ahead = a("a_prefetch_ahead");
  L.a_prefetch_lines = a("a_prefetch_lines");
  L.a_task_prefetches = a("a_task_prefetches");
  L.a_rfactor = a("a_rfactor");
  L.a_staged_copies = a("a_staged_copies");
  L.d_vec_ops_per_byte = a("d_vec_ops_per_byte");
  L.d_loads_per_op = a("d_loads_per_op");
  L.d_bytes_per_line = a("d_bytes_per_line");
  L.d_ops_per_task = a("d_ops_per_task");
  return L;
}

FlatLayout make_flat_layout() {
  FlatLayout F;
  Names a{F.names};
  F.anchor = 0;
  for (const auto& n : stage_layout().names) a("anchor." + n);
  F.output = static_cast<int>(F.names.size());
  for (const auto& n : stage_layout().names) a("output." + n);
  F.s_decided = a("sum.decided_frac");
  F.s_inline = a("sum.inline_funcs");
  F.s_root = a("sum.root_funcs");
  F.s_compute_at = a("sum.compute_at_funcs");
  F.s_points = a("sum.points");
  F.s_recompute = a("sum.recompute");
  F.s_vec_frac = a("sum.vec_frac");
  F.s_vec_float_ops = a("sum.vec_float_ops");
  F.s_scalar_float_ops = a("sum.scalar_float_ops");
  F.s_vec_int_ops = a("sum.vec_int_ops");
  F.s_scalar_int_ops = a("sum.scalar_int_ops");
  F.s_vec_loads = a("sum.vec_loads");
  F.s_scalar_loads = a("sum.scalar_loads");
  F.s_read_bytes = a("sum.read_bytes");
  F.s_write_bytes = a("sum.write_bytes");
  F.s_read_lines = a("sum.read_lines");
  F.s_write_lines = a("sum.write_lines");
  F.s_alloc_bytes = a("sum.alloc_bytes");
  F.s_allocs = a("sum.allocs");
  F.s_heap_allocs = a("sum.heap_allocs");
  F.s_page_faults = a("sum.page_faults");
  F.s_false_sharing = a("sum.false_sharing");
  F.s_launches = a("sum.parallel_launches");
  F.s_min_core_util = a("sum.min_core_util");
  F.cr_begin = static_cast<int>(F.names.size());
  for (const char* b : kBufNames)
    for (const char* c : kCurveNames)
      for (int t = 0; t < kThresholds; t++) a(fmt::format("cr.{}.{}.le2^{}", b, c, 2 * t));
  return F;
}

// AccessDims of a call site as Idx rows.
Read make_read(int buf, const std::vector<AccessDim>& dims) {
  Read r;
  r.buf = buf;
  for (const AccessDim& d : dims) {
    Idx x;
    x.affine = d.affine;
    x.coeff = d.coeffs;
    x.constant = d.constant;
    for (int k : d.depends_on)
      if (k < 64) x.deps |= uint64_t{1} << k;
    r.dims.push_back(std::move(x));
  }
  return r;
}

}  // namespace

const StageLayout& stage_layout() {
  static const StageLayout L = make_stage_layout();
  return L;
}

const FlatLayout& flat_layout() {
  static const FlatLayout F = make_flat_layout();
  return F;
}

}  // namespace fdetail

const std::vector<std::string>& stage_feature_names() { return stage_layout().names; }
const std::vector<std::string>& flat_feature_names() { return flat_layout().names; }
size_t stage_intrinsic_features() { return static_cast<size_t>(stage_layout().acquired_begin); }

// ---- construction: everything the schedule does not change ----

struct FeatureExtractor::Impl : Pipeline {
  explicit Impl(const ScheduleSpace& sp);

  // A schedule that makes Funcs (rfactor, staging copies) is featurized on its restructured
  // pipeline, whose view has those Funcs as stages: they get rows of their own. One space and
  // extractor per restructuring (the same directives make the same Funcs), built on first use.
  struct Restructuring {
    std::unique_ptr<ScheduleSpace> space;
    std::unique_ptr<FeatureExtractor> extractor;
  };
  const Restructuring& restructuring(const Schedule& s) const;
  mutable std::mutex restructured_mutex;
  mutable std::map<std::string, std::unique_ptr<Restructuring>> restructured;  // by restructuring_key()
};

namespace {
void intrinsic(const Pipeline& p, DefInfo& d);
}  // namespace

FeatureExtractor::Impl::Impl(const ScheduleSpace& sp) {
  space = &sp;
  const PipelineView& v = sp.view();
  num_stages = static_cast<int>(v.stages.size());
  cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  auto buf_of = [&](const std::string& name) {
    const int s = v.stage_index(name);
    if (s >= 0) return s;
    for (size_t k = 0; k < v.inputs.size(); k++)
      if (v.inputs[k].name == name) return num_stages + static_cast<int>(k);
    throw Error(fmt::format("features: producer '{}' is neither a stage nor an input", name));
  };
  for (const InputTensor& in : v.inputs) {
    std::vector<int64_t> ext;
    for (const Loop& d : in.dims) ext.push_back(std::max<int64_t>(1, d.extent));
    input_geom.push_back(make_geom(in.bytes, ext));
  }
  stage_of_decision.resize(sp.decisions().size());
  out_edges.resize(num_stages);
  for (int s = 0; s < num_stages; s++) {
    const Stage& st = v.stages[s];
    StageInfo si;
    si.name = func_base_name(st.name);
    for (size_t i = 0; i < sp.decisions().size(); i++)
      if (sp.decisions()[i] == st.name) si.decision = static_cast<int>(i);
    stage_of_decision[si.decision] = s;
    stage_of_name[si.name] = s;
    si.first_def = static_cast<int>(defs.size());
    for (const Loop& d : st.dims) si.full.push_back(std::max<int64_t>(1, d.extent));
    if (!st.definitions.empty())
      for (const Loop& l : st.definitions[0].loops) {
        int dim = 0;
        for (size_t a = 0; a < st.dims.size(); a++)
          if (st.dims[a].name == l.name) dim = static_cast<int>(a);
        si.dim_of_loop.push_back(dim);
      }
    for (const std::string& c : st.consumers) si.consumers.push_back(v.stage_index(c));
    for (const Edge* e : v.edges_from(st.name)) out_edges[s].push_back({v.stage_index(e->consumer), e});
    for (size_t d = 0; d < st.definitions.size(); d++) {
      DefInfo di;
      di.stage = s;
      di.def = static_cast<int>(d);
      for (const Edge* e : v.edges_into(st.name))
        for (const Access& a : e->accesses)
          if (a.definition == di.def) di.reads.push_back(make_read(buf_of(e->producer), a.dims));
      for (const Access& a : st.definitions[d].self_accesses) di.reads.push_back(make_read(s, a.dims));
      di.store = make_read(s, st.definitions[d].store);
      defs.push_back(std::move(di));
    }
    stages.push_back(std::move(si));
  }
  // Reads through renames (always inlined: the space offers nothing else), then intrinsics.
  std::vector<FuncState> renames(num_stages);
  for (int s = 0; s < num_stages; s++) renames[s].inlined = v.stages[s].is_rename && !v.stages[s].is_output;
  for (DefInfo& d : defs) {
    const size_t nloops = v.stages[d.stage].definitions[d.def].loops.size();
    std::vector<Read> todo = d.reads;
    while (!todo.empty()) {
      Read r = std::move(todo.back());
      todo.pop_back();
      if (r.buf < num_stages && renames[r.buf].inlined && r.buf != d.stage) {
        const StageInfo& pi = stages[r.buf];
        for (const Read& q : defs[pi.first_def].reads) todo.push_back(compose(r, q, pi.dim_of_loop, nloops));
      } else {
        d.static_reads.push_back(std::move(r));
      }
    }
    std::reverse(d.static_reads.begin(), d.static_reads.end());
    intrinsic(*this, d);
  }
  int64_t best = -1;
  for (size_t k = 0; k < defs.size(); k++) {
    const int64_t pts = v.stages[defs[k].stage].definitions[defs[k].def].points;
    if (pts > best) best = pts, anchor = static_cast<int>(k);
  }
  for (size_t k = 0; k < defs.size(); k++)
    if (v.stages[defs[k].stage].is_output) {
      output_def = static_cast<int>(k);
      for (size_t j = k + 1; j < defs.size() && defs[j].stage == defs[k].stage; j++) output_def = static_cast<int>(j);
      break;
    }
}

namespace {

void intrinsic(const Pipeline& p, DefInfo& d) {
  const StageLayout& L = stage_layout();
  const int num_stages = p.num_stages;
  const auto& stages = p.stages;
  const auto& input_geom = p.input_geom;
  const ScheduleSpace* space = p.space;
  const Stage& st = space->view().stages[d.stage];
  const Definition& def = st.definitions[d.def];
  std::vector<float> row(L.acquired_begin, 0.f);
  const double points = static_cast<double>(def.points);
  int64_t red = 1;
  int nred = 0;
  for (const Loop& l : def.loops)
    if (l.reduction) red *= std::max<int64_t>(1, l.extent), nred++;
  row[L.i_update] = d.def > 0;
  row[L.i_output] = st.is_output;
  row[L.i_bytes] = static_cast<float>(st.bytes);
  row[L.i_elements] = lg(static_cast<double>(st.elements));
  row[L.i_points] = lg(points);
  row[L.i_reduction_points] = lg(static_cast<double>(red));
  row[L.i_loops] = static_cast<float>(def.loops.size());
  row[L.i_reduction_loops] = static_cast<float>(nred);
  const std::vector<OrigLoop> orig = original_loops(st, d.def, {});
  for (int k = 0; k < kLevels && k < static_cast<int>(orig.size()); k++) row[L.i_loop_extent[k]] = lg(static_cast<double>(orig[k].extent));
  const auto ops = op_values(def.ops);
  for (int k = 0; k < kNumOps; k++) row[L.i_ops_begin + k] = static_cast<float>(ops[k]);
  const double flops = static_cast<double>(def.ops.float_ops());
  row[L.i_flops] = lg(flops * points);
  row[L.i_int_ops] = lg(static_cast<double>(def.ops.int_ops() + def.ops.bool_ops) * points);
  row[L.i_flops_per_load] = static_cast<float>(flops / std::max<double>(1, static_cast<double>(def.ops.loads)));

  // Producers through renames, by sites; default layouts, the default nest's innermost loop.
  const Geom own = make_geom(st.bytes, stages[d.stage].full);
  auto geom = [&](int b) { return b < num_stages ? make_geom(space->view().stages[b].bytes, stages[b].full) : input_geom[b - num_stages]; };
  std::vector<std::pair<int, std::vector<const Read*>>> bufs;
  for (const Read& r : d.static_reads) {
    auto it = std::find_if(bufs.begin(), bufs.end(), [&](const auto& b) { return b.first == r.buf; });
    if (it == bufs.end()) bufs.push_back({r.buf, {&r}});
    else it->second.push_back(&r);
  }
  std::vector<int64_t> full(def.loops.size(), 1);
  for (const OrigLoop& o : orig) full[o.def_loop] = o.extent;
  const int inner = orig.empty() ? 0 : orig[0].def_loop;
  double unique = footprint({&d.store}, own, full).elems * st.bytes;
  std::vector<int> order;
  for (size_t b = 0; b < bufs.size(); b++) {
    unique += footprint(bufs[b].second, geom(bufs[b].first), full).elems * geom(bufs[b].first).bytes;
    if (bufs[b].first != d.stage) order.push_back(static_cast<int>(b));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bufs[a].second.size() > bufs[b].second.size(); });
  for (int q = 0; q < kProducers && q < static_cast<int>(order.size()); q++) {
    const auto& [buf, rs] = bufs[order[q]];
    const IProducerIdx& pi = L.i_prod[q];
    const Geom g = geom(buf);
    bool gather = false, non_affine = false, dim0_inner = false, other_inner = false;
    const int64_t a = orig.empty() ? 0 : address_step(*rs[0], g, inner, gather);
    for (const Read* r : rs)
      for (size_t m = 0; m < r->dims.size(); m++) {
        const Idx& x = r->dims[m];
        non_affine |= !x.affine;
        const bool uses = (x.deps >> inner & 1) != 0;
        (m == 0 ? dim0_inner : other_inner) |= uses;
      }
    int bcast = 0;
    for (size_t j = 0; j < def.loops.size(); j++)
      if (def.loops[j].extent > 1 && invariant(rs, static_cast<int>(j))) bcast++;
    row[pi.present] = 1;
    row[pi.is_input] = buf >= num_stages;
    row[pi.bytes] = static_cast<float>(g.bytes);
    row[pi.sites] = static_cast<float>(rs.size());
    row[pi.loads] = lg(static_cast<double>(rs.size()) * points);
    row[pi.stride_inner] = lg(static_cast<double>(std::abs(a)));
    row[pi.non_affine] = non_affine;
    row[pi.transposed] = !dim0_inner && other_inner;
    row[pi.broadcast_loops] = static_cast<float>(bcast);
    row[pi.footprint] = lg(footprint(rs, g, full).elems);
  }
  row[L.i_intensity] = static_cast<float>(flops * points / std::max(1.0, unique));
  d.intrinsic = std::move(row);
}

}  // namespace

FeatureExtractor::FeatureExtractor(const ScheduleSpace& space) : impl_(std::make_shared<Impl>(space)) {}

// ---- extraction ----

namespace {

// Pass 1, decision order (consumers first): placement, region, executions, nests, storage.
void place(const Pipeline& p, const Schedule& s, std::vector<FuncState>& funcs);

// An inlined Func's row: what its consumers' evaluations of it computed (`points`: its own).
void fill_inline_row(const FuncState& fs, double points, const StageLayout& L, std::vector<float>& r) {
  r[L.a_inline] = 1;
  r[L.a_points] = lg(fs.calls);
  r[L.a_recompute] = static_cast<float>(fs.calls / points);
  r[L.a_vec_frac] = static_cast<float>(fs.calls > 0 ? 1 - fs.calls_scalar / fs.calls : 0);
  r[L.a_vec_float_ops] = lg(fs.ops_vec);
  r[L.a_scalar_float_ops] = lg(fs.ops_scalar);
  r[L.a_vec_int_ops] = lg(fs.ints_vec);
  r[L.a_scalar_int_ops] = lg(fs.ints_scalar);
}

// Context relations (AutoTVM section 4) of the anchor definition `a`: per buffer and curve, the
// largest value over the loop levels whose points (the product of the extents inside) are at
// most 2^(2t).
void add_context_relations(const DefResult& a, const FlatLayout& F, std::vector<float>& f) {
  for (size_t b = 0; b < a.bufs.size(); b++) {
    const BufLevels& bl = a.bufs[b];
    if (bl.elem_bytes == 0) continue;
    for (size_t k = 0; k < a.level_points.size(); k++) {
      const double touch = lg(bl.touches[k]), bytes = lg(bl.elems[k] * bl.elem_bytes);
      const double reuse = lg(bl.touches[k] / std::max(1.0, bl.elems[k]));
      const int t0 = std::max(0, static_cast<int>(std::ceil(std::log2(std::max(1.0, a.level_points[k])) / 2)));
      for (int t = t0; t < kThresholds; t++) {
        float* c = &f[F.cr_begin + (static_cast<int>(b) * 3) * kThresholds + t];
        c[0] = std::max(c[0], static_cast<float>(touch));
        c[kThresholds] = std::max(c[kThresholds], static_cast<float>(bytes));
        c[2 * kThresholds] = std::max(c[2 * kThresholds], static_cast<float>(reuse));
      }
    }
  }
}

// The flat vector's totals over the pipeline: how many stages each placement took, the modeled
// definitions' operations, traffic and allocations summed, recompute (computed / needed points,
// inline Funcs' included) and the least-used core.
void fill_pipeline_totals(const Pipeline& p, const std::vector<FuncState>& funcs, const std::vector<DefResult>& results,
                          const std::vector<char>& modeled, double needed, double computed, const FlatLayout& F,
                          std::vector<float>& f) {
  const PipelineView& v = p.space->view();
  double vec_points = 0, all_points = 0;
  double decided = 0, n_inline = 0, n_root = 0, n_at = 0;
  for (const FuncState& fs : funcs) {
    decided += fs.decided;
    n_inline += fs.decided && fs.inlined;
    n_root += fs.decided && !fs.inlined && fs.placement == Placement::Root;
    n_at += fs.decided && !fs.inlined && fs.placement == Placement::ComputeAt;
  }
  DefResult sum;
  double alloc_bytes = 0, allocs = 0, heap_allocs = 0, faults = 0, min_util = 0;
  bool any = false;
  for (size_t di = 0; di < p.defs.size(); di++) {
    if (!modeled[di]) continue;
    const DefResult& r = results[di];
    sum.vec_float += r.vec_float, sum.scalar_float += r.scalar_float, sum.vec_int += r.vec_int;
    sum.scalar_int += r.scalar_int, sum.vec_loads += r.vec_loads, sum.scalar_loads += r.scalar_loads;
    sum.read_bytes += r.read_bytes, sum.write_bytes += r.write_bytes, sum.read_lines += r.read_lines;
    sum.write_lines += r.write_lines, sum.launches += r.launches, sum.false_sharing += r.false_sharing;
    computed += r.points, needed += r.needed, all_points += r.points, vec_points += r.points * r.vec_frac;
    min_util = any ? std::min(min_util, r.core_util) : r.core_util;
    any = true;
    const DefInfo& d = p.defs[di];
    const FuncState& fs = funcs[d.stage];
    if (d.def == 0 && fs.allocs > 0) {
      const double b = static_cast<double>(fs.alloc_elems) * fs.geom.bytes * v.stages[d.stage].num_values;
      alloc_bytes += b * fs.allocs;
      allocs += fs.allocs;
      if (!(fs.local && b < kStackLimit)) heap_allocs += fs.allocs, faults += std::ceil(b / 4096) * fs.allocs;
    }
  }
  f[F.s_decided] = static_cast<float>(decided / std::max(1, p.num_stages));
  f[F.s_inline] = static_cast<float>(n_inline);
  f[F.s_root] = static_cast<float>(n_root);
  f[F.s_compute_at] = static_cast<float>(n_at);
  f[F.s_points] = lg(all_points);
  f[F.s_recompute] = static_cast<float>(needed > 0 ? computed / needed : 0);
  f[F.s_vec_frac] = static_cast<float>(all_points > 0 ? vec_points / all_points : 0);
  f[F.s_vec_float_ops] = lg(sum.vec_float);
  f[F.s_scalar_float_ops] = lg(sum.scalar_float);
  f[F.s_vec_int_ops] = lg(sum.vec_int);
  f[F.s_scalar_int_ops] = lg(sum.scalar_int);
  f[F.s_vec_loads] = lg(sum.vec_loads);
  f[F.s_scalar_loads] = lg(sum.scalar_loads);
  f[F.s_read_bytes] = lg(sum.read_bytes);
  f[F.s_write_bytes] = lg(sum.write_bytes);
  f[F.s_read_lines] = lg(sum.read_lines);
  f[F.s_write_lines] = lg(sum.write_lines);
  f[F.s_alloc_bytes] = lg(alloc_bytes);
  f[F.s_allocs] = lg(allocs);
  f[F.s_heap_allocs] = lg(heap_allocs);
  f[F.s_page_faults] = lg(faults);
  f[F.s_false_sharing] = lg(sum.false_sharing);
  f[F.s_launches] = lg(sum.launches);
  f[F.s_min_core_util] = static_cast<float>(min_util);
}

}  // namespace

namespace {

// What a schedule's Func-making directives are, as text: schedules with the same key make the same Funcs.
std::string restructuring_key(const Schedule& s) {
  std::string key;
  for (const StageSchedule& ss : s.stages) {
    if (!ss.restructures()) continue;
    key += fmt::format("{}.{}:", ss.func, ss.definition);
    for (const auto& r : ss.rfactor) key += fmt::format("rf({},{})", r.rvar, r.var);
    for (const auto& c : ss.staged_for) key += fmt::format("in({})", c);
    key += ";";
  }
  return key;
}

}  // namespace

const FeatureExtractor::Impl::Restructuring& FeatureExtractor::Impl::restructuring(const Schedule& s) const {
  const std::string key = restructuring_key(s);
  std::lock_guard<std::mutex> lock(restructured_mutex);
  std::unique_ptr<Restructuring>& r = restructured[key];
  if (r) return *r;
  const std::vector<Halide::Func> copy = copy_pipeline(space->outputs());
  Restructured done;
  if (auto why = restructure(s, copy, done)) throw Error(fmt::format("features of schedule {}: {}", s.hash(), *why));
  call_staged_copies(copy);
  PipelineView view = build_pipeline_view(copy);
  view.rename_stages(done.names);  // the made Funcs by the names the schedule gives them
  auto made = std::make_unique<Restructuring>();
  made->space = std::make_unique<ScheduleSpace>(std::move(view), space->options());
  made->extractor = std::make_unique<FeatureExtractor>(*made->space);
  r = std::move(made);
  return *r;
}

ScheduleFeatures FeatureExtractor::extract(const Schedule& s) const {
  const Impl& p = *impl_;
  if (s.autoscheduler)
    throw Error(fmt::format("features need stage decisions, but the schedule is an autoscheduler recipe ({}): "
                            "its decisions are made inside Halide", s.autoscheduler->name));
  if (!p.space->outputs().empty() &&
      std::any_of(s.stages.begin(), s.stages.end(), [](const StageSchedule& ss) { return ss.restructures(); }))
    return p.restructuring(s).extractor->extract(s);
  const StageLayout& L = stage_layout();
  const FlatLayout& F = flat_layout();
  const PipelineView& v = p.space->view();
  std::vector<FuncState> funcs(p.num_stages);
  for (int st = 0; st < p.num_stages; st++) {
    funcs[st].inlined = v.stages[st].is_rename && !v.stages[st].is_output;  // until decided
    funcs[st].geom = make_geom(v.stages[st].bytes, p.stages[st].full);
  }
  place(p, s, funcs);

  ScheduleFeatures out;
  out.stages.resize(p.defs.size());
  out.flat.assign(F.names.size(), 0.f);
  std::vector<DefResult> results(p.defs.size());
  std::vector<char> modeled(p.defs.size(), 0);
  for (size_t di = 0; di < p.defs.size(); di++) {
    const DefInfo& d = p.defs[di];
    StageFeatures& row = out.stages[di];
    row.stage = p.stages[d.stage].name;
    row.definition = d.def;
    row.decided = funcs[d.stage].decided;
    row.values.assign(L.names.size(), 0.f);
    std::copy(d.intrinsic.begin(), d.intrinsic.end(), row.values.begin());
    if (row.decided && !funcs[d.stage].inlined) {
      results[di] = model_definition(p, s, static_cast<int>(di), funcs, row.values);
      modeled[di] = 1;
    }
  }
  // Inline Funcs: what their consumers' evaluations of them computed.
  double needed = 0, computed = 0;
  for (size_t di = 0; di < p.defs.size(); di++) {
    const DefInfo& d = p.defs[di];
    const FuncState& fs = funcs[d.stage];
    if (!fs.decided || !fs.inlined) continue;
    const double pts = static_cast<double>(std::max<int64_t>(1, v.stages[d.stage].definitions[d.def].points));
    fill_inline_row(fs, pts, L, out.stages[di].values);
    needed += pts;
    computed += fs.calls;
  }

  // Flat: the anchor's and the output's rows, sums over decided definitions, the anchor's context relations.
  std::copy(out.stages[p.anchor].values.begin(), out.stages[p.anchor].values.end(), out.flat.begin() + F.anchor);
  // The output's too: how the result is written (its parallelism, vectors) is not the anchor's
  // when the anchor is an inner reduction.
  std::copy(out.stages[p.output_def].values.begin(), out.stages[p.output_def].values.end(),
            out.flat.begin() + F.output);
  fill_pipeline_totals(p, funcs, results, modeled, needed, computed, F, out.flat);
  add_context_relations(results[p.anchor], F, out.flat);
  return out;
}

std::vector<float> FeatureExtractor::flat(const Schedule& s) const { return extract(s).flat; }

namespace {

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::string def_name(const ConsumerLoop& at) {
  return at.definition == 0 ? at.func : fmt::format("{}.update({})", at.func, at.definition - 1);
}

// The region of stage x one iteration of loop `at` (its nest's cover there: `cover`) needs, when x
// is read there through stages computed inside that loop (a Winograd product at the output's
// task loop, read by the output transform computed at a tile loop inside it): each reader's
// region per iteration of `at`, then what the reader's loops over that region read of x
// (reduction loops whole), over every definition of the reader.
// Per stage, where its uses end up through inlined consumers, looked up once per extraction: it
// depends only on its consumers' placements, decided before the stage is placed (the key of
// Pipeline::uses_cache).
using UsesMemo = std::vector<std::optional<std::optional<UsesInStage>>>;

const std::optional<UsesInStage>& uses_of(const Pipeline& p, const std::vector<FuncState>& funcs, int x, UsesMemo& memo) {
  std::optional<std::optional<UsesInStage>>& m = memo.at(static_cast<size_t>(x));
  if (m) return *m;
  std::vector<bool> flags;  // decided and inlined, of the stages decided before x
  flags.reserve(2 * p.stage_of_decision.size());
  for (int st : p.stage_of_decision) {
    if (st == x) break;
    flags.push_back(funcs[st].decided);
    flags.push_back(funcs[st].inlined);
  }
  std::pair<int, std::vector<bool>> key{x, std::move(flags)};
  {
    std::lock_guard<std::mutex> lock(p.uses_mutex);
    if (auto it = p.uses_cache.find(key); it != p.uses_cache.end()) return *(m = it->second);
  }
  const PipelineView& v = p.space->view();
  m = uses_through_inlined(v, v.stages[x].name, [&](const std::string& n) -> std::optional<bool> {
    const auto k = p.stage_of_name.find(func_base_name(n));
    return k == p.stage_of_name.end() || !funcs[k->second].decided ? std::nullopt : std::optional<bool>(funcs[k->second].inlined);
  });
  std::lock_guard<std::mutex> lock(p.uses_mutex);
  if (p.uses_cache.size() < 4096) p.uses_cache.emplace(std::move(key), *m);
  return *m;
}

std::vector<int64_t> region_per_iteration(const Pipeline& p, const std::vector<FuncState>& funcs, int x, const ConsumerLoop& at,
                                          const std::vector<int64_t>& cover, int depth, UsesMemo& memo) {
  const PipelineView& v = p.space->view();
  const StageInfo& xi = p.stages[x];
  const std::optional<UsesInStage>& uses = uses_of(p, funcs, x, memo);
  const auto reader = uses ? p.stage_of_name.find(func_base_name(uses->stage)) : p.stage_of_name.end();
  if (!uses || reader == p.stage_of_name.end() || depth > 16)
    throw Error(fmt::format("stage '{}': computed at '{}', which does not read it through inlined Funcs or Funcs computed inside it",
                            xi.name, at.func));
  if (func_base_name(uses->stage) == at.func) {
    std::vector<Access> accs;
    for (const Access& a : uses->accesses)
      if (a.definition == at.definition) accs.push_back(a);
    if (accs.empty()) throw Error(fmt::format("stage '{}': computed in '{}', which does not read it", xi.name, def_name(at)));
    return access_region(accs, cover, xi.full);
  }
  const int r = reader->second;
  const FuncState& rf = funcs[r];
  if (!rf.decided || rf.placement != Placement::ComputeAt)
    throw Error(fmt::format("stage '{}': computed at '{}', but its reader '{}' is not computed inside it", xi.name, at.func,
                            p.stages[r].name));
  const std::vector<int64_t> reader_region = region_per_iteration(p, funcs, r, at, cover, depth + 1, memo);
  const Stage& rs = v.stages[r];
  std::vector<int64_t> region(xi.full.size(), 1);
  for (size_t d = 0; d < rs.definitions.size(); d++) {
    const auto& loops = rs.definitions[d].loops;
    std::vector<int64_t> reader_cover(loops.size(), 1);
    for (size_t k = 0; k < loops.size(); k++) {
      reader_cover[k] = std::max<int64_t>(loops[k].extent, 1);
      for (size_t m = 0; m < rs.dims.size() && !loops[k].reduction; m++)
        if (rs.dims[m].name == loops[k].name) reader_cover[k] = reader_region.at(m);
    }
    std::vector<Access> accs;
    for (const Access& a : uses->accesses)
      if (a.definition == static_cast<int>(d)) accs.push_back(a);
    if (accs.empty()) continue;
    const std::vector<int64_t> in_d = access_region(accs, reader_cover, xi.full);
    for (size_t m = 0; m < region.size(); m++) region[m] = std::max(region[m], in_d[m]);
  }
  return region;
}

void place(const Pipeline& p, const Schedule& s, std::vector<FuncState>& funcs) {
  const PipelineView& v = p.space->view();
  static const StageSchedule kDefault;
  UsesMemo memo(p.stages.size());
  for (int st : p.stage_of_decision) {
    const StageInfo& si = p.stages[st];
    const Stage& stage = v.stages[st];
    FuncState& fs = funcs[st];
    const StageSchedule* s0 = s.find(si.name, 0);
    if (!s0) continue;
    fs.decided = true;
    fs.placement = s0->placement;
    fs.inlined = s0->placement == Placement::Inline;
    if (fs.inlined) continue;
    std::vector<int64_t> alloc = si.full;
    if (s0->placement == Placement::Root) {
      fs.region = si.full;
      fs.allocs = stage.is_output ? 0 : 1;
    } else {
      const ConsumerLoop& at = s0->compute_at;
      auto ci = p.stage_of_name.find(at.func);
      const int c = ci == p.stage_of_name.end() ? -1 : ci->second;
      if (c < 0 || !funcs[c].decided || funcs[c].inlined)
        throw Error(fmt::format("stage '{}': computed at '{}', which is {}", si.name, at.func,
                                c < 0 ? "not a stage of the pipeline" : !funcs[c].decided ? "undecided" : "inlined"));
      for (int other : si.consumers)
        if (other != si.consumers[0])
          throw Error(fmt::format("stage '{}': computed at a loop of '{}' but also read by '{}' (features model a single consumer)",
                                  si.name, at.func, p.stages[other].name));
      const FuncState& cs = funcs[c];
      if (at.definition < 0 || at.definition >= static_cast<int>(cs.nest.size()))
        throw Error(fmt::format("stage '{}': compute_at names definition {} of '{}'", si.name, at.definition, at.func));
      const std::vector<NestLoop>& nest = cs.nest[at.definition];
      const int j = find_nest_loop(nest, at.loop);
      if (j < 0 || !nest[j].site)
        throw Error(fmt::format("stage '{}': compute_at loop '{}' is {} of '{}'", si.name, at.loop,
                                j < 0 ? "not in the loop nest" : "the vector lanes or a guarded vector loop",
                                def_name(at)));
      // Its accesses in c, composed through the inlined consumers between them (as
      // ScheduleSpace's compute_at candidates are).
      // The region one iteration of a loop of the consumer's nest (its cover) realizes.
      const auto region_at = [&](const std::vector<int64_t>& cover) {
        return region_per_iteration(p, funcs, st, at, cover, 0, memo);
      };
      fs.region = region_at(nest[j].inside);
      double outer = cs.executions;
      for (size_t k = j; k < nest.size(); k++) outer *= static_cast<double>(nest[k].extent);
      fs.executions = outer;
      fs.enclosing_tasks = cs.enclosing_tasks;
      for (size_t k = j; k < nest.size(); k++)
        if (nest[k].kind == LoopKind::Parallel) fs.enclosing_tasks = static_cast<double>(nest[k].extent);
      // Storage: at the compute loop, at an outer loop of the same nest, or at root.
      fs.local = true;
      alloc = fs.region;
      fs.allocs = outer;
      if (s0->store_root) {
        fs.local = false;
        alloc = si.full;
        fs.allocs = 1;
      } else if (!s0->store_at.empty()) {
        const int js = find_nest_loop(nest, s0->store_at);
        if (js < j) throw Error(fmt::format("stage '{}': store_at loop '{}' is not at or outside its compute loop", si.name, s0->store_at));
        alloc = region_at(nest[js].inside);
        fs.allocs = cs.executions;
        for (size_t k = js; k < nest.size(); k++) fs.allocs *= static_cast<double>(nest[k].extent);
      }
    }
    fs.alloc_elems = product(alloc);
    std::vector<int> order;
    for (const std::string& a : s0->storage_order)
      for (size_t m = 0; m < stage.dims.size(); m++)
        if (stage.dims[m].name == a) order.push_back(static_cast<int>(m));
    fs.geom = make_geom(stage.bytes, alloc, order);
    fs.orig.resize(stage.definitions.size());
    fs.nest.resize(stage.definitions.size());
    for (size_t d = 0; d < stage.definitions.size(); d++) {
      const StageSchedule* ss = s.find(si.name, static_cast<int>(d));
      fs.orig[d] = original_loops(stage, static_cast<int>(d), fs.region);
      fs.nest[d] = scheduled_nest(ss ? *ss : kDefault, fs.orig[d]);
    }
  }
}

}  // namespace

std::string ScheduleFeatures::to_json(int indent) const {
  const auto& sn = stage_feature_names();
  const auto& fnames = flat_feature_names();
  nlohmann::ordered_json j;
  j["version"] = kFeaturesVersion;
  j["names"] = {{"stage", sn}, {"flat", fnames}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const StageFeatures& s : stages) {
    nlohmann::ordered_json vals = nlohmann::ordered_json::object();
    for (size_t k = 0; k < s.values.size() && k < sn.size(); k++) vals[sn[k]] = s.values[k];
    rows.push_back({{"stage", s.stage}, {"definition", s.definition}, {"decided", s.decided}, {"values", vals}});
  }
  j["stages"] = rows;
  nlohmann::ordered_json fl = nlohmann::ordered_json::object();
  for (size_t k = 0; k < flat.size() && k < fnames.size(); k++) fl[fnames[k]] = flat[k];
  j["flat"] = fl;
  return j.dump(indent);
}

}  // namespace ts
