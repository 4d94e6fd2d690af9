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

std::vector<NestLoop> scheduled_nest(const StageSchedule& ss, const std::vector<OrigLoop>& orig) {
  struct Level {
    std::string name;  // level name
    int o;             // index into orig
    int64_t extent;    // iterations
  };
  const int n = static_cast<int>(orig.size());
  std::vector<Level> levels;  // default nest order, innermost first
  std::vector<int> nlevels(n, 1);
  for (int o = 0; o < n; o++) {
    const LoopTiling* t = nullptr;
    for (const auto& x : ss.tiling)
      if (x.loop == orig[o].name) t = &x;
    if (!t) {
      levels.push_back({orig[o].name, o, orig[o].extent});
      continue;
    }
    const auto lv = t->level_names();
    int64_t prod = 1;
    for (size_t k = 0; k < t->factors.size(); k++) {
      levels.push_back({lv[k], o, t->factors[k]});
      prod *= std::max<int64_t>(1, t->factors[k]);
    }
    levels.push_back({lv.back(), o, (orig[o].extent + prod - 1) / prod});
    nlevels[o] = static_cast<int>(lv.size());
  }
  if (!ss.order.empty()) {
    std::vector<Level> re;
    for (const auto& name : ss.order)
      for (const auto& l : levels)
        if (l.name == name) re.push_back(l);
    levels = std::move(re);
  }
  auto member = [&](const std::string& name) {
    if (name == ss.parallel) return true;
    return std::find(ss.parallel_fused.begin(), ss.parallel_fused.end(), name) != ss.parallel_fused.end();
  };
  int64_t fused_extent = 1;
  if (!ss.parallel.empty())
    for (const auto& l : levels)
      if (member(l.name)) fused_extent *= l.extent;

  std::vector<int> seen(n, -1);          // levels of each original loop inside the current one (-1: none)
  std::vector<int64_t> covered(n, 1);    // product of their extents
  auto inside_now = [&]() {
    std::vector<int64_t> in(n, 1);
    for (int o = 0; o < n; o++) {
      if (seen[o] < 0) continue;
      in[orig[o].def_loop] = seen[o] == nlevels[o] ? orig[o].extent : std::min(covered[o], orig[o].extent);
    }
    return in;
  };
  auto enter = [&](const Level& l) {  // the level is now inside the loops still to come
    seen[l.o] = std::max(seen[l.o], 0) + 1;
    covered[l.o] *= l.extent;
  };
  std::vector<NestLoop> out;
  for (const Level& l : levels) {
    const bool red = orig[l.o].reduction;
    if (!ss.parallel.empty() && member(l.name)) {
      // The fused parallel loop stands where its innermost member is; members are consecutive.
      if (l.name == ss.parallel)
        out.push_back({ss.parallel_loop_name(), orig[l.o].def_loop, fused_extent, LoopKind::Parallel, red, true, inside_now()});
      enter(l);
      continue;
    }
    const bool unrolled = std::find(ss.unroll.begin(), ss.unroll.end(), l.name) != ss.unroll.end();
    NestLoop nl{l.name, orig[l.o].def_loop, l.extent, unrolled ? LoopKind::Unrolled : LoopKind::Serial, red, true, {}};
    if (l.name == ss.vectorize && ss.vector_width > 0) {
      const int64_t w = ss.vector_width;
      if (l.extent == w) {
        nl.kind = LoopKind::Vectorized;
        nl.site = false;  // the vector lanes themselves
      } else {
        // Split by the width with a guarded tail: the lanes, then the serial loop named L.
        out.push_back({l.name + ".v", orig[l.o].def_loop, w, LoopKind::Vectorized, red, false, inside_now()});
        seen[l.o] = 0;
        covered[l.o] = w;
        nl.extent = (l.extent + w - 1) / w;
        nl.site = l.extent % w == 0;  // a guarded tail realizes less than a vector
        nl.inside = inside_now();
        out.push_back(std::move(nl));
        seen[l.o] = 1;
        covered[l.o] = l.extent;
        continue;
      }
    }
    nl.inside = inside_now();
    out.push_back(std::move(nl));
    enter(l);
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
