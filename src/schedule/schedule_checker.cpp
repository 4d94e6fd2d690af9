#include "schedule/schedule_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace ts::checker {

const char* step_name_of(StepKind k) {
  switch (k) {
    case StepKind::Vectorize: return "vectorizes";
    case StepKind::Parallel: return "parallelizes";
    default: return "schedules";
  }
}

std::string names_of(const std::vector<LoopInfo>& loops) {
  std::string s;
  for (const auto& l : loops)
    if (!l.hidden) s += (s.empty() ? "" : ", ") + l.name;
  return s.empty() ? "none" : s;
}

int find_loop(const std::vector<LoopInfo>& loops, const std::string& n) {
  for (size_t i = 0; i < loops.size(); i++)
    if (loops[i].name == n && !loops[i].hidden) return static_cast<int>(i);
  return -1;
}

std::string stage_name(const std::string& func, int definition) {
  return definition == 0 ? func : fmt::format("{}.update({})", func, definition - 1);
}

// Halide's default nest of definition d: args for d = 0; RVars then the pure args an update uses.
std::vector<LoopInfo> original_loops(const Function& f, int d) {
  std::vector<LoopInfo> out;
  if (d == 0) {
    for (const auto& a : f.args()) out.push_back({a, false, 0});
    return out;
  }
  const Halide::Internal::Definition& def = f.update(d - 1);
  for (const auto& rv : def.schedule().rvars()) {
    const int64_t* e = Halide::Internal::as_const_int(rv.extent);
    out.push_back({rv.var, true, e ? *e : 0});
  }
  for (size_t i = 0; i < def.args().size() && i < f.args().size(); i++) {
    const auto* v = def.args()[i].as<Halide::Internal::Variable>();
    if (v && !v->param.defined() && !v->reduction_domain.defined() && v->name == f.args()[i])
      out.push_back({v->name, false, 0});
  }
  return out;
}


// The loops of definition d as its schedule lists them now (innermost first): the nest of a
// Func rfactor made or changed, whose dims differ from the default nest original_loops() gives.
std::vector<LoopInfo> current_loops(const Function& f, int d) {
  const Halide::Internal::StageSchedule& sch = d == 0 ? f.definition().schedule() : f.update(d - 1).schedule();
  std::map<std::string, int64_t> rvar_extent;
  for (const auto& rv : sch.rvars())
    if (const int64_t* e = Halide::Internal::as_const_int(rv.extent)) rvar_extent[rv.var] = *e;
  std::vector<LoopInfo> out;
  for (const auto& dim : sch.dims()) {
    if (dim.var == Halide::Var::outermost().name()) continue;
    const auto it = rvar_extent.find(dim.var);
    out.push_back({dim.var, dim.is_rvar(), it == rvar_extent.end() ? 0 : it->second});
  }
  return out;
}

// Names (base names) of the Funcs a definition calls (values, args, predicate, RDom bounds).
std::set<std::string> definition_calls(const Halide::Internal::Definition& d, const std::map<std::string, std::string>& made) {
  struct Calls : Halide::Internal::IRGraphVisitor {
    const std::map<std::string, std::string>& made;  // full name -> schedule name of Funcs restructure() made
    std::set<std::string> names;
    explicit Calls(const std::map<std::string, std::string>& m) : made(m) {}
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      if (op->call_type == Halide::Internal::Call::Halide) {
        const auto it = made.find(op->name);
        names.insert(it != made.end() ? it->second : func_base_name(op->name));
      }
      IRGraphVisitor::visit(op);
    }
  } c(made);
  for (const auto& e : d.values()) e.accept(&c);
  for (const auto& e : d.args()) e.accept(&c);
  if (d.predicate().defined()) d.predicate().accept(&c);
  for (const auto& rv : d.schedule().rvars()) {
    rv.min.accept(&c);
    rv.extent.accept(&c);
  }
  return c.names;
}


std::optional<std::string> Checker::run() {
  std::set<std::pair<std::string, int>> seen;
  for (const auto& ss : sched_.stages) {
    if (!seen.insert({ss.func, ss.definition}).second) return fmt::format("stage '{}' is decided twice", ss.name());
    if (auto why = check_entry(ss)) return why;
  }
  for (const auto& ss : sched_.stages) {
    Nest n;
    if (auto why = plan(ss, n)) return fmt::format("stage '{}': {}", ss.name(), *why);
    nests_[{ss.func, ss.definition}] = n;
  }
  for (const auto& ss : sched_.stages)
    if (ss.definition == 0)
      if (auto why = check_placement(ss)) return fmt::format("stage '{}': {}", ss.name(), *why);
  return std::nullopt;
}

// The stage exists, is unscheduled, and an update entry carries no placement.
std::optional<std::string> Checker::check_entry(const StageSchedule& ss) {
  auto it = env.find(ss.func);
  if (it == env.end()) return fmt::format("stage '{}': no Func '{}' in the pipeline", ss.name(), ss.func);
  if (ambiguous_.count(ss.func)) return fmt::format("stage '{}': several Funcs of the pipeline are named '{}'", ss.name(), ss.func);
  const Function& fn = it->second;
  const int defs = 1 + static_cast<int>(fn.updates().size());
  if (ss.definition < 0 || ss.definition >= defs)
    return fmt::format("stage '{}': Func '{}' has {} update definition(s)", ss.name(), ss.func, defs - 1);
  if (ss.definition > 0 && (ss.placement != Placement::Inline || ss.compute_at != ConsumerLoop{} || ss.store_root ||
                            !ss.store_at.empty() || !ss.storage_order.empty()))
    return fmt::format("stage '{}': placement and storage belong to the pure definition ('{}')", ss.name(), ss.func);
  if (ss.definition > 0 && (!ss.staged_for.empty() || !ss.task_prefetches.empty() || !ss.memory.empty()))
    return fmt::format("stage '{}': staging copies, task prefetches and memory belong to the pure definition ('{}')", ss.name(), ss.func);
  if (ss.definition == 0 && !ss.rfactor.empty())
    return fmt::format("stage '{}': rfactor applies to an update definition", ss.name());
  if (restructured_.count(ss.func) || wrapper_of_.count(ss.func)) return std::nullopt;  // made by this schedule
  const auto& dims = ss.definition == 0 ? fn.definition().schedule().dims() : fn.update(ss.definition - 1).schedule().dims();
  std::vector<std::string> have, want;
  for (const auto& d : dims)
    if (d.var != Halide::Var::outermost().name()) have.push_back(d.var);
  for (const auto& l : original_loops(fn, ss.definition)) want.push_back(l.name);
  if (have != want) return fmt::format("stage '{}' was already scheduled (apply a schedule to unscheduled Funcs)", ss.name());
  return std::nullopt;
}

// Checks the stage's tilings against its loops (orig) and the Func's estimated extents, and
// indexes them by loop.
std::optional<std::string> check_tiling(const StageSchedule& ss, const std::vector<LoopInfo>& orig,
                                        const std::map<std::string, int64_t>& estimate, bool computed_at,
                                        std::map<std::string, const LoopTiling*>& tiles) {
  for (const auto& t : ss.tiling) {
    const int k = find_loop(orig, t.loop);
    if (k < 0) return fmt::format("tiles loop '{}', which is not a loop of this definition (its loops: {})", t.loop, names_of(orig));
    if (tiles.count(t.loop)) return fmt::format("tiles loop '{}' twice (a loop is split at most once per level)", t.loop);
    if (t.factors.empty() || t.factors.size() > 2)
      return fmt::format("tiling of loop '{}' has {} factors (1 or 2: up to 3 levels)", t.loop, t.factors.size());
    int64_t prod = 1;
    for (int64_t f : t.factors) {
      if (f < 1 || f > INT_MAX) return fmt::format("tiling factor {} of loop '{}' is not in [1, 2^31)", f, t.loop);
      prod *= f;
    }
    if (prod > INT_MAX) return fmt::format("tiling factors of loop '{}' multiply to {} (at most 2^31 - 1)", t.loop, prod);
    if (t.tail == Tail::ShiftInwards && ss.definition > 0)
      return fmt::format("loop '{}': shift_inwards is only legal in a pure definition (an update would run twice)", t.loop);
    if (orig[k].rvar && (t.tail == Tail::ShiftInwards || t.tail == Tail::RoundUp))
      return fmt::format("reduction loop '{}': only tail auto or guard_with_if keep the reduction unchanged", t.loop);
    if (!orig[k].rvar && estimate.count(t.loop)) {
      const int64_t e = estimate.at(t.loop);
      // Halide's auto tail shifts inwards in a pure definition and rounds up in an update.
      const bool shifts = t.tail == Tail::ShiftInwards || (t.tail == Tail::Auto && ss.definition == 0);
      if (shifts && prod > e)
        return fmt::format("loop '{}': a {} split by {} exceeds its extent {} (use guard_with_if)", t.loop,
                           t.tail == Tail::ShiftInwards ? "shift_inwards" : "auto (shift_inwards)", prod, e);
      // Rounding up computes past the Func's extent and reads its producers there (inputs out
      // of bounds).
      // A compute_at Func rounds up its per-iteration region instead, which validate() does not
      // know (ScheduleSpace only offers divisors of it).
      const bool rounds_up = t.tail == Tail::RoundUp || (t.tail == Tail::Auto && ss.definition > 0);
      if (rounds_up && !computed_at && e % prod != 0)
        return fmt::format("loop '{}': a {} split by {} rounds its extent {} up (use guard_with_if)", t.loop,
                           t.tail == Tail::RoundUp ? "round_up" : "auto (round_up in an update)", prod, e);
    }
    tiles[t.loop] = &t;
  }
  return std::nullopt;
}

// The loops after tiling (outermost level first in place of each tiled loop); the reduction
// loops' names go to out.rvars.
std::optional<std::string> tile_loops(const std::vector<LoopInfo>& orig, const std::map<std::string, const LoopTiling*>& tiles,
                                      std::vector<LoopInfo>& loops, Nest& out) {
  for (const auto& l : orig) {
    if (l.rvar) out.rvars.insert(l.name);
    auto it = tiles.find(l.name);
    if (it == tiles.end()) {
      loops.push_back(l);
      continue;
    }
    const LoopTiling& t = *it->second;
    const auto lv = t.level_names();
    int64_t prod = 1;
    for (size_t k = 0; k < t.factors.size(); k++) {
      loops.push_back({lv[k], l.rvar, t.factors[k]});
      prod *= t.factors[k];
    }
    loops.push_back({lv.back(), l.rvar, l.extent > 0 ? (l.extent + prod - 1) / prod : 0});
    if (l.rvar) {
      for (const auto& n : lv) out.rvars.insert(n);
      out.rvars.insert(t.middle_name());
    }
  }
  std::set<std::string> names;
  for (const auto& l : loops)
    if (!names.insert(l.name).second) return fmt::format("tiling makes a second loop named '{}'", l.name);
  for (const auto& [n, t] : tiles)
    if (t->factors.size() == 2 && !names.insert(t->middle_name()).second)
      return fmt::format("tiling makes a second loop named '{}'", t->middle_name());
  return std::nullopt;
}

// Reorders the loops as ss.order lists them (every loop, reduction loops in their order).
std::optional<std::string> reorder_loops(const StageSchedule& ss, std::vector<LoopInfo>& loops) {
  if (ss.order.empty()) return std::nullopt;
  std::vector<LoopInfo> ordered;
  std::set<std::string> used;
  for (const auto& n : ss.order) {
    const int k = find_loop(loops, n);
    if (k < 0) return fmt::format("order names loop '{}', which does not exist (loops after tiling: {})", n, names_of(loops));
    if (!used.insert(n).second) return fmt::format("order names loop '{}' twice", n);
    ordered.push_back(loops[k]);
  }
  for (const auto& l : loops)
    if (!used.count(l.name)) return fmt::format("order leaves out loop '{}' (it lists every loop after tiling)", l.name);
  std::vector<std::string> before, after;
  for (const auto& l : loops)
    if (l.rvar) before.push_back(l.name);
  for (const auto& l : ordered)
    if (l.rvar) after.push_back(l.name);
  for (size_t i = 0; i < before.size(); i++)
    if (before[i] != after[i])
      return fmt::format("order moves reduction loop '{}' past reduction loop '{}' (reduction loops keep their relative order)",
                         after[i], before[i]);
  loops = ordered;
  return std::nullopt;
}

// Marks (or splits off) the vectorized loop.
std::optional<std::string> vectorize_loop(const StageSchedule& ss, std::vector<LoopInfo>& loops) {
  if (ss.vectorize.empty() && ss.vector_width == 0) return std::nullopt;
  if (ss.vectorize.empty()) return fmt::format("vector width {} without a vectorized loop", ss.vector_width);
  const int k = find_loop(loops, ss.vectorize);
  if (k < 0) return fmt::format("vectorizes loop '{}', which does not exist (loops: {})", ss.vectorize, names_of(loops));
  if (loops[k].rvar) return fmt::format("vectorizes reduction loop '{}' (a race: only pure loops are vectorized)", ss.vectorize);
  const int w = ss.vector_width;
  if (w < 2 || w > 64 || (w & (w - 1)) != 0)
    return fmt::format("vector width {} of loop '{}' is not a power of two in [2, 64]", w, ss.vectorize);
  const int64_t e = ss.level_extent(ss.vectorize);
  if (e > 0 && e % w != 0) return fmt::format("vector width {} does not divide the extent {} of loop '{}'", w, e, ss.vectorize);
  if (e == w) {
    loops[k].kind = LoopKind::Vectorized;
  } else {  // split: the loop named is the serial outer part, the vector lanes just inside it
    loops[k].extent = e > 0 ? e / w : 0;
    loops.insert(loops.begin() + k, LoopInfo{ss.vectorize, false, w, LoopKind::Vectorized, true});
  }
  return std::nullopt;
}

// Marks the unrolled loops.
std::optional<std::string> unroll_loops(const StageSchedule& ss, bool computed_at, std::vector<LoopInfo>& loops) {
  std::set<std::string> unrolled;
  for (const auto& n : ss.unroll) {
    const int k = find_loop(loops, n);
    if (k < 0) return fmt::format("unrolls loop '{}', which does not exist (loops: {})", n, names_of(loops));
    if (!unrolled.insert(n).second) return fmt::format("unrolls loop '{}' twice", n);
    if (loops[k].kind == LoopKind::Vectorized) return fmt::format("loop '{}' is both vectorized and unrolled", n);
    // A compute_at Func's pure loops span its per-iteration region, constant when the consumer's
    // tiles are; Halide rejects the unroll at compile time when it is not.
    if (loops[k].extent <= 0 && !(computed_at && !loops[k].rvar))
      return fmt::format("unrolls loop '{}', whose extent is not a constant (unroll an inner tiling level or a reduction loop)", n);
    if (loops[k].extent > kMaxUnroll) return fmt::format("unrolls loop '{}' of extent {} (at most {})", n, loops[k].extent, kMaxUnroll);
    loops[k].kind = LoopKind::Unrolled;
  }
  return std::nullopt;
}

// Replaces the parallel loop and the loops fused into it by one parallel loop.
std::optional<std::string> fuse_parallel_loops(const StageSchedule& ss, std::vector<LoopInfo>& loops) {
  if (ss.parallel.empty() && ss.parallel_fused.empty()) return std::nullopt;
  if (ss.parallel.empty()) return std::string("fuses loops into a parallel loop but names none");
  const int p = find_loop(loops, ss.parallel);
  if (p < 0) return fmt::format("parallel loop '{}' does not exist (loops: {})", ss.parallel, names_of(loops));
  std::vector<std::string> group{ss.parallel};
  group.insert(group.end(), ss.parallel_fused.begin(), ss.parallel_fused.end());
  int64_t extent = 1;
  for (size_t g = 0; g < group.size(); g++) {
    const int k = find_loop(loops, group[g]);
    if (k < 0)
      return fmt::format("fuses loop '{}' into parallel loop '{}', but it does not exist (loops: {})", group[g], ss.parallel,
                         names_of(loops));
    if (loops[k].rvar) return fmt::format("parallelizes reduction loop '{}' (a race: only pure loops run in parallel)", group[g]);
    if (loops[k].kind != LoopKind::Serial) return fmt::format("loop '{}' is parallel and also vectorized or unrolled", group[g]);
    if (k != p + static_cast<int>(g))
      return fmt::format("fuses loop '{}' into parallel loop '{}', but it is not the next loop outside (loops: {})", group[g],
                         ss.parallel, names_of(loops));
    extent = extent > 0 && loops[k].extent > 0 ? extent * loops[k].extent : 0;
  }
  const std::string fused = ss.parallel_loop_name();
  if (group.size() > 1 && find_loop(loops, fused) >= 0)
    return fmt::format("the fused parallel loop's name '{}' is already a loop", fused);
  loops.erase(loops.begin() + p, loops.begin() + p + static_cast<int>(group.size()));
  loops.insert(loops.begin() + p, LoopInfo{fused, false, extent, LoopKind::Parallel});
  return std::nullopt;
}

// Applies the stage's steps (LoopStep) to its loops as Halide does: a split puts the inner loop
// where the old one was and the outer just outside it, a fuse puts the fused loop where the
// inner one was, a reorder permutes the loops it names among their own places.
std::optional<std::string> plan_steps(const StageSchedule& ss, std::vector<LoopInfo>& loops, Nest& out) {
  auto fresh = [&](const std::string& n, const std::string& old) {
    return n == old || (find_loop(loops, n) < 0 && !out.rvars.count(n));
  };
  for (size_t i = 0; i < ss.steps.size(); i++) {
    const LoopStep& st = ss.steps[i];
    const auto at = [&](size_t k) { return k < st.loops.size() ? find_loop(loops, st.loops[k]) : -1; };
    const std::string what = fmt::format("step {} ({})", i, st.loops.empty() ? "" : st.loops[0]);
    if (st.loops.empty()) return what + ": names no loop";
    const int k = at(0);
    if (k < 0 && st.kind != StepKind::Reorder)
      return fmt::format("{}: no loop '{}' (loops: {})", what, st.loops[0], names_of(loops));
    switch (st.kind) {
      case StepKind::Split: {
        if (st.loops.size() != 3) return what + ": a split names old, outer and inner loops";
        const auto& [old, outer, inner] = std::tie(st.loops[0], st.loops[1], st.loops[2]);
        if (st.factor < 1 || st.factor > INT_MAX) return fmt::format("{}: split factor {} is not in [1, 2^31)", what, st.factor);
        if (outer == inner || !fresh(outer, old) || !fresh(inner, old) || inner == old)
          return fmt::format("{}: split of '{}' into '{}' and '{}' reuses a loop name", what, old, outer, inner);
        if (st.tail == Tail::ShiftInwards && ss.definition > 0)
          return fmt::format("{}: shift_inwards is only legal in a pure definition (an update would run twice)", what);
        if (loops[k].rvar && (st.tail == Tail::ShiftInwards || st.tail == Tail::RoundUp))
          return fmt::format("{}: reduction loop '{}' takes tail auto or guard_with_if only", what, old);
        LoopInfo in = loops[k], outl = loops[k];
        in.name = inner;
        in.extent = st.factor;
        outl.name = outer;
        outl.extent = loops[k].extent > 0 ? (loops[k].extent + st.factor - 1) / st.factor : 0;
        if (loops[k].rvar) out.rvars.insert({inner, outer});
        loops[k] = in;
        loops.insert(loops.begin() + k + 1, outl);
        break;
      }
      case StepKind::Fuse: {
        if (st.loops.size() != 3) return what + ": a fuse names inner, outer and fused loops";
        const int o = at(1);
        if (o < 0 || o == k) return fmt::format("{}: no loop '{}' to fuse (loops: {})", what, st.loops[1], names_of(loops));
        if (loops[k].rvar != loops[o].rvar) return fmt::format("{}: fuses a reduction loop with a pure loop", what);
        // The fused loop may take the name of one of the two it replaces.
        if (!fresh(st.loops[2], st.loops[0]) && st.loops[2] != st.loops[1])
          return fmt::format("{}: the fused loop's name '{}' is taken", what, st.loops[2]);
        LoopInfo f = loops[k];
        f.name = st.loops[2];
        f.extent = loops[k].extent > 0 && loops[o].extent > 0 ? loops[k].extent * loops[o].extent : 0;
        if (f.rvar) out.rvars.insert(f.name);
        loops[k] = f;
        loops.erase(loops.begin() + o);
        break;
      }
      case StepKind::Reorder: {
        std::vector<int> places;
        for (size_t j = 0; j < st.loops.size(); j++) {
          const int p = at(j);
          if (p < 0) return fmt::format("{}: reorder names loop '{}', which does not exist (loops: {})", what, st.loops[j], names_of(loops));
          if (std::count(places.begin(), places.end(), p)) return fmt::format("{}: reorder names loop '{}' twice", what, st.loops[j]);
          places.push_back(p);
        }
        // Reduction loops may change their relative order here: Halide allows it where it proves
        // the update associative and commutative (Adams2019 does it), and apply() reports its
        // refusal otherwise.
        std::vector<LoopInfo> moved;
        for (const int p : places) moved.push_back(loops[p]);
        std::sort(places.begin(), places.end());
        for (size_t j = 0; j < places.size(); j++) loops[places[j]] = moved[j];
        break;
      }
      case StepKind::Vectorize:
      case StepKind::Unroll:
      case StepKind::Parallel: {
        if (loops[k].kind != LoopKind::Serial) return fmt::format("{}: loop '{}' is already vectorized, unrolled or parallel", what, st.loops[0]);
        // A reduction loop of one iteration races with nothing (Halide accepts it; Mullapudi2016
        // parallelizes one).
        if (loops[k].rvar && st.kind != StepKind::Unroll && loops[k].extent != 1)
          return fmt::format("{}: {} reduction loop '{}' (a race)", what, step_name_of(st.kind), st.loops[0]);
        const LoopKind kind = st.kind == StepKind::Vectorize ? LoopKind::Vectorized
                              : st.kind == StepKind::Unroll  ? LoopKind::Unrolled : LoopKind::Parallel;
        if (st.factor <= 0) {
          loops[k].kind = kind;
          break;
        }
        if (st.kind == StepKind::Parallel) return what + ": parallel takes no factor";
        // Halide splits off an anonymous inner loop of `factor` iterations: not nameable.
        loops.insert(loops.begin() + k, LoopInfo{st.loops[0] + ".lanes", loops[k].rvar, st.factor, kind, true});
        loops[k + 1].extent = loops[k + 1].extent > 0 ? (loops[k + 1].extent + st.factor - 1) / st.factor : 0;
        break;
      }
    }
  }
  return std::nullopt;
}

// Builds the nest the stage's loop decisions give, or says why they are invalid.
std::optional<std::string> Checker::plan(const StageSchedule& ss, Nest& out) {
  const Function& fn = env.at(ss.func);
  const std::vector<LoopInfo> orig = loops_of(ss.func, ss.definition);
  std::map<std::string, int64_t> estimate;  // Func estimates per arg
  for (const auto& b : fn.schedule().estimates())
    if (const int64_t* e = Halide::Internal::as_const_int(b.extent)) estimate[b.var] = *e;
  const bool computed_at = where(ss.func) == Where::At;
  std::map<std::string, const LoopTiling*> tiles;
  std::vector<LoopInfo> loops;
  if (auto why = check_tiling(ss, orig, estimate, computed_at, tiles)) return why;
  if (auto why = tile_loops(orig, tiles, loops, out)) return why;
  if (auto why = reorder_loops(ss, loops)) return why;
  if (auto why = vectorize_loop(ss, loops)) return why;
  if (auto why = unroll_loops(ss, computed_at, loops)) return why;
  if (auto why = fuse_parallel_loops(ss, loops)) return why;
  if (auto why = plan_steps(ss, loops, out)) return why;
  for (const auto& p : ss.prefetches) {
    if (!buffers.count(p.buffer)) return fmt::format("prefetches '{}', which is not an input buffer of the pipeline", p.buffer);
    const int at = find_loop(loops, p.at), from = find_loop(loops, p.from);
    if (at < 0 || from < 0)
      return fmt::format("prefetch of '{}' at loop '{}' from loop '{}': no such loop (loops: {})", p.buffer, p.at, p.from, names_of(loops));
    if (from < at) return fmt::format("prefetch of '{}': loop '{}' is inside loop '{}' it is issued at", p.buffer, p.from, p.at);
  }
  for (const auto& q : ss.task_prefetches) {
    if (!buffers.count(q.buffer)) return fmt::format("task prefetch of '{}', which is not an input buffer of the pipeline", q.buffer);
    const int t = find_loop(loops, q.task_loop);
    if (t < 0 || loops[t].kind != LoopKind::Parallel)
      return fmt::format("task prefetch of '{}': '{}' is not a parallel loop (loops: {})", q.buffer, q.task_loop, names_of(loops));
  }
  out.loops = loops;
  return std::nullopt;
}

std::optional<std::string> Checker::check_placement(const StageSchedule& ss) {
  const Function& fn = env.at(ss.func);
  const bool is_output = output_names.count(ss.func) > 0;
  if (ss.placement != Placement::ComputeAt && ss.compute_at != ConsumerLoop{})
    return std::string("a compute_at loop is given but the placement is not compute_at");
  if (ss.placement != Placement::ComputeAt && (ss.store_root || !ss.store_at.empty()))
    return std::string("a storage level is only chosen with placement compute_at");
  switch (ss.placement) {
    case Placement::Inline:
      if (is_output) return fmt::format("output '{}' cannot be inlined", ss.func);
      if (fn.has_update_definition()) return fmt::format("'{}' has update definitions and cannot be inlined", ss.func);
      if (ss.decides_loops() || !ss.storage_order.empty() || !ss.memory.empty())
        return std::string("an inlined Func has no loops or storage to schedule");
      break;
    case Placement::Root: break;
    case Placement::ComputeAt:
      if (is_output) return fmt::format("output '{}' is computed at root, not at a consumer loop", ss.func);
      if (auto why = check_compute_at(ss)) return why;
      break;
  }
  if (!ss.storage_order.empty()) {
    std::set<std::string> args(fn.args().begin(), fn.args().end()), used;
    for (const auto& a : ss.storage_order) {
      if (!args.count(a)) return fmt::format("storage_order names '{}', which is not an argument of '{}'", a, ss.func);
      if (!used.insert(a).second) return fmt::format("storage_order names '{}' twice", a);
    }
    if (used.size() != args.size()) return fmt::format("storage_order must list every argument of '{}'", ss.func);
  }
  return std::nullopt;
}

std::optional<std::string> Checker::check_compute_at(const StageSchedule& ss) {
  const ConsumerLoop& c = ss.compute_at;
  if (!env.count(c.func)) return fmt::format("computed at a loop of '{}', which is not a Func of the pipeline", c.func);
  if (ambiguous_.count(c.func)) return fmt::format("computed at a loop of '{}', a name several Funcs share", c.func);
  if (c.func == ss.func) return std::string("computed at one of its own loops");
  const Function& cf = env.at(c.func);
  if (c.definition < 0 || c.definition > static_cast<int>(cf.updates().size()))
    return fmt::format("computed at definition {} of '{}', which has {} update definition(s)", c.definition, c.func,
                       cf.updates().size());
  switch (where(c.func)) {
    case Where::Inline: return fmt::format("computed at a loop of '{}', which is inlined (it has no loops)", c.func);
    case Where::Innermost:
      return fmt::format("computed at a loop of '{}', which has no placement of its own (decide its definition 0)", c.func);
    default: break;
  }
  const Nest& n = nest(c.func, c.definition);
  const int ci = n.index(c.loop);
  if (ci < 0)
    return fmt::format("computed at loop '{}' of '{}', which does not exist (its loops: {})", c.loop,
                       stage_name(c.func, c.definition), names_of(n.loops));
  const auto uses = use_sites(ss.func);
  std::vector<std::pair<std::string, int>> outside;
  for (const auto& u : uses)
    if (!stage_inside(u, c, 0)) outside.push_back(u);
  if (outside.size() == uses.size())
    return fmt::format("'{}' is not a consumer of '{}' (it does not read it directly, through inlined Funcs or through Funcs "
                       "computed inside it)",
                       stage_name(c.func, c.definition), ss.func);
  if (!outside.empty())
    return fmt::format("computed at loop '{}' of '{}', but stage '{}' reads it outside that loop", c.loop, c.func,
                       stage_name(outside[0].first, outside[0].second));
  if (ss.store_root && !ss.store_at.empty()) return std::string("store_root and store_at are both set");
  int si = ci;
  if (!ss.store_at.empty()) {
    si = n.index(ss.store_at);
    if (si < 0) return fmt::format("stored at loop '{}' of '{}', which does not exist (its loops: {})", ss.store_at, c.func, names_of(n.loops));
    if (si < ci) return fmt::format("stored at loop '{}', inside its compute loop '{}'", ss.store_at, c.loop);
  }
  // Loops enclosing the compute level, innermost first, across the consumer's own placement.
  std::vector<std::pair<std::string, LoopInfo>> chain;
  ConsumerLoop cur = c;
  for (int depth = 0; depth < kMaxDepth; depth++) {
    const Nest& cn = nest(cur.func, cur.definition);
    const int i = cn.index(cur.loop);
    if (i < 0) break;
    for (size_t k = i; k < cn.loops.size(); k++) chain.emplace_back(cur.func, cn.loops[k]);
    if (where(cur.func) != Where::At) break;
    cur = sched_.find(cur.func, 0)->compute_at;
    if (!env.count(cur.func)) break;
  }
  const size_t between = ss.store_root ? chain.size() : static_cast<size_t>(si - ci);
  for (size_t k = 0; k < chain.size(); k++) {
    const auto& [func, loop] = chain[k];
    if (loop.kind == LoopKind::Vectorized)
      return fmt::format("computed inside {} '{}' of '{}'", loop.hidden ? "the vector lanes of loop" : "vectorized loop",
                         loop.name, func);
    if (k < between && loop.kind == LoopKind::Parallel)
      return fmt::format("stored outside parallel loop '{}' of '{}' but computed inside it (a race)", loop.name, func);
    if (k < between && loop.kind == LoopKind::Unrolled)
      return fmt::format("stored outside unrolled loop '{}' of '{}' but computed inside it (Halide's sliding window "
                         "would make its extent variable)",
                         loop.name, func);
  }
  return std::nullopt;
}

}  // namespace ts::checker
