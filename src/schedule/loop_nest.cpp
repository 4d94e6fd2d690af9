// The scheduled loop nest of one definition, from the Schedule data (see loop_nest.h).
#include "schedule/loop_nest.h"

#include <set>

#include <algorithm>
#include <climits>

namespace ts {

std::vector<OrigLoop> original_loops(const Stage& st, int def, const std::vector<int64_t>& region) {
  const Definition& d = st.definitions.at(static_cast<size_t>(def));
  std::vector<OrigLoop> out;
  auto add = [&](size_t k) {
    const Loop& l = d.loops[k];
    OrigLoop o{l.name, static_cast<int>(k), l.extent, l.reduction};
    if (!l.reduction)
      for (size_t a = 0; a < st.dims.size(); a++)
        if (st.dims[a].name == l.name && a < region.size()) o.extent = region[a];
    o.extent = std::max<int64_t>(1, o.extent);
    out.push_back(o);
  };
  // The pure definition: its args. An update: its RVars (innermost first), then its pure args.
  for (size_t k = 0; k < d.loops.size(); k++)
    if (def == 0 || d.loops[k].reduction) add(k);
  if (def > 0)
    for (size_t k = 0; k < d.loops.size(); k++)
      if (!d.loops[k].reduction) add(k);
  return out;
}

namespace {

// One loop of the nest being built: the original loops it iterates (a fused loop several) and how.
struct Level {
  std::string name;                              // loop name ("<loop>.v": lanes split off a longer loop)
  std::vector<std::pair<int, int64_t>> members;  // (index into orig, iterations of it), fastest first
  LoopKind kind = LoopKind::Serial;              // how it runs
  bool site = true;                              // a Func may be computed here
  int64_t extent() const {
    int64_t e = 1;
    for (const auto& [o, n] : members) e *= std::max<int64_t>(n, 1);
    return e;
  }
};

int find_level(const std::vector<Level>& levels, const std::string& name) {
  for (size_t k = 0; k < levels.size(); k++)
    if (levels[k].name == name) return static_cast<int>(k);
  return -1;
}

// Splits level k by `factor` into {inner, outer} (inner where it was, outer just outside): the
// inner part takes `factor` iterations from its members, fastest first, the outer the rest.
void split_level(std::vector<Level>& levels, int k, int64_t factor, const std::string& outer, const std::string& inner) {
  Level in{inner, {}, LoopKind::Serial, true}, out{outer, {}, LoopKind::Serial, true};
  int64_t rest = std::max<int64_t>(factor, 1);
  for (const auto& [o, n] : levels[k].members) {
    const int64_t take = std::min(rest, std::max<int64_t>(n, 1));
    if (rest > 1 || in.members.empty()) in.members.push_back({o, take});
    out.members.push_back({o, (n + take - 1) / take});
    rest = (rest + take - 1) / take;
  }
  levels[k] = in;
  levels.insert(levels.begin() + k + 1, out);
}

// The loop steps (LoopStep) on the levels, as Halide applies them; names it lacks are skipped
// (validate() rejects them).
void apply_steps(const StageSchedule& ss, std::vector<Level>& levels) {
  for (const LoopStep& st : ss.steps) {
    const int k = st.loops.empty() ? -1 : find_level(levels, st.loops[0]);
    switch (st.kind) {
      case StepKind::Split:
        if (k >= 0 && st.loops.size() == 3) split_level(levels, k, st.factor, st.loops[1], st.loops[2]);
        break;
      case StepKind::Fuse: {
        const int o = st.loops.size() == 3 ? find_level(levels, st.loops[1]) : -1;
        if (k < 0 || o < 0 || o == k) break;
        levels[k].name = st.loops[2];
        levels[k].members.insert(levels[k].members.end(), levels[o].members.begin(), levels[o].members.end());
        levels.erase(levels.begin() + o);
        break;
      }
      case StepKind::Reorder: {
        std::vector<int> at;
        for (const auto& n : st.loops)
          if (const int j = find_level(levels, n); j >= 0) at.push_back(j);
        std::vector<Level> moved;
        for (const int j : at) moved.push_back(levels[j]);
        std::sort(at.begin(), at.end());
        for (size_t j = 0; j < at.size(); j++) levels[at[j]] = moved[j];
        break;
      }
      case StepKind::Vectorize:
      case StepKind::Unroll:
      case StepKind::Parallel: {
        if (k < 0) break;
        const LoopKind kind = st.kind == StepKind::Vectorize ? LoopKind::Vectorized
                              : st.kind == StepKind::Unroll  ? LoopKind::Unrolled : LoopKind::Parallel;
        if (st.factor > 0) {  // Halide splits off an anonymous inner loop of `factor` iterations
          split_level(levels, k, st.factor, st.loops[0], st.loops[0] + ".v");
          levels[k].site = kind != LoopKind::Vectorized;
        }
        levels[k].kind = kind;
        if (kind == LoopKind::Vectorized) levels[k].site = false;
        break;
      }
    }
  }
}

}  // namespace

int find_nest_loop(const std::vector<NestLoop>& nest, const std::string& name) {
  for (size_t k = 0; k < nest.size(); k++)
    if (nest[k].name == name) return static_cast<int>(k);
  return -1;
}

std::vector<NestLoop> scheduled_nest(const StageSchedule& ss, const std::vector<OrigLoop>& orig) {
  const int n = static_cast<int>(orig.size());
  std::vector<Level> levels;  // default nest order, innermost first
  for (int o = 0; o < n; o++) {
    const LoopTiling* t = nullptr;
    for (const auto& x : ss.tiling)
      if (x.loop == orig[o].name) t = &x;
    if (!t) {
      levels.push_back({orig[o].name, {{o, orig[o].extent}}});
      continue;
    }
    const auto lv = t->level_names();
    int64_t prod = 1;
    for (size_t k = 0; k < t->factors.size(); k++) {
      levels.push_back({lv[k], {{o, t->factors[k]}}});
      prod *= std::max<int64_t>(1, t->factors[k]);
    }
    levels.push_back({lv.back(), {{o, (orig[o].extent + prod - 1) / prod}}});
  }
  if (!ss.order.empty()) {
    std::vector<Level> re;
    for (const auto& name : ss.order)
      if (const int k = find_level(levels, name); k >= 0) re.push_back(levels[k]);
    levels = std::move(re);
  }
  if (const int k = ss.vector_width > 0 ? find_level(levels, ss.vectorize) : -1; k >= 0) {
    const int64_t w = ss.vector_width, e = levels[k].extent();
    if (e == w) {
      levels[k].kind = LoopKind::Vectorized;
      levels[k].site = false;  // the vector lanes themselves
    } else {
      // Split by the width with a guarded tail: the lanes, then the serial loop named L.
      split_level(levels, k, w, ss.vectorize, ss.vectorize + ".v");
      levels[k].kind = LoopKind::Vectorized;
      levels[k].site = false;
      levels[k + 1].site = e % w == 0;  // a guarded tail realizes less than a vector
    }
  }
  for (auto& l : levels)
    if (std::find(ss.unroll.begin(), ss.unroll.end(), l.name) != ss.unroll.end()) l.kind = LoopKind::Unrolled;
  if (const int p = ss.parallel.empty() ? -1 : find_level(levels, ss.parallel); p >= 0) {
    // The parallel loop and the loops fused into it, consecutive, become one loop where it was.
    Level fused{ss.parallel_loop_name(), levels[p].members, LoopKind::Parallel, true};
    for (const auto& f : ss.parallel_fused)
      if (const int k = find_level(levels, f); k >= 0) {
        fused.members.insert(fused.members.end(), levels[k].members.begin(), levels[k].members.end());
        levels.erase(levels.begin() + k);
      }
    levels[find_level(levels, ss.parallel)] = fused;
  }
  apply_steps(ss, levels);

  std::vector<int> nlevels(n, 0);        // levels of each original loop
  for (const auto& l : levels)
    for (const auto& [o, k] : l.members) nlevels[o]++;
  std::vector<int> seen(n, 0);           // levels of each original loop inside the current one
  std::vector<int64_t> covered(n, 1);    // product of their iterations
  std::vector<NestLoop> out;
  for (const Level& l : levels) {
    std::vector<int64_t> in(n, 1);
    for (int o = 0; o < n; o++)
      if (seen[o] > 0) in[orig[o].def_loop] = seen[o] == nlevels[o] ? orig[o].extent : std::min(covered[o], orig[o].extent);
    const int o0 = l.members.front().first;
    out.push_back({l.name, orig[o0].def_loop, l.extent(), l.kind, orig[o0].reduction, l.site, std::move(in)});
    for (const auto& [o, k] : l.members) {
      seen[o]++;
      covered[o] *= std::max<int64_t>(k, 1);
    }
  }
  return out;
}

std::vector<int64_t> whole_loop_cover(const std::vector<NestLoop>& nest, size_t j, const std::vector<OrigLoop>& orig) {
  if (j + 1 < nest.size()) return nest[j + 1].inside;
  std::vector<int64_t> full(orig.size(), 1);
  for (const auto& o : orig) full[o.def_loop] = o.extent;
  return full;
}

std::vector<int64_t> access_region(const std::vector<Access>& accesses, const std::vector<int64_t>& cover,
                                   const std::vector<int64_t>& full) {
  std::vector<int64_t> region(full.size(), 1);
  for (size_t a = 0; a < full.size(); a++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    bool affine = !accesses.empty();
    for (const auto& acc : accesses) {
      const AccessDim& ad = acc.dims.at(a);
      if (!ad.affine) {
        affine = false;
        break;
      }
      int64_t l0 = ad.constant, h0 = ad.constant;
      for (size_t k = 0; k < ad.coeffs.size(); k++) {
        const int64_t span = ad.coeffs[k] * ((k < cover.size() ? cover[k] : 1) - 1);
        (span < 0 ? l0 : h0) += span;
      }
      lo = std::min(lo, l0);
      hi = std::max(hi, h0);
    }
    region[a] = affine ? std::clamp<int64_t>(hi - lo + 1, 1, full[a]) : 1;
  }
  return region;
}

std::map<std::string, std::vector<int64_t>> needed_extents(const PipelineView& view) {
  std::map<std::string, std::vector<Range>> needed;  // [min, min + extent) per dim
  // view.stages lists producers before consumers: walked backwards, a consumer's box is known
  // before its producers' are.
  for (auto it = view.stages.rbegin(); it != view.stages.rend(); ++it) {
    const Stage& st = *it;
    std::vector<Range> whole;
    for (const Loop& l : st.dims) whole.push_back({l.min, std::max<int64_t>(1, l.extent)});
    std::vector<Range> box = whole;
    if (!st.is_output && !st.consumers.empty()) {
      std::vector<int64_t> lo(st.dims.size(), INT64_MAX), hi(st.dims.size(), INT64_MIN);
      for (const Edge* e : view.edges_from(st.name)) {
        const Stage* c = view.stage(e->consumer);
        const auto cn = c ? needed.find(e->consumer) : needed.end();
        for (const Access& a : e->accesses) {
          if (cn == needed.end()) break;
          const Definition& d = c->definitions.at(static_cast<size_t>(a.definition));
          for (size_t k = 0; k < a.dims.size() && k < st.dims.size(); k++) {
            const AccessDim& ad = a.dims[k];
            int64_t l0 = ad.constant, h0 = ad.constant;
            bool known = ad.affine;
            for (size_t j = 0; known && j < ad.coeffs.size(); j++) {
              if (ad.coeffs[j] == 0) continue;
              Range r{d.loops[j].min, d.loops[j].extent};
              if (!d.loops[j].reduction)
                for (size_t m = 0; m < c->dims.size(); m++)
                  if (c->dims[m].name == d.loops[j].name) r = cn->second.at(m);
              known = r.extent > 0;
              const int64_t a0 = ad.coeffs[j] * r.min, a1 = ad.coeffs[j] * (r.min + r.extent - 1);
              l0 += std::min(a0, a1);
              h0 += std::max(a0, a1);
            }
            if (!known) {
              // Not affine (a clamp, a data-dependent index): Halide's interval of the index over
              // the consumer's whole extent, where the view found a constant one.
              const bool bounded = e->footprint_exact && k < e->footprint.size() && e->footprint[k].extent > 0;
              const Range& r = bounded ? e->footprint[k] : whole[k];
              l0 = r.min;
              h0 = r.min + r.extent - 1;
            }
            lo[k] = std::min(lo[k], l0);
            hi[k] = std::max(hi[k], h0);
          }
        }
        // An edge without call sites or of a consumer not walked (an extern one): the whole Func.
        if (e->accesses.empty() || cn == needed.end())
          for (size_t k = 0; k < whole.size(); k++) lo[k] = whole[k].min, hi[k] = whole[k].min + whole[k].extent - 1;
      }
      for (size_t k = 0; k < box.size(); k++) {
        if (lo[k] > hi[k]) continue;  // no consumer reads this dim: keep the whole
        const int64_t l = std::max(lo[k], whole[k].min), h = std::min(hi[k], whole[k].min + whole[k].extent - 1);
        if (h >= l) box[k] = {l, h - l + 1};
      }
    }
    needed[st.name] = std::move(box);
  }
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, box] : needed)
    for (const Range& r : box) out[name].push_back(r.extent);
  return out;
}

std::vector<Access> compose_accesses(const std::vector<Access>& inner, const Stage& via, const std::vector<Access>& outer) {
  // via's definition loop k -> its dim (the index into an outer access's dims).
  const Definition& vd = via.definitions.at(0);
  std::vector<int> dim_of(vd.loops.size(), -1);
  for (size_t k = 0; k < vd.loops.size(); k++)
    for (size_t j = 0; j < via.dims.size(); j++)
      if (via.dims[j].name == vd.loops[k].name) dim_of[k] = static_cast<int>(j);
  std::vector<Access> out;
  for (const Access& o : outer)
    for (const Access& in : inner) {
      Access a;
      a.definition = o.definition;
      for (const AccessDim& id : in.dims) {
        AccessDim d;
        d.affine = id.affine;
        d.constant = id.constant;
        std::set<int> deps;
        const size_t n = o.dims.empty() ? 0 : o.dims[0].coeffs.size();
        d.coeffs.assign(n, 0);
        for (int k : id.depends_on) {
          const int j = k < static_cast<int>(dim_of.size()) ? dim_of[static_cast<size_t>(k)] : -1;
          if (j < 0 || j >= static_cast<int>(o.dims.size())) {
            d.affine = false;
            continue;
          }
          const AccessDim& od = o.dims[static_cast<size_t>(j)];
          deps.insert(od.depends_on.begin(), od.depends_on.end());
          if (!od.affine || !id.affine) {
            d.affine = false;
            continue;
          }
          const int64_t c = static_cast<size_t>(k) < id.coeffs.size() ? id.coeffs[static_cast<size_t>(k)] : 0;
          d.constant += c * od.constant;
          for (size_t m = 0; m < n && m < od.coeffs.size(); m++) d.coeffs[m] += c * od.coeffs[m];
        }
        if (!d.affine) {
          d.coeffs.assign(n, 0);
          d.constant = 0;
        }
        d.depends_on.assign(deps.begin(), deps.end());
        d.expr = id.expr + " o " + via.name;
        a.dims.push_back(std::move(d));
      }
      out.push_back(std::move(a));
    }
  return out;
}

std::optional<UsesInStage> uses_through_inlined(const PipelineView& view, const std::string& producer,
                                                const std::function<std::optional<bool>(const std::string&)>& inlined) {
  const Stage* ps = view.stage(producer);
  if (!ps || ps->consumers.empty()) return std::nullopt;
  std::vector<std::pair<std::string, std::vector<Access>>> pending;  // a stage reached, the accesses that reach it
  auto follow = [&](const std::string& from, const std::vector<std::string>& to, const std::vector<Access>* inner,
                    const Stage* via) {
    for (const auto& c : to) {
      const Edge* e = view.edge(from, c);
      if (!e || e->accesses.empty()) return false;
      pending.push_back({c, inner ? compose_accesses(*inner, *via, e->accesses) : e->accesses});
    }
    return true;
  };
  if (!follow(producer, ps->consumers, nullptr, nullptr)) return std::nullopt;
  std::optional<UsesInStage> out;
  for (int steps = 0; !pending.empty(); steps++) {
    if (steps > 64) return std::nullopt;
    auto [name, accesses] = std::move(pending.back());
    pending.pop_back();
    const std::optional<bool> in = inlined(name);
    if (!in) return std::nullopt;
    if (!*in) {
      if (out && out->stage != name) return std::nullopt;
      if (!out) out = UsesInStage{name, {}};
      out->accesses.insert(out->accesses.end(), accesses.begin(), accesses.end());
      continue;
    }
    const Stage* via = view.stage(name);
    if (!via || via->definitions.size() != 1 || via->consumers.empty()) return std::nullopt;
    if (!follow(name, via->consumers, &accesses, via)) return std::nullopt;
  }
  return out;
}

}  // namespace ts
