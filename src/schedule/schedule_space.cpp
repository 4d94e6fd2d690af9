// ScheduleSpace: placement candidates from the consumers' nests, and per definition the
// counting tables (loop options x order interleavings) that give exact branching factors and
// uniform draws. See schedule_space.h for the space itself.
#include "schedule/schedule_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "graph/error.h"
#include "schedule/loop_nest.h"
#include "schedule/rule_sketch.h"
#include "schedule/schedule_space_internal.h"

namespace ts {

namespace {


// n! for 0 <= n <= 170 (the largest a double holds), from a table: the counting loops call it
// millions of times.
double factorial(int n) {
  static const std::array<double, 171> table = [] {
    std::array<double, 171> t{};
    t[0] = 1;
    for (size_t k = 1; k < t.size(); k++) t[k] = t[k - 1] * static_cast<double>(k);
    return t;
  }();
  return table[static_cast<size_t>(std::clamp(n, 0, 170))];
}

// Up to `limit` values of a sorted list, spread evenly and keeping both ends.
std::vector<int64_t> thin(const std::vector<int64_t>& v, int limit) {
  if (static_cast<int>(v.size()) <= limit || limit < 2) return v;
  std::vector<int64_t> out;
  for (int i = 0; i < limit; i++) out.push_back(v[static_cast<size_t>(std::llround(i * (v.size() - 1.0) / (limit - 1)))]);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Split factors of a loop whose per-iteration extent is `r`: at most `cap`. `exact`: divisors of
// r only (update definitions and reduction loops, whose auto tail rounds up).
std::vector<int64_t> factor_candidates(int64_t r, int64_t cap, bool exact, int limit) {
  std::set<int64_t> s;
  for (int64_t d = 2; d <= cap && d <= 512; d++)
    if (r % d == 0) s.insert(d);
  if (!exact) {
    for (int64_t p = 2; p <= cap && p <= 128; p *= 2) s.insert(p);
    for (int64_t q : {3, 6, 12, 24})
      if (q <= cap) s.insert(q);
  }
  return thin(std::vector<int64_t>(s.begin(), s.end()), limit);
}

}  // namespace

int unroll_bits(int64_t extent) {
  int b = 0;
  while (extent > 1 && (int64_t{1} << b) < extent) b++;
  return b;
}

int native_vector_bytes(const Halide::Target& t) {
  if (t.has_feature(Halide::Target::AVX512)) return 64;
  if (t.has_feature(Halide::Target::AVX2) || t.has_feature(Halide::Target::AVX)) return 32;
  return 16;
}

// ---- one definition in one region: options per loop and the counting tables ----

// ---- construction ----

ScheduleSpace::ScheduleSpace(PipelineView view, SpaceOptions opts) : view_(std::move(view)), opts_(opts) {
  for (auto it = view_.stages.rbegin(); it != view_.stages.rend(); ++it) {
    if (it->is_extern) throw Error(fmt::format("stage '{}': extern stages have no schedule space", it->name));
    index_of_[it->name] = order_.size();
    order_.push_back(it->name);
    names_.push_back(func_base_name(it->name));
  }
  needed_ = needed_extents(view_);
  sketch_ = Sketch::match(*this);
}

ScheduleSpace::ScheduleSpace(const std::vector<Halide::Func>& outputs, const Halide::Target& target, SpaceOptions opts)
    : ScheduleSpace(build_pipeline_view(outputs), opts) {
  outputs_ = outputs;
  rule_sketch_ = std::make_shared<const RuleSketch>(view_, outputs, target);
}

std::optional<Schedule> ScheduleSpace::rule_schedule() const {
  if (!rule_sketch_) return std::nullopt;
  return rule_sketch_->schedule({});
}

const RuleSketch* ScheduleSpace::rule_sketch() const {
  return rule_sketch_ && !rule_sketch_->empty() ? rule_sketch_.get() : nullptr;
}

std::optional<Schedule> ScheduleSpace::sample_rule(std::mt19937_64& rng) const {
  if (!rule_sketch()) return std::nullopt;
  return rule_sketch_->schedule(rule_sketch_->draw(rng));
}

const ScheduleSpace::DefSpace& ScheduleSpace::def_space(size_t i, int def, const Placement_& p) const {
  const bool root = p.placement == Placement::Root;
  const std::vector<int64_t>& region = p.region;
  std::string key = fmt::format("{}#{}#{}#{}#", order_[i], def, root, p.constant);
  for (int64_t r : region) key += fmt::format("{},", r);
  auto found = memo_.find(key);
  if (found != memo_.end()) return *found->second;

  const Stage& st = *view_.stage(order_[i]);
  const Definition& d = st.definitions.at(def);
  auto ds = std::make_shared<DefSpace>();
  ds->max_group = root ? opts_.max_parallel_loops : 0;
  ds->at = !root && p.constant;
  ds->update = def > 0;
  ds->max_unroll = opts_.max_unroll;
  for (const OrigLoop& l : original_loops(st, def, region)) {
    DefSpace::OrigLoop o;
    o.name = l.name;
    o.rvar = l.reduction;
    o.extent = l.extent;
    o.innermost = !l.reduction && !st.dims.empty() && l.name == st.dims[0].name;
    int64_t full = d.loops[static_cast<size_t>(l.def_loop)].extent;
    if (!l.reduction)
      for (const auto& dim : st.dims)
        if (dim.name == l.name) full = dim.extent;
    // Reduction loops and the pure loops of updates round up: divisors of the region (and, at
    // root, of the Func's extent, which validate() checks) only.
    const bool exact = l.reduction || def > 0;
    const int64_t r = exact && root ? std::gcd(o.extent, full > 0 ? full : o.extent) : o.extent;
    // Tiles of a root Func may span its extent (a shift-inwards split stays inside it); in a
    // compute_at region at most half of it, whose edge iterations may realize less.
    const int64_t cap = root ? r : r / 2;
    o.tilings.push_back({});
    if (r > 0) {
      for (int64_t f0 : factor_candidates(r, cap, exact, opts_.max_factors)) {
        o.tilings.push_back({f0});
        for (int64_t f1 : factor_candidates(r / f0, cap / f0, exact, opts_.max_factors / 2))
          if (f0 * f1 <= cap && (!exact || r % (f0 * f1) == 0)) o.tilings.push_back({f0, f1});
      }
    }
    (o.rvar ? ds->rv : ds->pure).push_back(static_cast<int>(ds->loops.size()));
    ds->loops.push_back(std::move(o));
  }

  const int TM = ds->max_T();
  // Reduction loops: one chain; every option counts 1 (the chain's interleavings come later).
  const int nr = static_cast<int>(ds->rv.size());
  ds->R.assign(nr + 1, std::vector<std::array<double, kU + 1>>(TM + 1, std::array<double, kU + 1>{}));
  ds->R[nr][0][0] = 1;
  DefSpace::VecChoice none;
  // The tables depend on an option only through its group (LoopOptions): a few dozen groups
  // instead of hundreds of options.
  for (size_t k = 0; k < ds->loops.size(); k++)
    ds->loop_options.emplace_back(ds->options(static_cast<int>(k), none), ds->loops[k].rvar);
  for (int j = nr - 1; j >= 0; j--)
    for (const auto& b : ds->options_of(ds->rv[j], none).groups)
      for (int T = 0; T + b.levels <= TM; T++)
        for (int u = 0; u + b.bits <= kU; u++)
          ds->R[j][T + b.levels][u + b.bits] += static_cast<double>(b.end - b.begin) * ds->R[j + 1][T][u];

  // Vector choices: none, or the innermost level of a pure loop at the native width, half or a
  // quarter of it (short rows: a 7-wide conv output).
  const int native = std::max(1, opts_.vector_bytes / std::max(1, st.bytes));
  ds->vec.push_back({});
  for (int k : ds->pure)
    for (int w : {native / 4, native / 2, native})
      if (w >= 2) {
        DefSpace::VecChoice v;
        v.loop = k;
        v.width = w;
        ds->vec.push_back(v);
      }

  const int np = static_cast<int>(ds->pure.size());
  const int G = ds->max_group;
  // The reduction chain's nonzero totals (levels, unroll bits, count / levels!), shared by every
  // vector choice.
  std::vector<std::tuple<int, int, double>> reduction_totals;
  for (int Tr = 0; Tr <= TM; Tr++)
    for (int ur = 0; ur <= kU; ur++)
      if (ds->R[0][Tr][ur] > 0) reduction_totals.emplace_back(Tr, ur, ds->R[0][Tr][ur] / factorial(Tr));
  for (auto& v : ds->vec) {
    if (v.loop >= 0) v.vec_options = LoopOptions(ds->options(v.loop, v), false);
    v.T_size = TM + 1;
    v.g_size = G + 1;
    v.P.assign(static_cast<size_t>(np + 1) * v.T_size * v.g_size * (kU + 1), 0.0);
    v.at(np, 0, 0, 0) = 1;
    for (int j = np - 1; j >= 0; j--) {
      const auto& bs = ds->options_of(ds->pure[j], v).groups;
      for (int T = 0; T <= TM; T++)
        for (int g = 0; g <= G; g++)
          for (int u = 0; u <= kU; u++) {
            const double below = v.at(j + 1, T, g, u);
            if (below <= 0) continue;
            for (const auto& b : bs)
              if (T + b.levels <= TM && g + b.in_group <= G && u + b.bits <= kU)
                v.at(j, T + b.levels, g + b.in_group, u + b.bits) +=
                    static_cast<double>(b.end - b.begin) / factorial(b.levels) * below;
          }
    }
    v.total = 0;
    for (int T = 0; T <= TM; T++)
      for (int g = 0; g <= G; g++)
        for (int up = 0; up <= kU; up++) {
          if (v.at(0, T, g, up) <= 0) continue;
          for (const auto& [Tr, ur, r] : reduction_totals) {
            if (T + Tr > TM || up + ur > kU) continue;
            const double x = v.at(0, T, g, up) * r * factorial(T + Tr) * factorial(g);
            v.combos.push_back({T, g, up, Tr, ur});
            v.weights.push_back(x);
            v.total += x;
          }
        }
    std::map<std::pair<int, bool>, size_t> class_at;
    for (size_t k = 0; k < v.combos.size(); k++) {
      const DefSpace::Totals& t = v.combos[k];
      auto [it, fresh] = class_at.emplace(std::make_pair(t.g, t.up + t.ur > 0), v.classes.size());
      if (fresh) v.classes.push_back({t.g, t.up + t.ur > 0, {}, {}});
      DefSpace::TotalsClass& tc = v.classes[it->second];
      tc.combos.push_back(k);
      tc.cumulative.push_back((tc.cumulative.empty() ? 0.0 : tc.cumulative.back()) + v.weights[k]);
    }
    ds->total += v.total;
  }
  return *(memo_[key] = ds);
}

// ---- placements ----

std::vector<ScheduleSpace::Placement_> ScheduleSpace::placements(const Schedule& partial, size_t i) const {
  const Stage& st = *view_.stage(order_[i]);
  std::vector<int64_t> full;
  for (const auto& d : st.dims) full.push_back(std::max<int64_t>(1, d.extent));
  std::vector<Placement_> out;
  if (st.is_output) return {{Placement::Root, {}, full}};
  if (st.is_rename) return {{Placement::Inline, {}, {}}};
  if (st.definitions.size() == 1) out.push_back({Placement::Inline, {}, {}});
  // At root Halide computes what the consumers need, which a Slice makes less than the whole.
  out.push_back({Placement::Root, {}, needed_.at(order_[i])});

  // compute_at: a single consumer, decided and not inlined, reading through affine accesses
  // in one of its definitions; inlined consumers are looked through (their accesses composed)
  // to the one stage their uses end up in, as Halide computes a Func at a loop of that stage.
  if (st.consumers.size() != 1) return out;
  const auto uses = uses_through_inlined(view_, order_[i], [&](const std::string& n) -> std::optional<bool> {
    auto it = index_of_.find(n);
    if (it == index_of_.end() || it->second >= i) return std::nullopt;  // consumers are decided first
    const StageSchedule* c0 = partial.find(names_[it->second], 0);
    if (!c0) return std::nullopt;
    return c0->placement == Placement::Inline;
  });
  if (!uses) return out;
  const std::string& cname = uses->stage;
  const std::vector<Access>& accesses = uses->accesses;
  const auto ci = index_of_.find(cname);
  const int d = accesses[0].definition;
  for (const auto& a : accesses)
    if (a.definition != d) return out;
  const StageSchedule* cs = partial.find(names_[ci->second], d);
  if (!cs) return out;
  // The consumer's region and nest; per site, the box its accesses read in one iteration.
  const Placement_ cp = placement_of(partial, ci->second);
  const std::vector<OrigLoop> orig = original_loops(*view_.stage(cname), d, cp.region);
  const std::vector<NestLoop> nest = scheduled_nest(*cs, orig);
  // Halide's extent of a root consumer's pure loop is symbolic (it follows the output's size),
  // so a region is constant only inside the outermost level of each of them.
  std::map<int, size_t> outermost;  // pure original loop -> nest index of its outermost level
  for (size_t j = 0; j < nest.size(); j++)
    if (!nest[j].reduction) outermost[nest[j].orig] = j;
  for (size_t j = 0; j < nest.size(); j++) {
    if (!nest[j].site) continue;
    bool constant = cp.constant;
    if (cp.placement == Placement::Root) {
      constant = true;
      for (const auto& [k, top] : outermost)
        if (top < j) constant = false;
    }
    out.push_back({Placement::ComputeAt, {names_[ci->second], d, nest[j].name}, access_region(accesses, nest[j].inside, full),
                   constant});
  }
  // Beside the consumer, when it is computed at a loop: at that loop or one outside it, what the
  // consumer reads over the region it would compute there (a Winograd product computed per
  // output task, its inverse transform per output tile inside the task).
  if (cp.placement != Placement::ComputeAt) return out;
  // The consumer's sites run innermost first along its chain of compute Funcs: from its own
  // loop on, every one is at or outside it.
  bool outside = false;
  for (const Placement_& site : placements(partial, ci->second)) {
    if (site.placement != Placement::ComputeAt) continue;
    outside = outside || site.at == cp.at;
    if (!outside) continue;
    std::vector<int64_t> whole(view_.stage(cname)->definitions.at(d).loops.size(), 1);
    for (const auto& l : original_loops(*view_.stage(cname), d, site.region)) whole.at(static_cast<size_t>(l.def_loop)) = l.extent;
    out.push_back({Placement::ComputeAt, site.at, access_region(accesses, whole, full), site.constant});
  }
  return out;
}

ScheduleSpace::Placement_ ScheduleSpace::placement_of(const Schedule& partial, size_t i) const {
  const StageSchedule* s = partial.find(names_[i], 0);
  if (!s) throw Error(fmt::format("stage '{}' is undecided", names_[i]));
  std::string sites;  // the compute_at loops the space offers, for the message
  for (const auto& p : placements(partial, i)) {
    if (p.placement == s->placement && (p.placement != Placement::ComputeAt || p.at == s->compute_at)) return p;
    if (p.placement == Placement::ComputeAt) sites += fmt::format(" {}.{}", p.at.func, p.at.loop);
  }
  throw Error(fmt::format("stage '{}': its placement{} is not one of the space's candidates (compute_at sites:{})",
                          names_[i], s->placement == Placement::ComputeAt ? " at " + s->compute_at.func + "." + s->compute_at.loop : "",
                          sites.empty() ? " none" : sites));
}

std::vector<int64_t> ScheduleSpace::region(const Schedule& partial, size_t i) const { return placement_of(partial, i).region; }

// ---- counting and drawing ----

SpaceOptions space_options_for(const Workload& w, SpaceOptions base) {
  // Weights the layout plan already stores blocked are not packed a second time.
  for (const auto& name : w.constant_inputs)
    if (!w.graph.tensor(name).layout.blocked()) base.packable_inputs.insert(name);
  return base;
}

std::vector<std::optional<InputLayout>> ScheduleSpace::layouts(size_t i) const {
  const Stage& st = *view_.stage(order_[i]);
  std::vector<std::optional<InputLayout>> out{std::nullopt};
  if (!st.is_rename || !opts_.packable_inputs.count(st.rename_of)) return out;
  const int native = std::max(1, opts_.vector_bytes / std::max(1, st.bytes));
  for (size_t k = 1; k < st.dims.size(); k++)
    for (int b : {native, native / 2, native / 4})
      if (b >= 2 && st.dims[k].extent >= b && st.dims[k].extent % b == 0)
        out.push_back(InputLayout{st.rename_of, static_cast<int>(k), b});
  return out;
}

double ScheduleSpace::branching(const Schedule& partial, size_t i) const {
  trim_memo();
  const Stage& st = *view_.stage(order_[i]);
  double total = 0;
  for (const auto& p : placements(partial, i)) {
    if (p.placement == Placement::Inline) {
      total += static_cast<double>(layouts(i).size());
      continue;
    }
    double prod = 1;
    for (size_t d = 0; d < st.definitions.size(); d++)
      prod *= def_space(i, static_cast<int>(d), p).total;
    total += prod;
  }
  return total;
}

namespace {

// Index drawn with probability proportional to weights (all >= 0, sum > 0).
size_t draw(const std::vector<double>& weights, std::mt19937_64& rng) {
  double sum = 0;
  for (double w : weights) sum += w;
  double x = std::uniform_real_distribution<double>(0, sum)(rng);
  for (size_t k = 0; k < weights.size(); k++) {
    if (x < weights[k]) return k;
    x -= weights[k];
  }
  for (size_t k = weights.size(); k-- > 0;)
    if (weights[k] > 0) return k;
  return 0;
}

// One definition's tiling, unrolls, order and parallel loops from each of its loops' chosen
// option: `loops` its original loops (innermost first, each named), `pure` and `rv` indices into them,
// vec_loop the pure loop whose innermost level is vectorized (-1: none) by vec_width lanes.
template <typename Loops>
void place_loops(const Loops& loops, const std::vector<int>& pure, const std::vector<int>& rv,
                 const std::vector<LoopOption>& chosen, int vec_loop, int vec_width, StageSchedule& ss,
                 std::mt19937_64& rng) {
  // Tiling and level names (innermost first per loop).
  std::vector<std::vector<std::string>> lv(loops.size());
  for (size_t k = 0; k < loops.size(); k++) {
    const LoopOption& o = chosen[k];
    if (o.factors->empty()) {
      lv[k] = {loops[k].name};
    } else {
      LoopTiling t;
      t.loop = loops[k].name;
      t.factors = *o.factors;
      lv[k] = t.level_names();
      ss.tiling.push_back(t);
    }
    if (o.unrolled >= 0) ss.unroll.push_back(lv[k][o.unrolled]);
  }
  // Order, outermost first: the parallel group in a random order, the free levels
  // interleaved uniformly (each loop's levels outer to inner, reduction loops as one chain),
  // then the vector loop.
  std::vector<std::string> group;
  std::vector<std::vector<std::string>> chains;  // free levels per chain, outermost first
  for (int k : pure) {
    const LoopOption& o = chosen[k];
    std::vector<std::string> levels(lv[k].rbegin(), lv[k].rend());
    if (o.in_group) {
      group.push_back(levels.front());
      levels.erase(levels.begin());
    }
    if (vec_loop == k) levels.pop_back();
    chains.push_back(levels);
  }
  std::vector<std::string> rchain;  // reduction loops: innermost loop's levels first, reversed
  for (int k : rv) rchain.insert(rchain.end(), lv[k].begin(), lv[k].end());
  std::reverse(rchain.begin(), rchain.end());
  chains.push_back(rchain);
  std::shuffle(group.begin(), group.end(), rng);
  std::vector<size_t> labels;
  for (size_t k = 0; k < chains.size(); k++) labels.insert(labels.end(), chains[k].size(), k);
  std::shuffle(labels.begin(), labels.end(), rng);
  std::vector<std::string> outer_to_inner = group;
  std::vector<size_t> next(chains.size(), 0);
  for (size_t k : labels) outer_to_inner.push_back(chains[k][next[k]++]);
  if (vec_loop >= 0) {
    outer_to_inner.push_back(lv[vec_loop][0]);
    ss.vectorize = lv[vec_loop][0];
    ss.vector_width = vec_width;
  }
  ss.order.assign(outer_to_inner.rbegin(), outer_to_inner.rend());
  if (!group.empty()) {
    ss.parallel = group.back();
    for (size_t k = group.size() - 1; k-- > 0;) ss.parallel_fused.push_back(group[k]);
  }
}

}  // namespace

std::vector<ScheduleSpace::DefClass> ScheduleSpace::def_classes(const DefSpace& ds) const {
  std::vector<DefClass> out;
  for (size_t vi = 0; vi < ds.vec.size(); vi++) {
    std::set<std::pair<int, int>> seen;  // (group, unrolled), in order
    for (const auto& tc : ds.vec[vi].classes) seen.insert({tc.g, tc.unrolled});
    for (const auto& [g, u] : seen) out.push_back({static_cast<int>(vi), g, u});
  }
  return out;
}

void ScheduleSpace::sample_definition(const DefSpace& ds, bool strat, StageSchedule& ss, std::mt19937_64& rng,
                                      const DefClass& cls) const {
  // Vector choice, then the totals (free pure levels, group size, unrolls, reduction levels).
  std::vector<double> vw;
  for (size_t vi = 0; vi < ds.vec.size(); vi++) {
    const auto& v = ds.vec[vi];
    vw.push_back(cls.vec >= 0 && cls.vec != static_cast<int>(vi) ? 0.0 : strat ? (v.total > 0 ? 1.0 : 0.0) : v.total);
  }
  const auto& v = ds.vec[draw(vw, rng)];
  // The structural class: as given, else drawn (each with the same mass when stratified, else
  // by its count); then the totals within it, by their counts.
  std::vector<double> clw;
  for (const auto& tc : v.classes) {
    const bool ok = (cls.group < 0 || tc.g == cls.group) && (cls.unrolled < 0 || tc.unrolled == (cls.unrolled > 0));
    clw.push_back(!ok ? 0.0 : strat ? 1.0 : tc.cumulative.back());
  }
  const DefSpace::TotalsClass& tc = v.classes[draw(clw, rng)];
  const double x = std::uniform_real_distribution<double>(0, tc.cumulative.back())(rng);
  const size_t at = std::min<size_t>(std::upper_bound(tc.cumulative.begin(), tc.cumulative.end(), x) - tc.cumulative.begin(),
                                     tc.combos.size() - 1);
  DefSpace::Totals c = v.combos[tc.combos[at]];
  // Loop options, drawn loop by loop given what the remaining loops must still provide.
  std::vector<LoopOption> chosen(ds.loops.size());
  std::vector<double> ow;
  // A group of options by its weight, then one of them uniformly.
  auto pick = [&](const LoopOptions& opts) -> const LoopOption& {
    const LoopOptions::Group& b = opts.groups[draw(ow, rng)];
    return opts.all[std::uniform_int_distribution<size_t>(b.begin, b.end - 1)(rng)];
  };
  for (size_t j = 0; j < ds.pure.size(); j++) {
    const LoopOptions& opts = ds.options_of(ds.pure[j], v);
    ow.clear();
    for (const auto& b : opts.groups) {
      const int T = c.T - b.levels, g = c.g - b.in_group, u = c.up - b.bits;
      ow.push_back(T < 0 || g < 0 || u < 0 ? 0 : static_cast<double>(b.end - b.begin) * v.at(j + 1, T, g, u) / factorial(b.levels));
    }
    const LoopOption& o = pick(opts);
    c.T -= o.free_levels, c.g -= o.in_group, c.up -= o.bits;
    chosen[ds.pure[j]] = o;
  }
  for (size_t j = 0; j < ds.rv.size(); j++) {
    const LoopOptions& opts = ds.loop_options[ds.rv[j]];
    ow.clear();
    for (const auto& b : opts.groups) {
      const int T = c.Tr - b.levels, u = c.ur - b.bits;
      ow.push_back(T < 0 || u < 0 ? 0 : static_cast<double>(b.end - b.begin) * ds.R[j + 1][T][u]);
    }
    const LoopOption& o = pick(opts);
    c.Tr -= o.levels, c.ur -= o.bits;
    chosen[ds.rv[j]] = o;
  }
  place_loops(ds.loops, ds.pure, ds.rv, chosen, v.loop, v.width, ss, rng);
}

void ScheduleSpace::sample_decision(Schedule& partial, size_t i, std::mt19937_64& rng) const {
  sample_decision_as(partial, i, rng, opts_.sampling == Sampling::Sketch ? Sampling::Stratified : opts_.sampling);
}

void ScheduleSpace::sample_decision_as(Schedule& partial, size_t i, std::mt19937_64& rng, Sampling how) const {
  trim_memo();
  const Stage& st = *view_.stage(order_[i]);
  const auto cands = placements(partial, i);
  std::vector<double> w;
  const auto layout = layouts(i);
  for (const auto& p : cands) {
    double prod = p.placement == Placement::Inline ? static_cast<double>(layout.size()) : 1.0;
    if (p.placement != Placement::Inline)
      for (size_t d = 0; d < st.definitions.size(); d++)
        prod *= def_space(i, static_cast<int>(d), p).total;
    w.push_back(prod);
  }
  const bool strat = how == Sampling::Stratified;
  if (strat) {
    // Each placement kind gets the same mass, shared by its candidates in proportion to their counts.
    std::map<Placement, double> kind_total;
    for (size_t k = 0; k < cands.size(); k++) kind_total[cands[k].placement] += w[k];
    for (size_t k = 0; k < cands.size(); k++)
      w[k] = kind_total[cands[k].placement] > 0 ? w[k] / kind_total[cands[k].placement] : 0;
  }
  const Placement_& p = cands[draw(w, rng)];
  StageSchedule s0;
  s0.func = names_[i];
  s0.placement = p.placement;
  if (p.placement == Placement::ComputeAt) s0.compute_at = p.at;
  if (p.placement == Placement::Inline) {
    partial.set(s0);
    // Only renames of packable inputs have layouts; a redrawn decision replaces its layout.
    if (layout.size() > 1) {
      const std::string& input = view_.stage(order_[i])->rename_of;
      std::erase_if(partial.layouts, [&](const InputLayout& l) { return l.input == input; });
      if (const auto& l = layout[std::uniform_int_distribution<size_t>(0, layout.size() - 1)(rng)]) partial.layouts.push_back(*l);
    }
    return;
  }
  for (size_t d = 0; d < st.definitions.size(); d++) {
    const DefSpace& ds = def_space(i, static_cast<int>(d), p);
    StageSchedule ss = d == 0 ? s0 : StageSchedule{};
    ss.func = names_[i];
    ss.definition = static_cast<int>(d);
    sample_definition(ds, strat, ss, rng, DefClass{});
    partial.set(ss);
  }
}

Schedule ScheduleSpace::sample(std::mt19937_64& rng) const {
  if (opts_.sampling == Sampling::Sketch && sketch_) return sketch_->build(*this, sketch_->draw(rng));
  Schedule s;
  for (size_t i = 0; i < order_.size(); i++) sample_decision(s, i, rng);
  return s;
}

SpaceStats ScheduleSpace::estimate(int rollouts, uint64_t seed) const {
  SpaceStats st;
  st.stages = static_cast<int>(order_.size());
  st.decisions = st.stages;
  st.rollouts = rollouts;
  std::mt19937_64 rng(seed);
  double sum_b = 0, n_b = 0;
  std::vector<double> log_products;
  for (int r = 0; r < rollouts; r++) {
    Schedule s;
    double lp = 0;
    for (size_t i = 0; i < order_.size(); i++) {
      const double b = branching(s, i);
      sum_b += b;
      n_b += 1;
      lp += std::log10(std::max(1.0, b));
      sample_decision_as(s, i, rng, Sampling::Uniform);
    }
    log_products.push_back(lp);
  }
  st.avg_branching = n_b > 0 ? sum_b / n_b : 0;
  // log10 of the mean of the products (Knuth's estimator of a tree's size), without overflow.
  if (!log_products.empty()) {
    const double m = *std::max_element(log_products.begin(), log_products.end());
    double acc = 0;
    for (double lp : log_products) acc += std::pow(10.0, lp - m);
    st.log10_size = m + std::log10(acc / log_products.size());
  }
  return st;
}

}  // namespace ts
