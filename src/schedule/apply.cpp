// Schedule::validate() and apply(): the schedule checked against the pipeline's Halide IR
// (Funcs, definitions, RVars, who reads whom), then replayed as Halide scheduling calls.
// Validation models each definition's loop nest as the schedule leaves it (tiling, order,
// vector/unroll/parallel marks, fusion), so every loop a decision names can be checked before
// the first Halide call.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <functional>
#include <map>
#include <set>

#include "graph/error.h"
#include "schedule/autoscheduler.h"
#include "schedule/default_schedule.h"
#include "schedule/schedule.h"

namespace ts {

// A Func's name without the "$N" Halide appends when a name is reused in one process.
std::string func_base_name(const std::string& n) {
  const size_t p = n.rfind('$');
  if (p == std::string::npos || p + 1 == n.size()) return n;
  for (size_t i = p + 1; i < n.size(); i++)
    if (!std::isdigit(static_cast<unsigned char>(n[i]))) return n;
  return n.substr(0, p);
}

namespace {

using Halide::Internal::Function;

constexpr int64_t kMaxUnroll = 64;  // the largest extent of an unrolled loop
constexpr int kMaxDepth = 64;       // bound on placement chains (compute_at of compute_at ...)

enum class LoopKind { Serial, Vectorized, Unrolled, Parallel };
struct LoopInfo;
int find_loop(const std::vector<LoopInfo>& loops, const std::string& n);

struct LoopInfo {
  std::string name;                   // loop name
  bool rvar = false;                  // a reduction loop (an RVar or one of its levels)
  int64_t extent = 0;                 // constant extent known from the schedule; 0 = unknown
  LoopKind kind = LoopKind::Serial;   // how it runs
  bool hidden = false;                // the vector lanes split off by vectorize(L, width): not nameable
};

// One definition's loop nest as the schedule leaves it.
struct Nest {
  std::vector<LoopInfo> loops;        // innermost first, a fused parallel loop in place of its parts
  std::set<std::string> rvars;        // every reduction loop name made on the way (incl. fused-away)

  int index(const std::string& n) const {
    return find_loop(loops, n);
  }
};


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


// Names (base names) of the Funcs a definition calls (values, args, predicate, RDom bounds).
std::set<std::string> definition_calls(const Halide::Internal::Definition& d) {
  struct Calls : Halide::Internal::IRGraphVisitor {
    std::set<std::string> names;
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      if (op->call_type == Halide::Internal::Call::Halide) names.insert(func_base_name(op->name));
      IRGraphVisitor::visit(op);
    }
  } c;
  for (const auto& e : d.values()) e.accept(&c);
  for (const auto& e : d.args()) e.accept(&c);
  if (d.predicate().defined()) d.predicate().accept(&c);
  for (const auto& rv : d.schedule().rvars()) {
    rv.min.accept(&c);
    rv.extent.accept(&c);
  }
  return c.names;
}

// Where a Func is computed once the schedule is applied.
enum class Where { Inline, Root, At, Innermost /* undecided Func with updates */ };

class Checker {
 public:
  Checker(const Schedule& s, const std::vector<Halide::Func>& outputs) : sched_(s) {
    std::map<std::string, std::string> full;  // base name -> Halide name
    auto add = [&](const Function& fn) {
      const std::string b = func_base_name(fn.name());
      auto [it, fresh] = full.emplace(b, fn.name());
      if (!fresh && it->second != fn.name()) ambiguous_.insert(b);
      env.emplace(b, fn);
    };
    for (const auto& o : outputs) {
      add(o.function());
      output_names.insert(func_base_name(o.name()));
      for (auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) add(fn);
    }
    for (auto& [name, fn] : env) {
      calls_[{name, 0}] = definition_calls(fn.definition());
      for (size_t u = 0; u < fn.updates().size(); u++) calls_[{name, static_cast<int>(u) + 1}] = definition_calls(fn.update(u));
    }
  }

  std::optional<std::string> run();

  // The nest of (func, definition): as planned when decided, else Halide's default.
  const Nest& nest(const std::string& func, int d) {
    auto key = std::make_pair(func, d);
    auto it = nests_.find(key);
    if (it != nests_.end()) return it->second;
    Nest n;
    n.loops = original_loops(env.at(func), d);
    for (const auto& l : n.loops)
      if (l.rvar) n.rvars.insert(l.name);
    return nests_[key] = n;
  }

  std::map<std::string, Function> env;      // every Func of the pipeline
  std::set<std::string> output_names;       // the outputs

 private:
  std::optional<std::string> check_entry(const StageSchedule& ss);
  std::optional<std::string> plan(const StageSchedule& ss, Nest& out);
  std::optional<std::string> check_placement(const StageSchedule& ss);
  std::optional<std::string> check_compute_at(const StageSchedule& ss);

  Where where(const std::string& f) const {
    if (output_names.count(f)) return Where::Root;
    if (const StageSchedule* s = sched_.find(f, 0))
      return s->placement == Placement::Inline ? Where::Inline : s->placement == Placement::Root ? Where::Root : Where::At;
    return env.at(f).has_update_definition() ? Where::Innermost : Where::Inline;
  }

  // Stages (func, definition) that read f, looking through inlined Funcs.
  std::set<std::pair<std::string, int>> use_sites(const std::string& f) const {
    std::set<std::pair<std::string, int>> out;
    std::set<std::string> visited;
    std::function<void(const std::string&)> visit = [&](const std::string& g) {
      for (const auto& [key, callees] : calls_) {
        if (key.first == g || !callees.count(g)) continue;
        if (where(key.first) != Where::Inline) out.insert(key);
        else if (visited.insert(key.first).second) visit(key.first);
      }
    };
    visit(f);
    return out;
  }

  // Whether every loop of Func g (its compute level) is inside loop `at`.
  bool func_inside(const std::string& g, const ConsumerLoop& at, int depth) {
    if (depth > kMaxDepth) return false;
    switch (where(g)) {
      case Where::Inline:
      case Where::Root: return false;
      case Where::At: {
        const ConsumerLoop& c = sched_.find(g, 0)->compute_at;
        if (!env.count(c.func)) return false;
        if (c.func != at.func) return func_inside(c.func, at, depth + 1);
        if (c.definition != at.definition) return false;
        const Nest& n = nest(c.func, c.definition);
        const int i = n.index(c.loop), j = n.index(at.loop);
        return i >= 0 && j >= 0 && i <= j;
      }
      case Where::Innermost: {
        auto uses = use_sites(g);
        for (const auto& u : uses)
          if (!stage_inside(u, at, depth + 1)) return false;
        return !uses.empty();
      }
    }
    return false;
  }

  // Whether the body of stage u runs inside loop `at`.
  bool stage_inside(const std::pair<std::string, int>& u, const ConsumerLoop& at, int depth) {
    if (u.first == at.func) return u.second == at.definition;
    return func_inside(u.first, at, depth);
  }

  const Schedule& sched_;
  std::set<std::string> ambiguous_;  // base names shared by several Funcs
  std::map<std::pair<std::string, int>, std::set<std::string>> calls_;  // Funcs each definition calls
  std::map<std::pair<std::string, int>, Nest> nests_;                   // planned or default nests
};

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

// Builds the nest the stage's loop decisions give, or says why they are invalid.
std::optional<std::string> Checker::plan(const StageSchedule& ss, Nest& out) {
  const Function& fn = env.at(ss.func);
  const std::vector<LoopInfo> orig = original_loops(fn, ss.definition);
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
      if (ss.decides_loops() || !ss.storage_order.empty())
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

Halide::TailStrategy halide_tail(Tail t) {
  switch (t) {
    case Tail::GuardWithIf: return Halide::TailStrategy::GuardWithIf;
    case Tail::ShiftInwards: return Halide::TailStrategy::ShiftInwards;
    case Tail::RoundUp: return Halide::TailStrategy::RoundUp;
    case Tail::Auto: break;
  }
  return Halide::TailStrategy::Auto;
}

// The loop decisions of one definition, in the order validation models them.
void schedule_loops(Halide::Stage st, const StageSchedule& ss, const Nest& nest) {
  auto v = [&](const std::string& n) { return Halide::VarOrRVar(n, nest.rvars.count(n) > 0); };
  for (const auto& t : ss.tiling) {
    const auto lv = t.level_names();
    const int f0 = static_cast<int>(t.factors[0]);
    if (t.factors.size() == 1) {
      st.split(v(t.loop), v(lv[1]), v(lv[0]), f0, halide_tail(t.tail));
    } else {
      st.split(v(t.loop), v(lv[2]), v(t.middle_name()), static_cast<int>(t.factors[0] * t.factors[1]), halide_tail(t.tail));
      st.split(v(t.middle_name()), v(lv[1]), v(lv[0]), f0);
    }
  }
  if (!ss.order.empty()) {
    std::vector<Halide::VarOrRVar> order;
    for (const auto& n : ss.order) order.push_back(v(n));
    st.reorder(order);
  }
  if (!ss.vectorize.empty()) {
    const int64_t e = ss.level_extent(ss.vectorize);
    // A guarded split even where the width divides the extent: Halide's auto tail rounds up in
    // updates, which miscompiles (writes past the realization) when the stage is smaller.
    if (e == ss.vector_width) st.vectorize(v(ss.vectorize));
    else st.vectorize(v(ss.vectorize), ss.vector_width, Halide::TailStrategy::GuardWithIf);
  }
  for (const auto& u : ss.unroll) st.unroll(v(u));
  if (!ss.parallel.empty()) {
    std::string cur = ss.parallel, name = ss.parallel;
    for (const auto& f : ss.parallel_fused) {
      name += "_" + f;
      st.fuse(v(cur), v(f), Halide::Var(name + "_f"));
      cur = name + "_f";
    }
    st.parallel(Halide::Var(cur));
  }
}

// What Halide's autoschedulers need: an estimate of every dimension of every output and of
// every input buffer, and of every scalar parameter.
std::optional<std::string> check_estimates(const std::vector<Halide::Func>& outputs) {
  for (const auto& o : outputs) {
    const Function& fn = o.function();
    for (const auto& a : fn.args()) {
      const auto& est = fn.schedule().estimates();
      if (std::none_of(est.begin(), est.end(), [&](const Halide::Internal::Bound& b) {
            return b.var == a && b.min.defined() && b.extent.defined();
          }))
        return fmt::format("output '{}' has no estimate of dimension '{}' (the autoschedulers need one; set_estimate)",
                           func_base_name(fn.name()), a);
    }
  }
  struct Params : Halide::Internal::IRGraphVisitor {
    std::map<std::string, Halide::Internal::Parameter> found;  // name -> input buffer or scalar parameter
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      if (op->param.defined()) found.emplace(op->param.name(), op->param);
      IRGraphVisitor::visit(op);
    }
    void visit(const Halide::Internal::Variable* op) override {
      if (op->param.defined()) found.emplace(op->param.name(), op->param);
    }
  } params;
  auto walk = [&](const Halide::Internal::Definition& d) {
    for (const auto& e : d.values()) e.accept(&params);
    for (const auto& e : d.args()) e.accept(&params);
    if (d.predicate().defined()) d.predicate().accept(&params);
    for (const auto& rv : d.schedule().rvars()) {
      rv.min.accept(&params);
      rv.extent.accept(&params);
    }
  };
  for (const auto& o : outputs) {
    std::map<std::string, Function> env = Halide::Internal::find_transitive_calls(o.function());
    env.emplace(o.name(), o.function());
    for (const auto& [name, fn] : env) {
      walk(fn.definition());
      for (const auto& u : fn.updates()) walk(u);
    }
  }
  for (const auto& [name, p] : params.found) {
    if (!p.is_buffer()) {
      if (!p.estimate().defined()) return fmt::format("scalar parameter '{}' has no estimate (the autoschedulers need one)", name);
      continue;
    }
    for (int d = 0; d < p.dimensions(); d++)
      if (!p.min_constraint_estimate(d).defined() || !p.extent_constraint_estimate(d).defined())
        return fmt::format("input '{}' has no estimate of dimension {} (the autoschedulers need one; dim(k).set_estimate)",
                           name, d);
  }
  return std::nullopt;
}


// Layouts name distinct inputs of the pipeline, and the Func reading each one (its wrapper,
// which has the input's unpacked dims whether or not the pipeline was lowered with the layout)
// has the blocked dim, with an estimate the block divides.
std::optional<std::string> check_layouts(const Schedule& s, const std::vector<Halide::Func>& outputs) {
  if (s.layouts.empty()) return std::nullopt;
  // Inputs a Func reads: images, and ImageParams through their implicit Func "<name>_im".
  struct Images : Halide::Internal::IRGraphVisitor {
    std::set<std::string> names;
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      const std::string b = func_base_name(op->name);
      if (op->call_type == Halide::Internal::Call::Image) names.insert(op->name);
      if (op->call_type == Halide::Internal::Call::Halide && b.size() > 3 && b.compare(b.size() - 3, 3, "_im") == 0)
        names.insert(b.substr(0, b.size() - 3));
      IRGraphVisitor::visit(op);
    }
  };
  std::map<std::string, Function> env;
  for (const auto& o : outputs) {
    env.emplace(o.name(), o.function());
    for (auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) env.emplace(name, fn);
  }
  std::map<std::string, std::vector<const Function*>> readers;  // input -> Funcs reading it
  for (auto& [name, fn] : env) {
    Images images;
    fn.accept(&images);
    for (const auto& n : images.names)
      if (func_base_name(name) != n + "_im") readers[n].push_back(&fn);
  }
  std::set<std::string> seen;
  for (const auto& l : s.layouts) {
    if (!seen.insert(l.input).second) return fmt::format("input '{}' has two layouts", l.input);
    auto it = readers.find(l.input);
    if (it == readers.end()) return fmt::format("layout of '{}': the pipeline has no input of that name", l.input);
    for (const Function* fn : it->second) {
      const auto& args = fn->args();
      if (l.dim < 0 || static_cast<size_t>(l.dim) >= args.size() || l.block < 2)
        return fmt::format("layout of '{}': dim {} block {} (its reader '{}' has {} dims; a block is at least 2)", l.input,
                           l.dim, l.block, func_base_name(fn->name()), args.size());
      for (const auto& b : fn->schedule().estimates()) {
        const int64_t* extent = b.var == args[static_cast<size_t>(l.dim)] && b.extent.defined()
                                    ? Halide::Internal::as_const_int(b.extent) : nullptr;
        if (extent && *extent % l.block != 0)
          return fmt::format("layout of '{}': block {} does not divide dim {}'s extent {}", l.input, l.block, l.dim, *extent);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> Schedule::validate(const std::vector<Halide::Func>& outputs) const {
  if (format != kFormatVersion) return fmt::format("schedule format {} is not supported ({})", format, kFormatVersion);
  if (auto why = check_layouts(*this, outputs)) return why;
  if (autoscheduler) {
    if (!stages.empty())
      return fmt::format("schedule has {} decided stage(s) and an autoscheduler recipe ({}), which decides every stage",
                         stages.size(), autoscheduler->name);
    if (auto why = check_recipe(*autoscheduler)) return why;
    return check_estimates(outputs);
  }
  return Checker(*this, outputs).run();
}

void apply(const Schedule& s, const std::vector<Halide::Func>& outputs, const Halide::Target& target) {
  if (s.format != Schedule::kFormatVersion) throw Error(fmt::format("invalid schedule: format {} is not supported", s.format));
  if (s.autoscheduler) {
    if (auto why = s.validate(outputs)) throw Error("invalid schedule: " + *why);
    try {
      run_autoscheduler(*s.autoscheduler, outputs, target);
    } catch (const Error& e) {
      throw Error(fmt::format("schedule {}: {}", s.hash(), e.what()));
    }
    return;
  }
  if (auto why = check_layouts(s, outputs)) throw Error("invalid schedule: " + *why);
  Checker ck(s, outputs);
  if (auto why = ck.run()) throw Error("invalid schedule: " + *why);
  try {
    bound_outputs_to_estimates(outputs);
    for (const auto& ss : s.canonical().stages) {
      Halide::Func f(ck.env.at(ss.func));
      if (ss.definition == 0) {
        const ConsumerLoop& c = ss.compute_at;
        auto level = [&](const std::string& loop) {
          Halide::Func consumer(ck.env.at(c.func));
          const bool rvar = ck.nest(c.func, c.definition).rvars.count(loop) > 0;
          // No stage index: Halide 14's legality check compares against stage-less sites, and
          // binds the level to the consumer stage that uses the Func (validate() made sure
          // every use is in compute_at.definition).
          return Halide::LoopLevel(consumer, Halide::VarOrRVar(loop, rvar));
        };
        switch (ss.placement) {
          case Placement::Inline: f.compute_inline(); break;
          case Placement::Root: f.compute_root(); break;
          case Placement::ComputeAt: f.compute_at(level(c.loop)); break;
        }
        if (ss.store_root) f.store_root();
        if (!ss.store_at.empty()) f.store_at(level(ss.store_at));
        if (ss.storage_order.size() > 1) {
          std::vector<Halide::Var> dims;
          for (const auto& a : ss.storage_order) dims.emplace_back(a);
          f.reorder_storage(dims);
        }
      }
      Halide::Stage st = ss.definition == 0 ? Halide::Stage(f) : f.update(ss.definition - 1);
      schedule_loops(st, ss, ck.nest(ss.func, ss.definition));
    }
    // Updates left at their default nest, marked so Halide does not warn about them.
    std::set<std::string> funcs;
    for (const auto& ss : s.stages) funcs.insert(ss.func);
    for (const auto& name : funcs) {
      Halide::Func f(ck.env.at(name));
      for (int u = 0; u < f.num_update_definitions(); u++) {
        const StageSchedule* e = s.find(name, u + 1);
        if (!e || !e->decides_loops()) f.update(u).unscheduled();
      }
    }
  } catch (const Halide::Error& e) {
    std::string m = e.what();
    std::replace(m.begin(), m.end(), '\n', ' ');
    throw Error(fmt::format("schedule {}: Halide rejected it: {}", s.hash(), m));
  }
}

ScheduleFn schedule_fn(const Schedule& s) {
  return [s](const std::vector<Halide::Func>& outputs, const Halide::Target& target) { apply(s, outputs, target); };
}

}  // namespace ts
