#include "schedule/refit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "graph/error.h"
#include "schedule/loop_nest.h"

namespace ts {

namespace {

// An original loop of the target definition.
struct TargetLoop {
  int64_t extent = 1;      // per execution of the nest (a compute_at Func: its region)
  int64_t full = 0;        // the Func's (or RDom's) whole extent; 0 when unknown
  bool reduction = false;  // an RVar
};

// The largest divisor of n that is at most `cap` and a multiple of `multiple`; 0 when none.
int64_t largest_divisor_at_most(int64_t n, int64_t cap, int64_t multiple) {
  for (int64_t f = std::min(n, cap); f >= 1; f--)
    if (n % f == 0 && f % multiple == 0) return f;
  return 0;
}

// A factor for one tiling level within `room` (a divisor of it when `divisor`), at most `f`.
// `width` is the level's vector width (0 when it is not vectorized): the factor stays a multiple
// of it, and it halves (to 0: not vectorized) while no such factor fits.
int64_t fit_factor(int64_t f, int64_t room, bool divisor, int& width) {
  room = std::max<int64_t>(1, room);
  for (;;) {
    const int64_t m = width > 1 ? width : 1;
    const int64_t g = divisor ? largest_divisor_at_most(room, f, m) : std::min(f, room) / m * m;
    if (g >= 1) return g;
    width = width / 2 >= 2 ? width / 2 : 0;
  }
}

// The width the vectorized loop keeps after its level became `factor`-wide (or untiled of
// `extent`): the same, or reduced, or 0 when it is no longer vectorized; reported in `changes`.
void set_width(StageSchedule& e, int width, std::vector<std::string>& changes) {
  if (width == e.vector_width) return;
  if (width == 0) {
    changes.push_back(fmt::format("{}: {} no longer vectorized (narrower than {} lanes)", e.name(), e.vectorize,
                                  e.vector_width));
    e.vectorize.clear();
  } else {
    changes.push_back(fmt::format("{}: {} vectorized by {} (was {})", e.name(), e.vectorize, width, e.vector_width));
  }
  e.vector_width = width;
}

void fit_tiling(StageSchedule& e, LoopTiling& t, const TargetLoop& l, bool root, std::vector<std::string>& changes) {
  // As the space prunes (schedule_space.h): round-up splits (an update's pure loops, reduction
  // loops) take divisors of the region, shift-inwards ones stay within it at root and within
  // half of it in a compute_at region.
  const bool divisor = t.tail == Tail::RoundUp || (t.tail == Tail::Auto && (l.reduction || e.definition > 0));
  int64_t extent = std::max<int64_t>(1, l.extent);
  if (divisor && root && l.full > 0) extent = std::gcd(extent, l.full);
  const int64_t cap = divisor || root || t.tail == Tail::GuardWithIf ? extent : std::max<int64_t>(1, extent / 2);
  const std::vector<std::string> levels = t.level_names();
  const std::vector<int64_t> was = t.factors;
  int64_t room = cap;
  for (size_t k = 0; k < t.factors.size(); k++) {
    const bool vectorized = e.vectorize == levels[k];
    int width = vectorized ? e.vector_width : 0;
    t.factors[k] = fit_factor(t.factors[k], room, divisor, width);
    if (vectorized) set_width(e, width, changes);
    room = divisor ? room / t.factors[k] : std::max<int64_t>(1, room / t.factors[k]);
  }
  if (t.factors != was)
    changes.push_back(fmt::format("{}: {} split by {} (was {})", e.name(), t.loop, fmt::join(t.factors, "x"),
                                  fmt::join(was, "x")));
}

// Extent of loop `name` of `e`'s nest after tiling, when it is constant enough to unroll.
int64_t unrolled_extent(const StageSchedule& e, const std::string& name, const std::map<std::string, TargetLoop>& loops) {
  if (const int64_t f = e.level_extent(name); f > 0) return f;
  if (auto it = loops.find(name); it != loops.end()) return std::max<int64_t>(1, it->second.extent);
  for (const auto& t : e.tiling)  // an outermost level: what the inner levels leave
    if (t.level_names().back() == name && loops.count(t.loop)) {
      int64_t inner = 1;
      for (int64_t f : t.factors) inner *= f;
      return (loops.at(t.loop).extent + inner - 1) / inner;
    }
  return 1;
}

void fit_unrolls(StageSchedule& e, const std::map<std::string, TargetLoop>& loops, const SpaceOptions& opts,
                 std::vector<std::string>& changes) {
  std::vector<std::pair<int64_t, std::string>> kept;
  for (const auto& u : e.unroll) {
    const int64_t n = unrolled_extent(e, u, loops);
    if (n > opts.max_unroll) changes.push_back(fmt::format("{}: {} not unrolled ({} iterations)", e.name(), u, n));
    else kept.emplace_back(n, u);
  }
  // The unroll budget bounds the code size: the longest unrolled loops go first.
  std::sort(kept.begin(), kept.end());
  int bits = 0;
  for (const auto& [n, u] : kept) bits += unroll_bits(n);
  while (bits > kMaxUnrollBits && !kept.empty()) {
    changes.push_back(fmt::format("{}: {} not unrolled (unroll budget)", e.name(), kept.back().second));
    bits -= unroll_bits(kept.back().first);
    kept.pop_back();
  }
  std::vector<std::string> unroll;
  for (const auto& u : e.unroll)  // the donor's order
    if (std::any_of(kept.begin(), kept.end(), [&](const auto& k) { return k.second == u; })) unroll.push_back(u);
  e.unroll = std::move(unroll);
}

// Re-fits one entry to stage `st` computing `region` per iteration; "" or why it cannot be.
std::string fit_entry(StageSchedule& e, const Stage& st, const std::vector<int64_t>& region, bool root,
                      const SpaceOptions& opts, std::vector<std::string>& changes) {
  if (e.definition >= static_cast<int>(st.definitions.size()))
    return fmt::format("stage {}: the target has no definition {}", e.name(), e.definition);
  const Definition& d = st.definitions[static_cast<size_t>(e.definition)];
  std::map<std::string, TargetLoop> loops;
  for (const OrigLoop& o : original_loops(st, e.definition, region)) {
    TargetLoop l{o.extent, d.loops[static_cast<size_t>(o.def_loop)].extent, o.reduction};
    if (!o.reduction)
      for (const auto& dim : st.dims)
        if (dim.name == o.name) l.full = dim.extent;
    loops[o.name] = l;
  }
  for (auto& t : e.tiling) {
    auto it = loops.find(t.loop);
    if (it == loops.end()) return fmt::format("stage {}: the target has no loop {}", e.name(), t.loop);
    // Donor databases are anyone's files: a tiling the space never makes is refused, not fitted.
    if (t.factors.empty() || t.factors.size() > 2 ||
        std::any_of(t.factors.begin(), t.factors.end(), [](int64_t f) { return f < 1; }))
      return fmt::format("stage {}: loop {} tiled by {} (one or two factors of at least 1 expected)", e.name(), t.loop,
                         fmt::join(t.factors, "x"));
    fit_tiling(e, t, it->second, root, changes);
  }
  // An untiled loop vectorized with a guarded tail: at least one vector of the target's extent.
  if (auto it = loops.find(e.vectorize); it != loops.end() && e.vector_width > it->second.extent) {
    int width = e.vector_width;
    while (width > it->second.extent) width = width / 2 >= 2 ? width / 2 : 0;
    set_width(e, width, changes);
  }
  fit_unrolls(e, loops, opts, changes);
  return "";
}

void fit_layouts(Schedule& s, const PipelineView& view, std::vector<std::string>& changes) {
  std::vector<InputLayout> kept;
  for (InputLayout l : s.layouts) {
    const InputTensor* in = view.input(l.input);
    if (!in || l.dim < 0 || l.dim >= static_cast<int>(in->dims.size())) {
      changes.push_back(fmt::format("layout of {}: the target has no such input dim (dropped)", l.input));
      continue;
    }
    const int64_t extent = in->dims[static_cast<size_t>(l.dim)].extent;
    int64_t block = l.block;
    while (block >= 2 && extent % block != 0) block /= 2;
    if (block < 2) {
      changes.push_back(fmt::format("layout of {}: dim {} ({}) not blocked by {} (dropped)", l.input, l.dim, extent, l.block));
      continue;
    }
    if (block != l.block)
      changes.push_back(fmt::format("layout of {}: dim {} blocked by {} (was {})", l.input, l.dim, block, l.block));
    l.block = block;
    kept.push_back(l);
  }
  s.layouts = std::move(kept);
}

}  // namespace

RefitResult refit(const Schedule& s, const ScheduleSpace& to, const std::vector<Halide::Func>& outputs) {
  RefitResult out;
  out.schedule.format = s.format;
  if (s.autoscheduler) {
    out.schedule = s;
  } else {
    std::map<std::string, size_t> decision;  // schedule name -> decision index
    for (size_t i = 0; i < to.decisions().size(); i++) decision[to.schedule_name(i)] = i;
    for (const auto& e : s.stages)
      if (!decision.count(e.func)) out.changes.push_back(fmt::format("stage {}: not in the target (dropped)", e.name()));
    // Consumers first, so that a compute_at Func's region is its re-fitted consumer's.
    for (size_t i = 0; i < to.decisions().size() && out.error.empty(); i++) {
      std::vector<StageSchedule> entries;
      for (const auto& e : s.stages)
        if (e.func == to.schedule_name(i)) entries.push_back(e);
      if (entries.empty()) continue;
      const Stage& st = *to.view().stage(to.decisions()[i]);
      bool compute_at = false;  // the pure definition is computed at a consumer's loop
      for (const auto& e : entries)
        if (e.definition == 0) compute_at = out.schedule.set(e).placement == Placement::ComputeAt;
      std::vector<int64_t> region;  // empty: the Func's estimates
      const bool root = !compute_at;
      if (compute_at) {
        try {
          region = to.region(out.schedule, i);
        } catch (const Error&) {
          // Not one of the space's placements: the whole Func's extent bounds the splits.
        }
      }
      for (auto e : entries) {
        out.error = fit_entry(e, st, region, root, to.options(), out.changes);
        if (!out.error.empty()) break;
        out.schedule.set(std::move(e));
      }
    }
    out.schedule.layouts = s.layouts;
    fit_layouts(out.schedule, to.view(), out.changes);
  }
  if (out.error.empty())
    if (auto why = out.schedule.validate(outputs)) out.error = *why;
  return out;
}

}  // namespace ts
