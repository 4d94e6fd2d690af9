// The analytical model of one scheduled definition: ops split by vectorization, per loop level
// footprints (affine boxes -> bytes, unique cache lines, reuse), parallelism, allocations.
// Inline producers are folded into the definition that calls them (their accesses composed
// with the caller's), so memory is counted where it really happens.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "features/features_internal.h"
#include "graph/error.h"

namespace ts::fdetail {

float lg(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

Geom make_geom(int bytes, std::vector<int64_t> ext, std::vector<int> order) {
  Geom g;
  g.bytes = bytes;
  g.ext = std::move(ext);
  if (order.size() != g.ext.size()) {
    order.resize(g.ext.size());
    for (size_t k = 0; k < order.size(); k++) order[k] = static_cast<int>(k);
  }
  g.order = std::move(order);
  g.stride.assign(g.ext.size(), 1);
  int64_t st = 1;
  for (int m : g.order) {
    g.stride[m] = st;
    st *= std::max<int64_t>(1, g.ext[m]);
  }
  return g;
}

Read compose(const Read& r, const Read& q, const std::vector<int>& dim_of_loop, size_t nloops) {
  Read out;
  out.buf = q.buf;
  for (const Idx& x : q.dims) {
    Idx o;
    o.coeff.assign(nloops, 0);
    o.constant = x.constant;
    o.affine = x.affine;
    for (size_t l = 0; l < dim_of_loop.size(); l++) {
      const bool used = (l < x.coeff.size() && x.coeff[l] != 0) || (x.deps >> l & 1);
      if (!used) continue;
      const Idx& a = r.dims.at(static_cast<size_t>(dim_of_loop[l]));
      o.deps |= a.deps;
      if (!a.affine) {
        o.affine = false;
        continue;
      }
      if (!x.affine) continue;
      for (size_t j = 0; j < nloops && j < a.coeff.size(); j++) o.coeff[j] += x.coeff[l] * a.coeff[j];
      o.constant += x.coeff[l] * a.constant;
    }
    out.dims.push_back(std::move(o));
  }
  return out;
}

namespace {

struct Fold {
  std::vector<Read> reads;  // call sites of buffers (not inline Funcs)
  double float_pp = 0, int_pp = 0;  // ops per point added by inline producers
  int inlined = 0;          // inline call sites folded
};

// Replaces a read of an inline Func by that Func's own reads (recursively), accounting its calls.
// `vec_pp` / `scalar_pp`: vector instructions / scalar evaluations per point of the caller.
void fold(const Pipeline& p, const Read& r, size_t nloops, double points, double vec_pp, double scalar_pp,
          std::vector<FuncState>& funcs, Fold& out, int depth) {
  const int P = r.buf;
  if (P >= p.num_stages || !funcs[P].inlined) {
    out.reads.push_back(r);
    return;
  }
  const StageInfo& si = p.stages[P];
  const Stage& st = p.space->view().stages[P];
  if (st.definitions.size() != 1)
    throw Error(fmt::format("stage '{}': inlined but it has update definitions (features need it computed somewhere)", si.name));
  if (depth > 64) throw Error(fmt::format("stage '{}': inlined Funcs nested more than 64 deep", si.name));
  const OpHistogram& h = st.definitions[0].ops;
  const double f = static_cast<double>(h.float_ops());
  const double in = static_cast<double>(h.int_ops() + h.bool_ops + h.casts);
  out.float_pp += f;
  out.int_pp += in;
  out.inlined++;
  FuncState& fs = funcs[P];
  fs.calls += points;
  fs.calls_scalar += points * scalar_pp;
  fs.ops_vec += f * points * vec_pp;
  fs.ops_scalar += f * points * scalar_pp;
  fs.ints_vec += in * points * vec_pp;
  fs.ints_scalar += in * points * scalar_pp;
  for (const Read& q : p.defs[si.first_def].reads)
    fold(p, compose(r, q, si.dim_of_loop, nloops), nloops, points, vec_pp, scalar_pp, funcs, out, depth + 1);
}

}  // namespace

// Footprint of reads of one buffer while the loops cover `cover`.
Foot footprint(const std::vector<const Read*>& rs, const Geom& g, const std::vector<int64_t>& cover) {
  const size_t nd = g.ext.size();
  int64_t span[8] = {};
  std::vector<int64_t> big;
  int64_t* sp = span;
  if (nd > 8) {
    big.resize(nd);
    sp = big.data();
  }
  for (size_t m = 0; m < nd; m++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN, na = 0;
    for (const Read* r : rs) {
      const Idx& x = r->dims[m];
      if (!x.affine) {
        int64_t s = 1;  // a non-affine index: as if each loop it mentions stepped by one
        for (size_t j = 0; j < cover.size(); j++)
          if (x.deps >> j & 1) s += cover[j] - 1;
        na = std::max(na, s);
        continue;
      }
      int64_t l0 = x.constant, h0 = x.constant;
      for (size_t j = 0; j < cover.size() && j < x.coeff.size(); j++) {
        const int64_t t = x.coeff[j] * (cover[j] - 1);
        (t < 0 ? l0 : h0) += t;
      }
      lo = std::min(lo, l0);
      hi = std::max(hi, h0);
    }
    const int64_t s = std::max(na, hi >= lo ? hi - lo + 1 : 1);
    sp[m] = std::clamp<int64_t>(s, 1, std::max<int64_t>(1, g.ext[m]));
  }
  Foot f;
  f.elems = 1;
  for (size_t m = 0; m < nd; m++) f.elems *= static_cast<double>(sp[m]);
  if (nd == 0) {
    f.lines = 1;
    return f;
  }
  // Contiguous runs: the innermost stored dim, merged with the next while a dim is whole.
  size_t k = 0;
  double run = static_cast<double>(sp[g.order[0]]);
  while (k + 1 < nd && sp[g.order[k]] == g.ext[g.order[k]]) run *= static_cast<double>(sp[g.order[++k]]);
  double runs = 1;
  for (size_t q = k + 1; q < nd; q++) runs *= static_cast<double>(sp[g.order[q]]);
  f.lines = runs * std::ceil(run * g.bytes / kLineBytes);
  return f;
}

// Address step (elements) of a read when def loop j advances; `gather`: a non-affine dim uses j.
int64_t address_step(const Read& r, const Geom& g, int j, bool& gather) {
  int64_t a = 0;
  gather = false;
  for (size_t m = 0; m < r.dims.size(); m++) {
    const Idx& x = r.dims[m];
    if (!x.affine) {
      gather |= (x.deps >> j & 1) != 0;
      continue;
    }
    if (static_cast<size_t>(j) < x.coeff.size()) a += g.stride[m] * x.coeff[j];
  }
  return a;
}

bool invariant(const std::vector<const Read*>& rs, int j) {
  for (const Read* r : rs)
    for (const Idx& x : r->dims)
      if ((x.deps >> j & 1) || (x.affine && static_cast<size_t>(j) < x.coeff.size() && x.coeff[j] != 0)) return false;
  return true;
}

DefResult model_definition(const Pipeline& p, const Schedule& s, int di, std::vector<FuncState>& funcs,
                           std::vector<float>& row) {
  const StageLayout& L = stage_layout();
  const DefInfo& info = p.defs[di];
  const StageInfo& si = p.stages[info.stage];
  const Stage& st = p.space->view().stages[info.stage];
  const Definition& def = st.definitions[info.def];
  FuncState& fs = funcs[info.stage];
  const std::vector<OrigLoop>& orig = fs.orig[info.def];
  const std::vector<NestLoop>& nest = fs.nest[info.def];
  const StageSchedule* ss = s.find(si.name, info.def);
  const size_t nloops = def.loops.size();
  const int n = static_cast<int>(nest.size());
  const double E = fs.executions;
  DefResult res;

  // Points per execution: tiled loops compute whole tiles unless their tail is guarded.
  double pts1 = 1;
  for (const OrigLoop& o : orig) {
    double e = static_cast<double>(o.extent);
    if (ss)
      for (const auto& t : ss->tiling)
        if (t.loop == o.name && t.tail != Tail::GuardWithIf) {
          double prod = 1;
          for (int64_t f : t.factors) prod *= static_cast<double>(std::max<int64_t>(1, f));
          e = std::ceil(e / prod) * prod;
        }
    pts1 *= e;
  }
  const double points = pts1 * E;
  res.points = points;
  res.needed = static_cast<double>(std::max<int64_t>(1, def.points));

  // Vectorization: lanes, and the fraction of points computed in full vectors.
  int lanes = 0, vloop = -1;
  for (const NestLoop& l : nest)
    if (l.kind == LoopKind::Vectorized) {
      lanes = static_cast<int>(l.extent);
      vloop = l.orig;
    }
  double vec_frac = 0;
  if (lanes > 0 && ss) {
    int64_t X = ss->level_extent(ss->vectorize);
    if (X == 0)
      for (const OrigLoop& o : orig)
        if (o.def_loop == vloop) X = o.extent;
    vec_frac = X > 0 ? static_cast<double>(X / lanes * lanes) / static_cast<double>(X) : 0;
  }
  res.vec_frac = vec_frac;

  // Fold inline producers; group the remaining reads by buffer.
  Fold fd;
  const double vec_pp = lanes > 0 ? vec_frac / lanes : 0, scalar_pp = lanes > 0 ? 1 - vec_frac : 1;
  for (const Read& r : info.reads) fold(p, r, nloops, points, vec_pp, scalar_pp, funcs, fd, 0);
  // A packed input (Schedule::layouts) is modelled with its blocked dim innermost: exact within
  // a block, which is where vector loads fall.
  std::vector<Geom> packed_inputs;
  if (!s.layouts.empty()) {
    packed_inputs = p.input_geom;
    const auto& ins = p.space->view().inputs;
    for (const InputLayout& l : s.layouts)
      for (size_t k = 0; k < ins.size(); k++) {
        const Geom& g = p.input_geom[k];
        if (ins[k].name != l.input || l.dim < 0 || static_cast<size_t>(l.dim) >= g.ext.size()) continue;
        std::vector<int> order{l.dim};
        for (int m = 0; m < static_cast<int>(g.ext.size()); m++)
          if (m != l.dim) order.push_back(m);
        packed_inputs[k] = make_geom(g.bytes, g.ext, order);
      }
  }
  const std::vector<Geom>& input_geom = packed_inputs.empty() ? p.input_geom : packed_inputs;
  const auto geom = [&](int b) -> const Geom& { return b < p.num_stages ? funcs[b].geom : input_geom[b - p.num_stages]; };
  struct Buf {
    int buf;
    std::vector<const Read*> reads;
  };
  std::vector<Buf> bufs;
  for (const Read& r : fd.reads) {
    auto it = std::find_if(bufs.begin(), bufs.end(), [&](const Buf& b) { return b.buf == r.buf; });
    if (it == bufs.end()) bufs.push_back({r.buf, {&r}});
    else it->reads.push_back(&r);
  }
  const Geom& own = funcs[info.stage].geom;
  const std::vector<const Read*> store{&info.store};

  // Ops per point and their split into vector instructions and scalar ops.
  const OpHistogram& h = def.ops;
  const double float_pp = static_cast<double>(h.float_ops()) + fd.float_pp;
  const double int_pp = static_cast<double>(h.int_ops() + h.bool_ops + h.casts) + fd.int_pp;
  const double loads_pp = static_cast<double>(fd.reads.size()), stores_pp = static_cast<double>(std::max<int64_t>(1, h.stores));
  auto split = [&](double pp, int vi, int si_) {
    const double v = pp * points * vec_pp, sc = pp * points * scalar_pp;
    row[vi] = lg(v);
    row[si_] = lg(sc);
    return std::pair{v, sc};
  };
  std::tie(res.vec_float, res.scalar_float) = split(float_pp, L.a_vec_float_ops, L.a_scalar_float_ops);
  std::tie(res.vec_int, res.scalar_int) = split(int_pp, L.a_vec_int_ops, L.a_scalar_int_ops);
  std::tie(res.vec_loads, res.scalar_loads) = split(loads_pp, L.a_vec_loads, L.a_scalar_loads);
  split(stores_pp, L.a_vec_stores, L.a_scalar_stores);
  row[L.a_inlined_stages] = static_cast<float>(fd.inlined);
  row[L.a_inlined_ops] = static_cast<float>(fd.float_pp + fd.int_pp);

  // Vector loads by kind: the address step along the vector loop.
  if (lanes > 0) {
    double dense = 0, bcast = 0, strided = 0, gather_n = 0;
    for (const Buf& b : bufs)
      for (const Read* r : b.reads) {
        bool gather = false;
        const int64_t a = address_step(*r, geom(b.buf), vloop, gather);
        (gather ? gather_n : a == 0 ? bcast : std::abs(a) == 1 ? dense : strided) += 1;
      }
    const double per = points * vec_frac / lanes;
    row[L.a_vec_loads_dense] = lg(dense * per);
    row[L.a_vec_loads_broadcast] = lg(bcast * per);
    row[L.a_vec_loads_strided] = lg(strided * per);
    row[L.a_vec_loads_gather] = lg(gather_n * per);
  }

  // Placement and loops.
  row[L.a_root] = fs.placement == Placement::Root;
  row[L.a_compute_at] = fs.placement == Placement::ComputeAt;
  const StageSchedule* s0 = s.find(si.name, 0);
  row[L.a_store_outside] = s0 && (s0->store_root || !s0->store_at.empty());
  row[L.a_executions] = lg(E);
  row[L.a_points] = lg(points);
  row[L.a_recompute] = static_cast<float>(points / res.needed);
  row[L.a_loops] = static_cast<float>(n);
  int kp = -1;
  int64_t unroll = 0;
  for (int k = 0; k < n; k++) {
    if (k < kLevels) {
      row[L.a_loop_extent[k]] = lg(static_cast<double>(nest[k].extent));
      row[L.a_loop_reduction[k]] = nest[k].reduction;
    }
    if (nest[k].kind == LoopKind::Parallel) kp = k;
    if (nest[k].kind == LoopKind::Unrolled) unroll = std::max(unroll, nest[k].extent);
  }
  row[L.a_parallel_depth] = static_cast<float>(kp + 1);
  row[L.a_unroll_extent] = static_cast<float>(unroll);
  row[L.a_vector_lanes] = static_cast<float>(lanes);
  row[L.a_vec_frac] = static_cast<float>(vec_frac);

  // Per nest level (the whole of loop k): points, accesses, unique footprint per buffer.
  const int nl = std::max(n, 1);
  const bool ctx = di == p.anchor;
  std::vector<double> lv_points(nl), lv_rbytes(nl), lv_wbytes(nl), lv_rlines(nl), lv_wlines(nl), lv_unique(nl);
  std::vector<std::vector<Foot>> feet(bufs.size(), std::vector<Foot>(nl));
  std::vector<Foot> wfeet(nl);
  double read_bytes_pp = 0;
  for (const Buf& b : bufs) read_bytes_pp += static_cast<double>(b.reads.size()) * geom(b.buf).bytes;
  for (int k = 0; k < nl; k++) {
    const std::vector<int64_t> cover = whole_loop_cover(nest, static_cast<size_t>(k), orig);
    double pk = 1;
    for (int64_t c : cover) pk *= static_cast<double>(c);
    lv_points[k] = pk;
    lv_rbytes[k] = pk * read_bytes_pp;
    lv_wbytes[k] = pk * stores_pp * own.bytes;
    double self_elems = 0;  // the accumulator's reads and the store touch the same bytes: count them once
    for (size_t b = 0; b < bufs.size(); b++) {
      feet[b][k] = footprint(bufs[b].reads, geom(bufs[b].buf), cover);
      lv_rlines[k] += feet[b][k].lines;
      if (bufs[b].buf == info.stage) self_elems = feet[b][k].elems;
      else lv_unique[k] += feet[b][k].elems * geom(bufs[b].buf).bytes;
    }
    wfeet[k] = footprint(store, own, cover);
    lv_wlines[k] = wfeet[k].lines;
    lv_unique[k] += std::max(self_elems, wfeet[k].elems) * own.bytes;
  }
  auto put_level = [&](const LevelIdx& li, int k, double scale) {
    row[li.points] = lg(lv_points[k] * scale);
    row[li.read_bytes] = lg(lv_rbytes[k] * scale);
    row[li.write_bytes] = lg(lv_wbytes[k] * scale);
    row[li.read_lines] = lg(lv_rlines[k] * scale);
    row[li.write_lines] = lg(lv_wlines[k] * scale);
    row[li.reused_bytes] = lg((lv_rbytes[k] + lv_wbytes[k] - lv_unique[k]) * scale);
    const double lines = lv_rlines[k] + lv_wlines[k];
    row[li.intensity] = static_cast<float>(float_pp * lv_points[k] / std::max(1.0, lines * kLineBytes));
  };
  for (int k = 0; k < kLevels; k++) put_level(L.level[k], std::min(k, nl - 1), 1);
  put_level(L.level[kLevels], nl - 1, E);
  res.read_bytes = lv_rbytes[nl - 1] * E;
  res.write_bytes = lv_wbytes[nl - 1] * E;
  res.read_lines = lv_rlines[nl - 1] * E;
  res.write_lines = lv_wlines[nl - 1] * E;

  // Reuse distance: bytes touched by one iteration of the innermost loop the accesses do not
  // depend on (the loop that carries the reuse); 0 when no loop does.
  const std::vector<int64_t> ones(nloops, 1);
  double point_bytes = 0;
  for (size_t b = 0; b < bufs.size(); b++) point_bytes += footprint(bufs[b].reads, geom(bufs[b].buf), ones).lines;
  point_bytes = (point_bytes + 1) * kLineBytes;
  auto reuse_distance = [&](const std::vector<const Read*>& rs) {
    for (int k = 0; k < n; k++)
      if (nest[k].extent > 1 && invariant(rs, nest[k].orig))
        return k == 0 ? point_bytes : (lv_rlines[k - 1] + lv_wlines[k - 1]) * kLineBytes;
    return 0.0;
  };

  // Producer slots: the buffers read most (the accumulator is the output's).
  std::vector<int> order;
  for (size_t b = 0; b < bufs.size(); b++)
    if (bufs[b].buf != info.stage) order.push_back(static_cast<int>(b));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bufs[a].reads.size() > bufs[b].reads.size(); });
  const int inner = n > 0 ? nest[0].orig : 0;
  for (int q = 0; q < kProducers && q < static_cast<int>(order.size()); q++) {
    const Buf& b = bufs[order[q]];
    const AProducerIdx& pi = L.a_prod[q];
    bool gather = false;
    const int64_t a = n > 0 ? address_step(*b.reads[0], geom(b.buf), inner, gather) : 0;
    row[pi.present] = 1;
    row[pi.loads] = static_cast<float>(b.reads.size());
    row[pi.stride_inner] = lg(static_cast<double>(std::abs(a)));
    row[pi.dense] = !gather && std::abs(a) == 1;
    row[pi.broadcast] = !gather && a == 0;
    row[pi.gather] = gather;
    row[pi.reuse_distance] = lg(reuse_distance(b.reads));
    row[pi.root_lines] = lg(feet[order[q]][nl - 1].lines * E);
    row[pi.local] = b.buf < p.num_stages && funcs[b.buf].local;
  }
  bool sg = false;
  const int64_t astore = n > 0 ? address_step(info.store, own, inner, sg) : 0;
  row[L.a_out_stride_inner] = lg(static_cast<double>(std::abs(astore)));
  row[L.a_out_reuse_distance] = lg(reuse_distance(store));

  // Parallelism: tasks of this nest's parallel loop, or of a consumer loop around it.
  double tasks = fs.enclosing_tasks;
  if (kp >= 0) {
    double outer = E;
    for (int k = kp + 1; k < n; k++) outer *= static_cast<double>(nest[k].extent);
    const double own_tasks = static_cast<double>(nest[kp].extent);
    res.launches = outer;
    if (tasks == 0) tasks = own_tasks;
    // Neighbouring tasks write into one cache line (their stores start less than a line apart):
    // false sharing at each task boundary.
    bool g = false;
    const int po = nest[kp].orig;
    const int64_t a = std::abs(address_step(info.store, own, po, g)) * nest[kp].inside[po];
    if (!g && a > 0 && a * own.bytes < kLineBytes) res.false_sharing = outer * own_tasks;
  }
  const double cores = static_cast<double>(p.cores);
  res.core_util = tasks > 0 ? tasks / (std::ceil(tasks / cores) * cores) : 1.0 / cores;
  row[L.a_tasks] = lg(tasks);
  row[L.a_core_util] = static_cast<float>(res.core_util);
  row[L.a_launches] = lg(res.launches);
  row[L.a_false_sharing] = lg(res.false_sharing);

  // The Func's allocation, on its pure definition's row.
  if (info.def == 0 && fs.allocs > 0) {
    const double bytes = static_cast<double>(fs.alloc_elems) * own.bytes * st.num_values;
    const bool stack = fs.local && bytes < kStackLimit;
    row[L.a_alloc_bytes] = lg(bytes);
    row[L.a_allocs] = lg(fs.allocs);
    row[L.a_heap] = !stack;
    row[L.a_stack] = stack;
    row[L.a_page_faults] = stack ? 0 : lg(std::ceil(bytes / 4096) * fs.allocs);
  }

  // Directives beyond the loops. A prefetch brings what one iteration of its `from` loop reads of
  // the buffer (the whole of the loop just inside it) `offset` iterations ahead.
  if (ss && !ss->prefetches.empty()) {
    const auto& ins = p.space->view().inputs;
    double lines = 0;
    int64_t ahead = 0;
    for (const PrefetchDirective& pd : ss->prefetches) {
      ahead = std::max(ahead, pd.offset);
      const int k = find_nest_loop(nest, pd.from);
      for (size_t b = 0; b < bufs.size(); b++) {
        const int in = bufs[b].buf - p.num_stages;
        if (in < 0 || static_cast<size_t>(in) >= ins.size() || ins[static_cast<size_t>(in)].name != pd.buffer) continue;
        lines += k > 0 ? feet[b][std::min(k - 1, nl - 1)].lines : 1;
      }
    }
    row[L.a_prefetches] = static_cast<float>(ss->prefetches.size());
    row[L.a_prefetch_ahead] = lg(static_cast<double>(ahead));
    row[L.a_prefetch_lines] = lg(lines);
  }
  if (ss) row[L.a_rfactor] = static_cast<float>(ss->rfactor.size());
  if (info.def == 0 && s0) {
    row[L.a_task_prefetches] = static_cast<float>(s0->task_prefetches.size());
    row[L.a_staged_copies] = static_cast<float>(s0->staged_for.size());
  }

  // Derived.
  const double unique_root = (lv_rlines[nl - 1] + lv_wlines[nl - 1]) * kLineBytes * E;
  row[L.d_vec_ops_per_byte] = static_cast<float>((res.vec_float + res.vec_int) / std::max(1.0, unique_root));
  row[L.d_loads_per_op] = static_cast<float>(loads_pp / std::max(1.0, float_pp + int_pp));
  row[L.d_bytes_per_line] = static_cast<float>((res.read_bytes + res.write_bytes) / std::max(1.0, unique_root / kLineBytes));
  row[L.d_ops_per_task] = lg((float_pp + int_pp) * points / std::max(1.0, tasks));

  // The anchor's context: per buffer slot (3 producers, then the output) and nest level.
  if (ctx) {
    res.level_points = lv_points;
    res.bufs.assign(kProducers + 1, BufLevels{std::vector<double>(nl, 0), std::vector<double>(nl, 0), 0});
    for (int q = 0; q < kProducers && q < static_cast<int>(order.size()); q++) res.bufs[q].elem_bytes = geom(bufs[order[q]].buf).bytes;
    res.bufs[kProducers].elem_bytes = own.bytes;
    for (int q = 0; q < kProducers && q < static_cast<int>(order.size()); q++)
      for (int k = 0; k < nl; k++) {
        res.bufs[q].touches[k] = lv_points[k] * static_cast<double>(bufs[order[q]].reads.size());
        res.bufs[q].elems[k] = feet[order[q]][k].elems;
      }
    double self = 0;
    for (const Buf& b : bufs)
      if (b.buf == info.stage) self = static_cast<double>(b.reads.size());
    for (int k = 0; k < nl; k++) {
      res.bufs[kProducers].touches[k] = lv_points[k] * (stores_pp + self);
      res.bufs[kProducers].elems[k] = wfeet[k].elems;
    }
  }
  return res;
}

}  // namespace ts::fdetail
