#pragma once
// What schedule_space.cpp and space_candidates.cpp share of ScheduleSpace's internals: the
// placement candidates of a Func and the counting tables of a definition. Not for other users.
#include <algorithm>
#include <array>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "schedule/schedule_space.h"

namespace ts {

inline constexpr int kMaxLevels = 3;           // levels a loop is tiled into at most
inline constexpr int kU = kMaxUnrollBits;      // unroll budget: sum over unrolled loops of ceil(log2(extent))

struct ScheduleSpace::Placement_ {
  Placement placement = Placement::Inline;  // where the Func is computed
  ConsumerLoop at;                          // compute_at loop
  std::vector<int64_t> region;              // extent of each pure arg computed per iteration of `at` (root: what its consumers need, needed_extents)
  bool constant = false;                    // compute_at: Halide sees constant region extents (every consumer loop inside `at` has a constant extent)
};

// An option for one original loop: its tiling, plus (pure loops) whether its outermost level
// joins the parallel group, plus which of its levels is unrolled.
struct LoopOption {
  const std::vector<int64_t>* factors = nullptr;  // one of the loop's tilings (OrigLoop::tilings): empty = untiled; else inner level extents, innermost first
  int levels = 1;                 // 1 + factors.size()
  bool in_group = false;          // outermost level is one of the fused parallel loops
  int unrolled = -1;              // level index unrolled (0 = innermost), -1 = none
  int bits = 0;                   // unroll budget it spends: ceil(log2(unrolled extent))
  int free_levels = 0;            // levels left to the interleaved part of the order
};

// A loop's options sorted into groups that the counting tables cannot tell apart: pure loops'
// options by (free levels, in the parallel group, unroll bits), reduction loops' by (levels,
// unroll bits). A draw picks a group by its weight, then one of its options uniformly.
struct LoopOptions {
  struct Group {
    int levels = 0;          // free levels (pure loops) or levels (reduction loops) of its options
    int in_group = 0;        // 1: their outermost level joins the parallel group
    int bits = 0;            // unroll budget they spend
    size_t begin = 0, end = 0;  // their range in `all`
  };
  std::vector<LoopOption> all;  // sorted by group
  std::vector<Group> groups;

  LoopOptions() = default;
  LoopOptions(std::vector<LoopOption> options, bool reduction) : all(std::move(options)) {
    auto key = [reduction](const LoopOption& o) {
      return std::array<int, 3>{reduction ? o.levels : o.free_levels, o.in_group ? 1 : 0, o.bits};
    };
    std::stable_sort(all.begin(), all.end(), [&](const LoopOption& a, const LoopOption& b) { return key(a) < key(b); });
    for (size_t k = 0; k < all.size(); k++) {
      const auto kk = key(all[k]);
      if (groups.empty() || std::array<int, 3>{groups.back().levels, groups.back().in_group, groups.back().bits} != kk)
        groups.push_back({kk[0], kk[1], kk[2], k, k});
      groups.back().end = k + 1;
    }
  }
};

struct ScheduleSpace::DefSpace {
  // The totals a definition's loop options add up to: free pure levels, parallel group size,
  // unroll bits of pure and of reduction loops, reduction levels.
  struct Totals {
    int T, g, up, Tr, ur;
  };
  // The combos of one structural class (parallel group size, unrolled or not) of a vector choice.
  struct TotalsClass {
    int g = 0;                        // parallel group size
    bool unrolled = false;            // some loop unrolled
    std::vector<size_t> combos;       // indices into VecChoice::combos
    std::vector<double> cumulative;   // running sums of their weights
  };
  struct OrigLoop {
    std::string name;        // loop name (Var or RVar)
    bool rvar = false;       // reduction loop
    int64_t extent = 0;      // per-iteration extent in this region
    bool innermost = false;  // the Func's innermost storage dim (its first arg)
    std::vector<std::vector<int64_t>> tilings;  // factor lists (first: untiled)
  };
  struct VecChoice {
    int loop = -1;           // pure loop whose innermost level is vectorized (-1 = none)
    int width = 0;           // lanes
    // Suffix tables, pure loops: P[k][T][g][u] = sum over loops k.. of prod 1/free!, with T free
    // levels, g loops in the parallel group and u bits of unroll budget spent.
    // (one block, indexed by at(): a listing builds hundreds of these tables)
    std::vector<double> P;
    int T_size = 0, g_size = 0;  // extents of P's T and g axes
    double& at(int j, int T, int g, int u) { return P[((static_cast<size_t>(j) * T_size + T) * g_size + g) * (kU + 1) + u]; }
    double at(int j, int T, int g, int u) const {
      return P[((static_cast<size_t>(j) * T_size + T) * g_size + g) * (kU + 1) + u];
    }
    double total = 0;        // candidates with this vector choice
    std::vector<Totals> combos;   // every combination of totals with candidates under this choice
    std::vector<double> weights;  // its number of candidates (same order)
    std::vector<TotalsClass> classes;     // the combos by structural class
    LoopOptions vec_options;              // options of the vectorized loop under this choice
  };
  std::vector<OrigLoop> loops;          // the definition's original loops, innermost first
  std::vector<int> pure, rv;            // indices into loops
  int max_group = 0;                    // parallel loops allowed (0 when not at root)
  bool at = false;                      // computed at a consumer loop with a constant region: every pure level has a constant extent
  bool update = false;                  // an update definition (see options: no guarded vector tail)
  int max_unroll = 16;
  std::vector<VecChoice> vec;           // first: no vectorization
  // R[j][T][u]: sum over reduction loops j.. with T levels and u bits of unroll budget (each
  // option counts 1).
  std::vector<std::vector<std::array<double, kU + 1>>> R;
  double total = 0;                     // candidates of this definition
  std::vector<LoopOptions> loop_options;  // per loop, its options when not vectorized

  // Options of loop `k` under vector choice `v` (options(), kept and grouped).
  const LoopOptions& options_of(int k, const VecChoice& v) const {
    return v.loop == k ? v.vec_options : loop_options[static_cast<size_t>(k)];
  }

  int max_T() const { return kMaxLevels * static_cast<int>(loops.size()); }

  // Options of loop `k` under vector choice `v`.
  std::vector<LoopOption> options(int k, const VecChoice& v) const {
    std::vector<LoopOption> out;
    const OrigLoop& l = loops[k];
    for (const auto& f : l.tilings) {
      LoopOption o;
      o.factors = &f;
      o.levels = 1 + static_cast<int>(f.size());
      const bool vk = v.loop == k;
      if (vk) {
        // An untiled loop at least one vector long may run a guarded tail, but only along the
        // innermost storage dim of a pure definition: strided, Halide 14 computed wrong values (a
        // Max over 9 rows by 8 lanes) and in an update wrong sums and crashes (a LogSoftmax's).
        const bool guarded_ok = l.innermost && !update;
        if (f.empty() ? l.extent < v.width || (!guarded_ok && l.extent % v.width != 0) : f[0] % v.width != 0) continue;
      }
      // Unrollable levels: constant extent <= max_unroll. The outermost level of a pure loop has
      // a constant extent only in a compute_at region; the vector level can unroll the serial
      // loop just outside its lanes when it is longer than a vector.
      const int64_t prod = std::accumulate(f.begin(), f.end(), int64_t{1}, std::multiplies<>());
      std::vector<std::pair<int, int64_t>> unrollable;  // (level, extent)
      for (int lev = 0; lev < o.levels; lev++) {
        int64_t e;
        if (lev < static_cast<int>(f.size())) e = f[lev];
        else if (l.rvar || at) e = (l.extent + prod - 1) / prod;
        else continue;  // outermost level of a root Func's pure loop: not a constant for Halide
        if (vk && lev == 0) {
          if (!f.empty() || at) e /= v.width;
          else continue;
        }
        if (e >= 2 && e <= max_unroll) unrollable.push_back({lev, e});
      }
      for (int g = 0; g <= (l.rvar || max_group == 0 ? 0 : 1); g++) {
        if (g && vk && o.levels < 2) continue;  // the only level is the vector loop
        for (int u = -1; u < static_cast<int>(unrollable.size()); u++) {
          LoopOption p = o;
          p.in_group = g;
          p.unrolled = u < 0 ? -1 : unrollable[u].first;
          p.bits = u < 0 ? 0 : unroll_bits(unrollable[u].second);
          if (p.bits > kU) continue;
          p.free_levels = o.levels - (vk ? 1 : 0) - g;
          out.push_back(p);
        }
      }
    }
    return out;
  }
};

}  // namespace ts
