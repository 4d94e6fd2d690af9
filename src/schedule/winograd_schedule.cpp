#include "schedule/winograd_schedule.h"

#include "schedule/schedule_builder.h"

#include <algorithm>
#include <map>

#include "graph/winograd.h"
#include "schedule/default_tile.h"
#include "schedule/schedule.h"

namespace ts {

namespace {

using Halide::Internal::Function;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The Winograd stages of the pipeline by suffix ("_wino_t", ...), or empty when it holds none
// or more than one conv's.
std::map<std::string, Function> winograd_stages(const std::map<std::string, Function>& env) {
  std::map<std::string, Function> found;
  for (const auto& [name, f] : env)
    for (const char* s : {"_wino_t", "_wino_v", "_wino_mr", "_wino_m", "_wino_y"})
      if (ends_with(func_base_name(name), s)) {
        if (found.count(s)) return {};
        found.emplace(s, f);
      }
  return found.size() == 5 ? found : std::map<std::string, Function>{};
}

// The pipeline's Winograd stages and facts, when it is one Winograd conv whose output (with its
// fused epilogue) is the pipeline's only, channel-blocked output.
struct WinogradPipeline {
  std::map<std::string, Function> stages;  // by suffix
  WinogradFacts facts;
};
std::optional<WinogradPipeline> winograd_pipeline(const std::vector<Halide::Func>& outputs) {
  if (outputs.size() != 1) return std::nullopt;
  const auto env = Halide::Internal::find_transitive_calls(outputs[0].function());
  WinogradPipeline p{winograd_stages(env), {}};
  if (p.stages.empty()) return std::nullopt;
  const std::vector<int64_t> ext = estimate_extents(outputs[0].function()), mext = estimate_extents(p.stages.at("_wino_m")),
                             vext = estimate_extents(p.stages.at("_wino_v"));
  // A 2-D conv's output has 5 arguments, a 3-D one's 6 (its frames before the block).
  const size_t rank = outputs[0].args().size();
  if ((rank != 5 && rank != 6) || ext.size() != rank || mext.size() != 7 || vext.size() != 7 || ext[0] != mext[0])
    return std::nullopt;
  // Every other stage is a rename or elementwise: inlined.
  for (const auto& [name, f] : env)
    if (f.has_update_definition() && f.name() != p.stages.at("_wino_mr").name()) return std::nullopt;
  // A 3-D conv reduces over its temporal taps too (the third reduction variable).
  const auto& rv = p.stages.at("_wino_mr").update(0).schedule().rvars();
  const int64_t* taps = rv.size() == 3 ? Halide::Internal::as_const_int(rv[2].extent) : nullptr;
  if (rv.size() != 2 && !taps) return std::nullopt;
  const int64_t frames = rank == 6 ? mext[6] : 1, kd = taps ? *taps : 1;
  p.facts = {mext[1], mext[4], mext[5], winograd_weight_bytes(mext[0] * mext[5], vext[0] * vext[5], kd), frames, kd};
  return p;
}

// Output-channel blocks per register tile, at most `most`: the register tiles split the blocks
// into groups (the tasks, with the weights streamed once), a remainder group guarded. The count
// whose groups finish soonest on `cores` (groups per core, rounded up, times their blocks; on the
// tasks' cores only when `tasks_over_blocks`), the larger on a tie, keeping kMinAccumulators
// where `most` has them. Inception-v3's 96-channel 35 x 35 convs (6 blocks) run 3 + 3, not
// 4 + 2, whose second task idles half the time.
int balanced_blocks(int64_t blocks, int most, int columns, bool tasks_over_blocks, int cores) {
  const int64_t threads = tasks_over_blocks ? std::max(cores, 1) : 1;
  int best = most;
  int64_t best_span = -1;
  for (int b = most; b >= 1; b--) {
    if (columns * b < kMinAccumulators && b < most) break;
    const int64_t groups = (blocks + b - 1) / b, span = (groups + threads - 1) / threads * b;
    if (best_span < 0 || span < best_span) {
      best = b;
      best_span = span;
    }
  }
  return best;
}

}  // namespace

WinogradTile plan_winograd_tile(const WinogradFacts& f, const DefaultKnobs& knobs, int cores) {
  WinogradTile t;
  // A 3-D conv's weights stream once: per tile row it would re-read the taps' weights and
  // transform the taps' input frames per row (measured: docs/benchmarks.md, "The default rule").
  t.weights_once = knobs.stream ? *knobs.stream != 0
                                : f.frames > 1 || f.taps > 1 || winograd_weights_once(f.weight_bytes, f.tiles_wide * f.tile_rows);
  if (knobs.columns) {
    t.columns = static_cast<int>(std::clamp<int64_t>(*knobs.columns, 1, std::clamp<int64_t>(f.tiles_wide, 1, 16)));
  } else {
    // 4-8 tiles, the count that computes the fewest extra tiles (the larger on a tie).
    int64_t best_waste = -1;
    for (int c = 8; c >= 4; c--) {
      const int64_t waste = (f.tiles_wide + c - 1) / c * c - f.tiles_wide;
      if (best_waste < 0 || waste < best_waste) {
        best_waste = waste;
        t.columns = c;
      }
    }
    t.columns = static_cast<int>(std::min<int64_t>(t.columns, f.tiles_wide));
  }
  t.blocks = knobs.blocks ? std::clamp(*knobs.blocks, 1, 4) : std::clamp(kMaxAccumulators / t.columns / 2 * 2, 1, 4);
  while (t.columns * t.blocks > kMaxAccumulators && t.blocks > 1) t.blocks--;
  t.blocks = static_cast<int>(std::min<int64_t>(t.blocks, f.blocks));
  if (!knobs.blocks) t.blocks = balanced_blocks(f.blocks, t.blocks, t.columns, t.weights_once, cores);
  return t;
}

std::optional<WinogradFacts> winograd_facts(const std::vector<Halide::Func>& outputs) {
  const auto p = winograd_pipeline(outputs);
  return p ? std::optional<WinogradFacts>(p->facts) : std::nullopt;
}

bool winograd_schedule(ScheduleBuilder& sb, const std::vector<Halide::Func>& outputs, const DefaultKnobs& knobs) {
  const auto p = winograd_pipeline(outputs);
  if (!p) return false;
  const auto& st = p->stages;
  const Halide::Func ht(st.at("_wino_t")), hv(st.at("_wino_v")), hmr(st.at("_wino_mr")), hm(st.at("_wino_m")), hy(st.at("_wino_y"));
  const WinogradTile tile = plan_winograd_tile(p->facts, knobs, host_cores());
  const std::vector<Halide::Var> oa = outputs[0].args(), ya = hy.args(), ma = hm.args(), ra = hmr.args(), va = hv.args(), ta = ht.args();
  const auto& rv = hmr.function().update(0).schedule().rvars();
  FuncRef o = sb.func(outputs[0]), t = sb.func(ht), v = sb.func(hv), mr = sb.func(hmr), m = sb.func(hm), y = sb.func(hy);
  // oa: lane, column, row, [frame,] block, batch; ya: ol, a, i, tx, ...; ma: ol, tx, jj, i, ty, cob, n;
  // ra: ol, tx, cob, jj, i, ty, n; va: il, tx, jj, i, ty, cb, n; ta: il, tx, j, i, ...
  // (n: the batch, with a 3-D conv's frames.)
  Halide::Var xo("xo"), xi("xi"), yo("yo"), yi("yi"), bo("bo"), bi("bi"), task("task"), txo("txo"), txi("txi");
  Halide::Var block = oa[oa.size() - 2], batch = oa.back();
  if (oa.size() == 6) {
    // A 3-D conv's output frames run with its batch, as the stages' last argument does.
    Halide::Var frames("frames");
    o.reorder(oa[0], oa[1], oa[2], block, oa[3], batch).fuse(oa[3], batch, frames);
    batch = frames;
  }
  // The output: lanes, then the 4x4 tile unrolled, then tiles; its first half transform per tile.
  o.compute_root()
      .split(oa[1], xo, xi, kWinogradTile, Halide::TailStrategy::GuardWithIf)
      .split(oa[2], yo, yi, kWinogradTile, Halide::TailStrategy::GuardWithIf)
      .vectorize(oa[0])
      .unroll(xi)
      .unroll(yi);
  y.compute_at(o, xo).vectorize(ya[0]).unroll(ya[1]).unroll(ya[2]);
  m.split(ma[1], txo, txi, tile.columns, Halide::TailStrategy::GuardWithIf);
  if (tile.weights_once) {
    // Tasks over groups of output-channel blocks: each streams its slice of the weights once,
    // for every tile (a 3-D conv's: of one output frame); the whole input transform is computed
    // first.
    o.split(block, bo, bi, tile.blocks, Halide::TailStrategy::GuardWithIf)
        .reorder(oa[0], xi, yi, xo, yo, bi, bo, batch)
        .fuse(bo, batch, task)
        .parallel(task);
    m.compute_at(o, task).reorder(ma[0], txi, ma[5], txo, ma[4], ma[2], ma[3]).vectorize(ma[0]);
    // Stored with the input blocks of a tile next to each other (the products read a tile's
    // columns over every input block): in its definition's order they were a whole plane of
    // tiles apart (113 KB on FCN-ResNet50's 2048-channel classifier), a page each.
    v.compute_root()
        .reorder_storage(va[0], va[1], va[5], va[2], va[3], va[4], va[6])
        .reorder(va[0], va[2], va[3], va[1], va[5], va[4], va[6])
        .vectorize(va[0])
        .unroll(va[2])
        .unroll(va[3]);
    v.fuse(va[4], va[6], task).parallel(task);
  } else {
    // Tasks over tile rows: each transforms its rows' input, then runs their products with the
    // weights streamed once per row (they stay in L2 when small).
    Halide::Var cbo("cbo"), cbi("cbi");
    o.reorder(oa[0], xi, yi, xo, block, yo, batch).fuse(yo, batch, task).parallel(task);
    m.compute_at(o, task)
        .split(ma[5], cbo, cbi, tile.blocks, Halide::TailStrategy::GuardWithIf)
        .reorder(ma[0], txi, cbi, txo, cbo, ma[2], ma[3])
        .vectorize(ma[0]);
    v.compute_at(o, task).reorder(va[0], va[2], va[3], va[1], va[5]).vectorize(va[0]).unroll(va[2]).unroll(va[3]);
  }
  // The register tile: columns x blocks accumulators, the reduction over input channels inside.
  mr.compute_at(m, txo).vectorize(ra[0]).unroll(ra[1]).unroll(ra[2]);
  // Inside it, the reduction: input channels, then a 3-D conv's temporal taps.
  std::vector<Halide::VarOrRVar> reduction_order = {ra[0], ra[1], ra[2]};
  for (const auto& r : rv) reduction_order.push_back(Halide::RVar(r.var));
  for (int k = 3; k < 7; k++) reduction_order.push_back(ra[k]);
  mr.update()
      .reorder(reduction_order)
      .vectorize(ra[0])
      .unroll(ra[1])
      .unroll(ra[2]);
  t.compute_at(v, va[1]).vectorize(ta[0]).unroll(ta[2]).unroll(ta[3]);
  return true;
}

}  // namespace ts
