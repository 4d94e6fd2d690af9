// Schedule::validate() and apply(): the schedule checked against the pipeline
// (schedule_checker.h), then replayed as Halide scheduling calls. apply() and restructure.cpp
// are the only code in tensorsched that calls Halide's scheduling methods on stage schedules.
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
#include "schedule/restructure.h"
#include "schedule/schedule.h"
#include "schedule/schedule_checker.h"
#include "schedule/task_prefetch.h"

namespace ts {

// A Func's name without the "$N" Halide appends when a name is reused in one process, wherever
// it occurs: the Funcs rfactor and Func::in make carry their sources' ("f$1_intm").
std::string func_base_name(const std::string& n) {
  if (n.find('$') == std::string::npos) return n;
  std::string out;
  for (size_t i = 0; i < n.size(); i++) {
    size_t j = i + 1;
    while (n[i] == '$' && j < n.size() && std::isdigit(static_cast<unsigned char>(n[j]))) j++;
    if (n[i] == '$' && j > i + 1 && (j == n.size() || n[j] == '_' || n[j] == '.')) {
      i = j - 1;
      continue;
    }
    out += n[i];
  }
  return out;
}


namespace {

using Halide::Internal::Function;
using checker::Checker;
using checker::Nest;

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

Halide::PrefetchBoundStrategy halide_bound(PrefetchBound b) {
  switch (b) {
    case PrefetchBound::Clamp: return Halide::PrefetchBoundStrategy::Clamp;
    case PrefetchBound::NonFaulting: return Halide::PrefetchBoundStrategy::NonFaulting;
    case PrefetchBound::GuardWithIf: break;
  }
  return Halide::PrefetchBoundStrategy::GuardWithIf;
}

// The stage's steps and prefetches (validated by plan_steps and Checker::plan).
void schedule_steps(Halide::Stage st, const StageSchedule& ss, const Nest& nest, const Checker& ck) {
  auto v = [&](const std::string& n) { return Halide::VarOrRVar(n, nest.rvars.count(n) > 0); };
  for (const auto& step : ss.steps) {
    const auto& l = step.loops;
    switch (step.kind) {
      case StepKind::Split: st.split(v(l[0]), v(l[1]), v(l[2]), static_cast<int>(step.factor), halide_tail(step.tail)); break;
      case StepKind::Fuse: st.fuse(v(l[0]), v(l[1]), v(l[2])); break;
      case StepKind::Reorder: {
        std::vector<Halide::VarOrRVar> order;
        for (const auto& n : l) order.push_back(v(n));
        st.reorder(order);
        break;
      }
      case StepKind::Vectorize:
        if (step.factor > 0) st.vectorize(v(l[0]), static_cast<int>(step.factor), halide_tail(step.tail));
        else st.vectorize(v(l[0]));
        break;
      case StepKind::Unroll:
        if (step.factor > 0) st.unroll(v(l[0]), static_cast<int>(step.factor), halide_tail(step.tail));
        else st.unroll(v(l[0]));
        break;
      case StepKind::Parallel: st.parallel(v(l[0])); break;
    }
  }
  for (const auto& p : ss.prefetches)
    st.prefetch(ck.buffers.at(p.buffer), v(p.at), v(p.from), static_cast<int>(p.offset), halide_bound(p.bound));
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

// Bounds every output's loops to its estimates (the workload's fixed shape, from 0): every loop
// extent and every per-tile allocation becomes a constant, so an accumulator tile lives on the
// stack instead of a heap allocation per tile (a depthwise conv's tile sized by a fused parallel
// loop's batch index was malloc'ed 2,352 times per call). Stage schedules get it; Halide's
// autoschedulers do not: an Adams2019 schedule of a conv gave wrong values under fixed output
// bounds in Halide 14 (tests/schedule/autoscheduler_test.cpp).
void bound_outputs_to_estimates(const std::vector<Halide::Func>& outputs) {
  for (const auto& o : outputs) {
    Halide::Func f = o;
    std::vector<int64_t> ext;
    for (const auto& a : f.args()) {
      int64_t e = 0;
      for (const auto& b : o.function().schedule().estimates())
        if (b.var == a.name() && b.extent.defined())
          if (const int64_t* c = Halide::Internal::as_const_int(b.extent)) e = *c;
      ext.push_back(e);
    }
    if (ext.empty() || !std::all_of(ext.begin(), ext.end(), [](int64_t e) { return e > 0; })) continue;
    for (size_t d = 0; d < ext.size(); d++) f.bound(f.args()[d], 0, static_cast<int>(ext[d]));
  }
}

}  // namespace

std::optional<std::string> Schedule::validate(const std::vector<Halide::Func>& outputs) const {
  if (format != kFormatVersion) return fmt::format("schedule format {} is not supported ({})", format, kFormatVersion);
  if (auto why = check_layouts(*this, outputs)) return why;
  if (origin) {
    const auto& as = autoscheduler_names();
    if (origin->generator == kRuleGenerator) {
      if (auto why = check_default_params(origin->params)) return fmt::format("schedule origin {}: {}", kRuleGenerator, *why);
    } else if (std::find(as.begin(), as.end(), origin->generator) == as.end()) {
      return fmt::format("schedule origin '{}' is not a generator tensorsched knows ({}, {})", origin->generator,
                         kRuleGenerator, fmt::join(as, ", "));
    }
  }
  if (autoscheduler) {
    if (!stages.empty())
      return fmt::format("schedule has {} decided stage(s) and an autoscheduler recipe ({}), which decides every stage",
                         stages.size(), autoscheduler->name);
    if (auto why = check_recipe(*autoscheduler)) return why;
    return check_estimates(outputs);
  }
  if (std::none_of(stages.begin(), stages.end(), [](const StageSchedule& ss) { return ss.restructures(); }))
    return Checker(*this, outputs).run();
  // The Funcs it makes are checked in a restructured copy of the pipeline.
  const std::vector<Halide::Func> copy = copy_pipeline(outputs);
  Restructured done;
  if (auto why = restructure(*this, copy, done)) return why;
  return Checker(*this, copy, done).run();
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
  // A schedule that makes Funcs is checked on a restructured copy first, so an invalid one leaves
  // the pipeline as it was; any other is checked once, below.
  const bool makes_funcs = std::any_of(s.stages.begin(), s.stages.end(), [](const StageSchedule& ss) { return ss.restructures(); });
  if (makes_funcs)
    if (auto why = s.validate(outputs)) throw Error("invalid schedule: " + *why);
  Restructured done;
  if (auto why = restructure(s, outputs, done)) throw Error(fmt::format("schedule {}: {}", s.hash(), *why));
  Checker ck(s, outputs, done);
  if (auto why = ck.run()) throw Error("invalid schedule: " + *why);
  try {
    if (s.bound_outputs) bound_outputs_to_estimates(outputs);
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
        if (!ss.memory.empty())
          f.store_in(ss.memory == "heap" ? Halide::MemoryType::Heap : ss.memory == "stack" ? Halide::MemoryType::Stack
                                                                                           : Halide::MemoryType::Register);
        if (ss.storage_order.size() > 1) {
          std::vector<Halide::Var> dims;
          for (const auto& a : ss.storage_order) dims.emplace_back(a);
          f.reorder_storage(dims);
        }
      }
      Halide::Stage st = ss.definition == 0 ? Halide::Stage(f) : f.update(ss.definition - 1);
      schedule_loops(st, ss, ck.nest(ss.func, ss.definition));
      schedule_steps(st, ss, ck.nest(ss.func, ss.definition), ck);
      for (TaskPrefetch q : ss.task_prefetches) {
        // The lowered loops carry the Funcs' full names.
        q.task_func = f.name();
        const size_t dot = q.spread_stage.rfind('.');
        const std::string spread = q.spread_stage.substr(0, dot);
        if (ck.env.count(spread)) q.spread_stage = ck.env.at(spread).name() + q.spread_stage.substr(dot == std::string::npos ? q.spread_stage.size() : dot);
        request_task_prefetch(f, q);
      }
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