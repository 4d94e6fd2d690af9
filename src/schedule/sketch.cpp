// Sketch: matching the register-blocked reduction rule on a PipelineView, drawing and mutating
// its knobs, and building the schedule they stand for. See sketch.h.
#include "schedule/sketch.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "graph/error.h"
#include "schedule/schedule_space.h"

namespace ts {

namespace {

constexpr int kMaxVectors = 4;        // vectors along x per register tile
constexpr int kMaxRowTile = 4;        // rows per register tile
constexpr int kMaxAccumulators = 32;  // vector accumulators of a tile (AVX-512 has 32 registers)
constexpr int kMinChannelAccumulators = 8;  // channel vectors: smallest register tile drawn
constexpr int kDefaultReuse = 4;      // the default rule's reuse tile
constexpr int64_t kDefaultTasks = 8;  // the default rule fuses outer loops until this many tasks

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The loop of `loops` (a definition's, PipelineView order) named n; -1 when absent.
int loop_index(const Definition& d, const std::string& n) {
  for (size_t k = 0; k < d.loops.size(); k++)
    if (d.loops[k].name == n) return static_cast<int>(k);
  return -1;
}

}  // namespace

bool Sketch::classify_stages(const ScheduleSpace& space, const Stage& o, const Stage& r) {
  const PipelineView& v = space.view();
  std::map<std::string, size_t> decision;  // Halide name -> decision index
  for (size_t i = 0; i < space.decisions().size(); i++) decision[space.decisions()[i]] = i;
  // The chain: stages reached from o through producers without passing through r; every one
  // read only inside the chain (or by o).
  std::set<std::string> chain{o.name};
  std::vector<std::string> pending{o.name};
  while (!pending.empty()) {
    const Stage* st = v.stage(pending.back());
    pending.pop_back();
    for (const auto& p : st->producers) {
      const Stage* ps = v.stage(p);
      if (!ps || ps == &r || chain.count(p)) continue;
      chain.insert(p);
      pending.push_back(p);
    }
  }
  for (const auto& c : r.consumers)
    if (!chain.count(c)) return false;
  for (const auto& st : v.stages) {
    if (&st == &r || st.name == o.name) continue;
    const size_t i = decision.at(st.name);
    const bool read_by_r = std::count(st.consumers.begin(), st.consumers.end(), r.name) > 0;
    if (st.is_rename) inlined_.push_back(i);
    else if (read_by_r) root_producers_.push_back(i);
    else if (chain.count(st.name)) {
      for (const auto& c : st.consumers)
        if (!chain.count(c)) return false;
      chain_.push_back(i);
    } else {
      inlined_.push_back(i);
    }
  }
  out_ = decision.at(o.name);
  red_ = decision.at(r.name);
  return true;
}

void Sketch::find_reuse_loops(const PipelineView& v, const Stage& r) {
  const Definition& upd = r.definitions[1];
  // The reuse loop: no load of a producer that depends on x depends on it.
  const int x = loop_index(upd, red_dims_[0]);
  for (size_t k = 1; k < red_dims_.size(); k++) {
    const int lk = loop_index(upd, red_dims_[k]);
    if (lk < 0 || extents_[k] < 2) continue;
    bool absent = true;
    for (const Edge* e : v.edges_into(r.name))
      for (const auto& a : e->accesses) {
        if (a.definition != 1) continue;
        bool on_x = false, on_k = false;
        for (const auto& d : a.dims) {
          on_x |= std::count(d.depends_on.begin(), d.depends_on.end(), x) > 0;
          on_k |= std::count(d.depends_on.begin(), d.depends_on.end(), lk) > 0;
        }
        if (on_x && on_k) absent = false;
      }
    if (absent && (u_ < 0 || extents_[k] > extents_[u_])) u_ = static_cast<int>(k);
  }
  if (extents_.size() > 1 && u_ != 1 && extents_[1] >= 2) y_ = 1;
}

void Sketch::find_channel_vectors(const ScheduleSpace& space, const Stage& r) {
  const PipelineView& v = space.view();
  const Definition& upd = r.definitions[1];
  // Channel vectors: a pure loop c (not x) that alone indexes a dim d >= 1 of a packable input's
  // rename with stride 1 (a conv's output channel indexing its weight's O, depthwise included).
  // Prefer the reuse loop (a regular conv's channels).
  // Index l alone with stride 1; loops of extent 1 (a depthwise conv's one input channel per
  // group) do not count.
  auto indexes = [&upd](const AccessDim& ad, int l) {
    if (!ad.affine || ad.coeffs[static_cast<size_t>(l)] != 1) return false;
    for (int j : ad.depends_on)
      if (j != l && upd.loops[static_cast<size_t>(j)].extent != 1) return false;
    return true;
  };
  std::vector<size_t> channel_candidates;
  if (u_ >= 0) channel_candidates.push_back(static_cast<size_t>(u_));
  for (size_t k = 1; k < red_dims_.size(); k++)
    if (static_cast<int>(k) != u_) channel_candidates.push_back(k);
  for (size_t k : channel_candidates) {
    const int lc = loop_index(upd, red_dims_[k]);
    if (lc < 0 || packed_ || extents_[k] < 2) continue;
    for (const Edge* e : v.edges_into(r.name)) {
      const Stage* w = e->producer_is_input ? nullptr : v.stage(e->producer);
      if (packed_ || !w || !w->is_rename || !space.options().packable_inputs.count(w->rename_of)) continue;
      for (const auto& a : e->accesses)
        for (size_t d = 1; a.definition == 1 && d < a.dims.size() && !packed_; d++)
          if (indexes(a.dims[d], lc)) {
            packed_ = InputLayout{w->rename_of, static_cast<int>(d), 0};
            packed_extent_ = w->dims[d].extent;
            cu_ = static_cast<int>(k);
          }
    }
  }
  if (!packed_) return;
  // Root producers read along c (a depthwise conv's padded input) are stored and vectorized
  // along it, so the lanes load densely.
  const int lc = loop_index(upd, red_dims_[static_cast<size_t>(cu_)]);
  for (size_t i : root_producers_)
    for (const Edge* e : v.edges_into(r.name)) {
      if (e->producer != space.decisions()[i]) continue;
      for (const auto& a : e->accesses)
        for (size_t d = 1; a.definition == 1 && d < a.dims.size(); d++)
          if (indexes(a.dims[d], lc) && std::none_of(channel_producers_.begin(), channel_producers_.end(),
                                                     [&](const auto& p) { return p.first == i; }))
            channel_producers_.push_back({i, static_cast<int>(d)});
    }
}

std::shared_ptr<const Sketch> Sketch::match(const ScheduleSpace& space) {
  const PipelineView& v = space.view();
  if (v.outputs.size() != 1) return nullptr;
  const Stage* o = v.stage(v.outputs[0]);
  if (!o || o->definitions.size() != 1) return nullptr;
  // Exactly one reduction, with one update.
  const Stage* r = nullptr;
  for (const auto& st : v.stages) {
    if (st.definitions.size() == 1) continue;
    if (r || st.definitions.size() != 2) return nullptr;
    r = &st;
  }
  if (!r || r->dims.size() != o->dims.size() || r->dims.empty()) return nullptr;
  auto s = std::make_shared<Sketch>();
  for (size_t k = 0; k < o->dims.size(); k++) {
    if (o->dims[k].extent <= 0 || o->dims[k].extent != r->dims[k].extent) return nullptr;
    s->out_dims_.push_back(o->dims[k].name);
    s->red_dims_.push_back(r->dims[k].name);
    s->extents_.push_back(o->dims[k].extent);
  }
  if (!s->classify_stages(space, *o, *r)) return nullptr;
  s->out_name_ = space.schedule_name(s->out_);
  s->red_name_ = space.schedule_name(s->red_);
  for (const auto& l : r->definitions[1].loops)
    if (l.reduction) s->rvars_.push_back(l.name);
  if (loop_index(r->definitions[1], s->red_dims_[0]) < 0) return nullptr;
  s->find_reuse_loops(v, *r);
  s->find_channel_vectors(space, *r);
  s->native_ = std::max(1, space.options().vector_bytes / std::max(1, o->bytes));
  s->max_unroll_ = space.options().max_unroll;
  s->max_parallel_ = space.options().max_parallel_loops;
  for (size_t k = 0; k < s->out_dims_.size(); k++)
    (s->extents_[k] > 1 ? s->outer_ : s->fixed_outer_).push_back(s->out_dims_[k]);
  std::reverse(s->fixed_outer_.begin(), s->fixed_outer_.end());  // outermost first
  return s;
}

std::vector<Sketch::Tile> Sketch::tiles() const {
  std::vector<Tile> out;
  for (bool ch : {false, true}) {
    if (ch && !packed_) continue;
    const int vp = vector_pos(ch), rp = reuse_pos(ch);
    const int64_t ey = y_ >= 0 && y_ != vp ? extents_[static_cast<size_t>(y_)] : 1;  // the row loop may be c
    const int64_t ev = extents_[static_cast<size_t>(vp)], er = rp >= 0 ? extents_[static_cast<size_t>(rp)] : 1;
    std::vector<int> widths;
    if (!ch) widths.push_back(0);
    for (int w : {native_ / 4, native_ / 2, native_})
      if (w >= 2 && w <= ev && (!ch || packed_extent_ % w == 0)) widths.push_back(w);
    // Channel vectors exist to fill the lanes: only the widest width, and register tiles of at
    // least kMinChannelAccumulators (fewer leave the FMA units waiting on their latency).
    if (ch && widths.size() > 1) widths.erase(widths.begin(), widths.end() - 1);
    for (int v : widths)
      for (int xv = 1; xv <= (v ? kMaxVectors : 1); xv++) {
        if (v * xv > ev) continue;
        for (int u = 1; u <= std::min<int64_t>(er, max_unroll_); u++)
          for (int y = 1; y <= std::min<int64_t>(ey, kMaxRowTile); y++) {
            if (unroll_bits(xv) + unroll_bits(u) + unroll_bits(y) > kMaxUnrollBits) continue;
            if (v && xv * u * y > kMaxAccumulators) continue;
            if (ch && xv * u * y < std::min<int64_t>(kMinChannelAccumulators, ev / v * er * ey)) continue;
            out.push_back({ch, v, xv, u, y});
          }
      }
  }
  return out;
}

int64_t Sketch::tasks(const SketchKnobs& k, int loops) const {
  int64_t t = 1;
  const int nf = static_cast<int>(fixed_outer_.size());
  for (int j = nf; j < loops && j - nf < static_cast<int>(k.outer_order.size()); j++) {
    const std::string& n = outer_[static_cast<size_t>(k.outer_order[static_cast<size_t>(j - nf)])];
    const int pos = static_cast<int>(std::find(out_dims_.begin(), out_dims_.end(), n) - out_dims_.begin());
    int64_t tile = 1;
    if (pos == vector_pos(k.channel_vectors)) tile = k.vector_width > 0 ? int64_t{k.vector_width} * k.vectors : 1;
    else if (pos == reuse_pos(k.channel_vectors)) tile = k.reuse_tile;
    else if (pos == y_) tile = k.row_tile;
    t *= ceil_div(extents_[static_cast<size_t>(pos)], tile);
  }
  return t;
}

namespace {

// Parallel depths (outermost loops fused) with at least two tasks.
template <typename TasksFn>
std::vector<int> parallel_depths(int loops, int max_parallel, TasksFn tasks) {
  std::vector<int> out;
  for (int p = 1; p <= std::min(loops, max_parallel); p++)
    if (tasks(p) >= 2) out.push_back(p);
  return out;
}

}  // namespace

SketchKnobs Sketch::default_knobs() const {
  SketchKnobs k;
  for (int w : {native_, native_ / 2, native_ / 4})
    if (w >= 4 && w <= extents_[0] && k.vector_width == 0) k.vector_width = w;
  if (u_ >= 0) k.reuse_tile = static_cast<int>(std::min<int64_t>(kDefaultReuse, extents_[static_cast<size_t>(u_)]));
  for (size_t j = outer_.size(); j-- > 0;) k.outer_order.push_back(static_cast<int>(j));  // dims order, x innermost
  const int loops = static_cast<int>(fixed_outer_.size() + outer_.size());
  for (int p = 1; p <= std::min(loops, max_parallel_); p++) {
    if (tasks(k, p) >= 2) k.parallel_loops = p;
    if (tasks(k, p) >= kDefaultTasks) break;
  }
  return k;
}

SketchKnobs Sketch::draw(std::mt19937_64& rng) const {
  SketchKnobs k;
  const std::vector<Tile> ts = tiles();
  const Tile t = ts[std::uniform_int_distribution<size_t>(0, ts.size() - 1)(rng)];
  k.channel_vectors = t.ch, k.vector_width = t.v, k.vectors = t.xv, k.reuse_tile = t.u, k.row_tile = t.y;
  for (size_t j = 0; j < outer_.size(); j++) k.outer_order.push_back(static_cast<int>(j));
  std::shuffle(k.outer_order.begin(), k.outer_order.end(), rng);
  const auto depths = parallel_depths(static_cast<int>(fixed_outer_.size() + outer_.size()), max_parallel_,
                                      [&](int p) { return tasks(k, p); });
  if (!depths.empty()) k.parallel_loops = depths[std::uniform_int_distribution<size_t>(0, depths.size() - 1)(rng)];
  return k;
}

SketchKnobs Sketch::mutate(const SketchKnobs& k, std::mt19937_64& rng) const {
  const int loops = static_cast<int>(fixed_outer_.size() + outer_.size());
  auto fix_parallel = [&](SketchKnobs& m) {
    const auto depths = parallel_depths(loops, max_parallel_, [&](int p) { return tasks(m, p); });
    if (std::find(depths.begin(), depths.end(), m.parallel_loops) == depths.end())
      m.parallel_loops = depths.empty() ? 0 : depths[std::uniform_int_distribution<size_t>(0, depths.size() - 1)(rng)];
  };
  // Alternatives per kind of knob: tiles differing in one size, adjacent swaps, depths.
  std::vector<SketchKnobs> tile_alts, order_alts, par_alts;
  for (const Tile& t : tiles()) {
    const int diff = (t.ch != k.channel_vectors) + (t.v != k.vector_width) + (t.xv != k.vectors) +
                     (t.u != k.reuse_tile) + (t.y != k.row_tile);
    if (diff != 1) continue;
    SketchKnobs m = k;
    m.channel_vectors = t.ch, m.vector_width = t.v, m.vectors = t.xv, m.reuse_tile = t.u, m.row_tile = t.y;
    fix_parallel(m);
    tile_alts.push_back(m);
  }
  for (size_t j = 0; j + 1 < k.outer_order.size(); j++) {
    SketchKnobs m = k;
    std::swap(m.outer_order[j], m.outer_order[j + 1]);
    fix_parallel(m);
    order_alts.push_back(m);
  }
  for (int p : parallel_depths(loops, max_parallel_, [&](int p) { return tasks(k, p); }))
    if (p != k.parallel_loops) {
      SketchKnobs m = k;
      m.parallel_loops = p;
      par_alts.push_back(m);
    }
  std::vector<const std::vector<SketchKnobs>*> kinds;
  for (const auto* a : {&tile_alts, &order_alts, &par_alts})
    if (!a->empty()) kinds.push_back(a);
  if (kinds.empty()) return k;
  const auto& a = *kinds[std::uniform_int_distribution<size_t>(0, kinds.size() - 1)(rng)];
  return a[std::uniform_int_distribution<size_t>(0, a.size() - 1)(rng)];
}

void Sketch::check_knobs(const ScheduleSpace& space, const SketchKnobs& k) const {
  const Tile t{k.channel_vectors, k.vector_width, k.vectors, k.reuse_tile, k.row_tile};
  bool known = false;
  for (const Tile& c : tiles()) known |= c.ch == t.ch && c.v == t.v && c.xv == t.xv && c.u == t.u && c.y == t.y;
  std::vector<int> perm = k.outer_order;
  std::sort(perm.begin(), perm.end());
  for (size_t j = 0; j < perm.size(); j++) known &= perm[j] == static_cast<int>(j);
  known &= perm.size() == outer_.size();
  const int loops = static_cast<int>(fixed_outer_.size() + outer_.size());
  known &= k.parallel_loops >= 0 && k.parallel_loops <= std::min(loops, max_parallel_);
  if (!known)
    throw Error(fmt::format("sketch of '{}': knobs out of range (tile {}x{} lanes, reuse {}, rows {}, parallel {})",
                            space.schedule_name(out_), k.vectors, k.vector_width, k.reuse_tile, k.row_tile, k.parallel_loops));
}

StageSchedule Sketch::output_stage(const ScheduleSpace& space, const SketchKnobs& k, std::vector<std::string>& outer) const {
  const int vp = vector_pos(k.channel_vectors), rp = reuse_pos(k.channel_vectors);
  // o: the register tile (innermost first), then the outer loops.
  StageSchedule os;
  os.func = space.schedule_name(out_);
  os.placement = Placement::Root;
  std::vector<std::string> tile_loops;
  std::map<std::string, std::string> outer_level;  // pure loop -> its outermost level
  for (const auto& d : out_dims_) outer_level[d] = d;
  auto tile = [&](int pos, std::vector<int64_t> factors, bool vector) {
    LoopTiling lt;
    lt.loop = out_dims_[static_cast<size_t>(pos)];
    lt.factors = std::move(factors);
    const auto lv = lt.level_names();
    for (size_t j = 0; j + 1 < lv.size(); j++) {
      tile_loops.push_back(lv[j]);
      if (!(vector && j == 0)) os.unroll.push_back(lv[j]);
    }
    outer_level[lt.loop] = lv.back();
    os.tiling.push_back(lt);
    if (vector) {
      os.vectorize = lv[0];
      os.vector_width = k.vector_width;
    }
  };
  if (k.vector_width > 0) tile(vp, k.vectors > 1 ? std::vector<int64_t>{k.vector_width, k.vectors} : std::vector<int64_t>{k.vector_width}, true);
  if (rp >= 0 && k.reuse_tile > 1) tile(rp, {k.reuse_tile}, false);
  if (y_ >= 0 && k.row_tile > 1) tile(y_, {k.row_tile}, false);
  for (const auto& d : fixed_outer_) outer.push_back(outer_level[d]);
  for (int j : k.outer_order) outer.push_back(outer_level[outer_[static_cast<size_t>(j)]]);
  os.order = tile_loops;
  os.order.insert(os.order.end(), outer.rbegin(), outer.rend());
  if (k.parallel_loops > 0) {
    os.parallel = outer[static_cast<size_t>(k.parallel_loops - 1)];
    for (int j = k.parallel_loops - 2; j >= 0; j--) os.parallel_fused.push_back(outer[static_cast<size_t>(j)]);
  }
  return os;
}

void Sketch::add_reduction(const ScheduleSpace& space, const SketchKnobs& k, const StageSchedule& os,
                           const std::vector<std::string>& outer, Schedule& s) const {
  const int vp = vector_pos(k.channel_vectors), rp = reuse_pos(k.channel_vectors);
  // r at the innermost outer loop: its region is the register tile.
  StageSchedule r0;
  r0.func = space.schedule_name(red_);
  r0.placement = Placement::ComputeAt;
  const bool all_fused = k.parallel_loops == static_cast<int>(outer.size());
  r0.compute_at = {os.func, 0, all_fused ? os.parallel_loop_name() : outer.back()};
  if (k.channel_vectors) {
    // Accumulators dense along the lanes (one of the space's storage orders), the weight packed.
    r0.storage_order = {red_dims_[static_cast<size_t>(vp)]};
    for (size_t j = 0; j < red_dims_.size(); j++)
      if (static_cast<int>(j) != vp) r0.storage_order.push_back(red_dims_[j]);
    InputLayout l = *packed_;
    l.block = k.vector_width;
    s.layouts.push_back(l);
  }
  s.set(r0);
  const std::vector<int64_t> region = space.region(s, red_);
  for (int def = 0; def < 2; def++) {
    StageSchedule ss = def == 0 ? r0 : StageSchedule{};
    ss.func = r0.func;
    ss.definition = def;
    std::vector<std::string> inner, rest;
    std::set<int> in_tile;
    if (k.vector_width > 0) {
      const std::string& x = red_dims_[static_cast<size_t>(vp)];
      if (region[static_cast<size_t>(vp)] > k.vector_width) {
        LoopTiling lt;
        lt.loop = x;
        lt.factors = {k.vector_width};
        const auto lv = lt.level_names();
        ss.tiling.push_back(lt);
        inner = {lv[0], lv[1]};
        ss.unroll.push_back(lv[1]);
        ss.vectorize = lv[0];
      } else {
        inner = {x};
        ss.vectorize = x;
      }
      ss.vector_width = k.vector_width;
      in_tile.insert(vp);
    }
    for (auto [pos, size] : {std::pair{rp, k.reuse_tile}, std::pair{y_, k.row_tile}})
      if (pos >= 0 && size > 1) {
        inner.push_back(red_dims_[static_cast<size_t>(pos)]);
        ss.unroll.push_back(red_dims_[static_cast<size_t>(pos)]);
        in_tile.insert(pos);
      }
    for (size_t pos = 0; pos < red_dims_.size(); pos++)
      if (!in_tile.count(static_cast<int>(pos))) rest.push_back(red_dims_[pos]);
    ss.order = inner;
    if (def == 1) ss.order.insert(ss.order.end(), rvars_.begin(), rvars_.end());
    ss.order.insert(ss.order.end(), rest.begin(), rest.end());
    s.set(ss);
  }
}

Schedule Sketch::build(const ScheduleSpace& space, const SketchKnobs& k) const {
  check_knobs(space, k);
  Schedule s;
  auto inline_stage = [&](size_t i) {
    StageSchedule ss;
    ss.func = space.schedule_name(i);
    ss.placement = Placement::Inline;
    s.set(ss);
  };
  for (size_t i : chain_) inline_stage(i);
  for (size_t i : inlined_) inline_stage(i);
  for (size_t i : root_producers_) {
    int inner = 0;  // the dim stored innermost and vectorized
    for (const auto& [p, d] : channel_producers_)
      if (p == i && k.channel_vectors) inner = d;
    s.set(root_default(space, i, inner));
  }

  // o: the register tile (innermost first), then the outer loops; r inside it.
  std::vector<std::string> outer;  // outermost first
  const StageSchedule os = output_stage(space, k, outer);
  s.set(os);
  add_reduction(space, k, os, outer, s);
  return s;
}

StageSchedule Sketch::root_default(const ScheduleSpace& space, size_t i, int inner) const {
  const Stage& st = *space.view().stage(space.decisions()[i]);
  StageSchedule ss;
  ss.func = space.schedule_name(i);
  ss.placement = Placement::Root;
  const int native = std::max(1, space.options().vector_bytes / std::max(1, st.bytes));
  std::vector<const Loop*> loops;  // innermost first: dim `inner`, then the others in order
  if (!st.dims.empty()) loops.push_back(&st.dims[static_cast<size_t>(inner)]);
  for (size_t j = 0; j < st.dims.size(); j++)
    if (static_cast<int>(j) != inner) loops.push_back(&st.dims[j]);
  for (const Loop* l : loops) ss.order.push_back(l->name);
  if (inner != 0) ss.storage_order = ss.order;  // one of the space's storage orders
  if (!loops.empty()) {
    for (int w : {native, native / 2, native / 4})
      if (w >= 2 && w <= loops[0]->extent && ss.vector_width == 0) ss.vector_width = w;
    if (ss.vector_width) ss.vectorize = loops[0]->name;
  }
  // Parallel over the outer loops (not the vectorized innermost), outermost first, until there
  // are enough tasks.
  std::vector<std::string> group;
  int64_t t = 1;
  for (size_t j = loops.size(); j-- > 1 && static_cast<int>(group.size()) < max_parallel_ && t < kDefaultTasks;) {
    group.push_back(loops[j]->name);
    t *= std::max<int64_t>(1, loops[j]->extent);
  }
  if (t >= 2) {
    ss.parallel = group.back();
    for (size_t j = group.size() - 1; j-- > 0;) ss.parallel_fused.push_back(group[j]);
  }
  return ss;
}

std::optional<SketchKnobs> Sketch::knobs_of(const ScheduleSpace& space, const Schedule& s) const {
  const StageSchedule* os = s.find(space.schedule_name(out_), 0);
  if (!os) return std::nullopt;
  SketchKnobs k;
  k.vector_width = os->vector_width;
  if (cu_ >= 0 && !os->vectorize.empty()) {
    const std::string& u = out_dims_[static_cast<size_t>(cu_)];
    k.channel_vectors = os->vectorize == u;
    for (const auto& t : os->tiling)
      if (t.loop == u) k.channel_vectors |= t.level_names()[0] == os->vectorize;
  }
  std::set<std::string> tile_levels;
  std::map<std::string, std::string> base_of;  // outermost level -> pure loop
  for (const auto& d : out_dims_) base_of[d] = d;
  for (const auto& t : os->tiling) {
    const auto lv = t.level_names();
    base_of.erase(t.loop);
    base_of[lv.back()] = t.loop;
    const int pos = static_cast<int>(std::find(out_dims_.begin(), out_dims_.end(), t.loop) - out_dims_.begin());
    if (pos == vector_pos(k.channel_vectors)) k.vectors = t.factors.size() == 2 ? static_cast<int>(t.factors[1]) : 1;
    else if (pos == reuse_pos(k.channel_vectors)) k.reuse_tile = static_cast<int>(t.factors[0]);
    else if (pos == y_) k.row_tile = static_cast<int>(t.factors[0]);
  }
  for (auto it = os->order.rbegin(); it != os->order.rend(); ++it) {
    auto b = base_of.find(*it);
    if (b == base_of.end()) continue;
    auto j = std::find(outer_.begin(), outer_.end(), b->second);
    if (j != outer_.end()) k.outer_order.push_back(static_cast<int>(j - outer_.begin()));
  }
  k.parallel_loops = os->parallel.empty() ? 0 : 1 + static_cast<int>(os->parallel_fused.size());
  try {
    if (build(space, k) == s) return k;
  } catch (const Error&) {
  }
  return std::nullopt;
}

std::string Sketch::describe() const {
  return fmt::format("register-blocked reduction: {} over {} (vector loop {}, reuse loop {}, row loop {}, {} reduction loops{})",
                     out_name_, red_name_, out_dims_[0], u_ >= 0 ? out_dims_[static_cast<size_t>(u_)] : "none",
                     y_ >= 0 ? out_dims_[static_cast<size_t>(y_)] : "none", rvars_.size(),
                     packed_ ? fmt::format("; channel vectors along {} with {} packed along dim {}",
                                           out_dims_[static_cast<size_t>(cu_)], packed_->input, packed_->dim)
                             : "");
}

}  // namespace ts
