#include "schedule/schedule_reader.h"

#include <fmt/format.h>

#include "graph/error.h"
#include "schedule/restructure.h"
#include "schedule/schedule_builder.h"

namespace ts {

namespace {

using Halide::Internal::Function;

// The name a scheduling call gave a loop: the last part of Halide's dotted dim name ("x.xo").
std::string short_name(const std::string& dim) {
  const size_t dot = dim.rfind('.');
  return dot == std::string::npos ? dim : dim.substr(dot + 1);
}

// The loops of one definition (splits and fusions in order, then the loop order and kinds) and
// its prefetches into `ss`. Throws Error naming a directive Schedule does not hold.
void read_definition(const Halide::Internal::StageSchedule& s, StageSchedule& ss) {
  using Halide::Internal::ForType;
  using Halide::Internal::Split;
  if (s.atomic() || s.allow_race_conditions()) throw Error("atomic or race-allowing update");
  Halide::FuseLoopLevel fuse = s.fuse_level();
  if (!fuse.level.lock().is_inlined()) throw Error("compute_with");
  for (const Split& sp : s.splits()) {
    switch (sp.split_type) {
      case Split::SplitVar: {
        const int64_t* f = Halide::Internal::as_const_int(sp.factor);
        if (!f) throw Error(fmt::format("split of '{}' by a non-constant factor", sp.old_var));
        ss.steps.push_back({StepKind::Split, {short_name(sp.old_var), short_name(sp.outer), short_name(sp.inner)}, *f, tail_of(sp.tail)});
        break;
      }
      case Split::FuseVars:
        ss.steps.push_back({StepKind::Fuse, {short_name(sp.inner), short_name(sp.outer), short_name(sp.old_var)}, 0, Tail::Auto});
        break;
      case Split::RenameVar: throw Error(fmt::format("rename of '{}'", sp.old_var));
      case Split::PurifyRVar: throw Error(fmt::format("rfactor (RVar '{}' made a pure loop)", sp.old_var));
    }
  }
  LoopStep order{StepKind::Reorder, {}, 0, Tail::Auto};
  std::vector<LoopStep> marks;
  for (const auto& d : s.dims()) {
    if (d.var == Halide::Var::outermost().name()) continue;
    const std::string n = short_name(d.var);
    order.loops.push_back(n);
    switch (d.for_type) {
      case ForType::Serial: break;
      case ForType::Parallel: marks.push_back({StepKind::Parallel, {n}, 0, Tail::Auto}); break;
      case ForType::Vectorized: marks.push_back({StepKind::Vectorize, {n}, 0, Tail::Auto}); break;
      case ForType::Unrolled: marks.push_back({StepKind::Unroll, {n}, 0, Tail::Auto}); break;
      default: throw Error(fmt::format("loop '{}' of a kind other than serial, parallel, vectorized or unrolled", n));
    }
  }
  if (!ss.steps.empty() || !marks.empty() || s.touched()) ss.steps.push_back(order);
  ss.steps.insert(ss.steps.end(), marks.begin(), marks.end());
  for (const auto& p : s.prefetches()) {
    if (!p.param.defined()) throw Error(fmt::format("prefetch of Func '{}'", p.name));
    const int64_t* off = Halide::Internal::as_const_int(p.offset);
    if (!off) throw Error(fmt::format("prefetch of '{}' at a non-constant offset", p.name));
    ss.prefetches.push_back({p.param.name(), short_name(p.at), short_name(p.from), *off, bound_of(p.strategy)});
  }
}

// The definition of `consumer` a compute_at level's loop `var` belongs to: the one whose loops
// hold it and that calls `fn` (Halide binds a stage-less level to the stage using the Func).
int consumer_definition(const Function& consumer, const std::string& var, const Function& fn) {
  int found = -1;
  for (int d = 0; d <= static_cast<int>(consumer.updates().size()); d++) {
    const auto& def = d == 0 ? consumer.definition() : consumer.update(d - 1);
    bool has = false;
    for (const auto& dim : def.schedule().dims()) has |= short_name(dim.var) == short_name(var);
    if (!has) continue;
    struct Calls : Halide::Internal::IRGraphVisitor {
      std::string name;
      bool found = false;
      using IRGraphVisitor::visit;
      void visit(const Halide::Internal::Call* op) override {
        found |= op->name == name;
        IRGraphVisitor::visit(op);
      }
    } calls;
    calls.name = fn.name();
    for (const auto& e : def.values()) e.accept(&calls);
    for (const auto& e : def.args()) e.accept(&calls);
    if (calls.found) return d;
    if (found < 0) found = d;
  }
  return std::max(found, 0);
}

// Whether fn's bounds are exactly its estimates from 0, dim by dim (what apply() sets on outputs).
bool bounded_to_estimates(const Function& fn) {
  const auto& bounds = fn.schedule().bounds();
  if (bounds.size() != fn.args().size()) return false;
  for (const auto& b : bounds) {
    bool matched = false;
    for (const auto& e : fn.schedule().estimates())
      if (e.var == b.var && b.min.defined() && b.extent.defined() && Halide::Internal::is_const_zero(b.min) &&
          Halide::Internal::can_prove(b.extent == e.extent))
        matched = true;
    if (!matched) return false;
  }
  return true;
}

// Placement and storage of Func fn into its definition-0 entry.
void read_placement(const Function& fn, const std::map<std::string, Function>& env, StageSchedule& ss) {
  const Halide::Internal::FuncSchedule& fs = fn.schedule();
  if (!fs.wrappers().empty()) throw Error("staging copies (Func::in)");
  if (fs.memoized() || fs.async()) throw Error("memoize or async");
  if (!fs.bounds().empty() && !bounded_to_estimates(fn)) throw Error("bound (other than an output's estimates)");
  Halide::LoopLevel compute = fs.compute_level(), store = fs.store_level();
  compute.lock();
  store.lock();
  if (compute.is_inlined()) {
    ss.placement = Placement::Inline;
  } else if (compute.is_root()) {
    ss.placement = Placement::Root;
  } else {
    ss.placement = Placement::ComputeAt;
    const auto consumer = env.find(compute.func());
    if (consumer == env.end()) throw Error(fmt::format("compute_at a loop of '{}', which is not a Func of the pipeline", compute.func()));
    const std::string loop = compute.var().name();
    ss.compute_at = {func_base_name(compute.func()), consumer_definition(consumer->second, loop, fn), short_name(loop)};
  }
  // A storage level outside the compute level (a sliding window) is read as storage at the
  // compute level: Halide 14's sliding window computes wrong values for some of Adams2019's
  // choices (upstream: halide/Halide#7872, #7909, #8140). On random-network workloads 3 of its
  // 212 schedules that stored outside their compute loop computed wrong values and 12 read
  // outside an input, against 0 and 5 of the 700 that did not; stored at the compute level,
  // the wrong ones compute the right values.
  if (!compute.is_inlined() && !compute.is_root() && !store.is_inlined() && !(store == compute) && !store.is_root() &&
      store.func() != compute.func())
    throw Error(fmt::format("storage at a loop of another Func than its compute loop's ({} vs {})", store.to_string(), compute.to_string()));
  switch (fs.memory_type()) {
    case Halide::MemoryType::Auto: break;
    case Halide::MemoryType::Heap: ss.memory = "heap"; break;
    case Halide::MemoryType::Stack: ss.memory = "stack"; break;
    case Halide::MemoryType::Register: ss.memory = "register"; break;
    default: throw Error("store_in a memory other than heap, stack or register");
  }
  std::vector<std::string> storage;
  for (const auto& d : fs.storage_dims()) {
    if (d.alignment.defined() || d.fold_factor.defined()) throw Error("storage alignment or folding");
    storage.push_back(d.var);
  }
  if (storage != fn.args()) ss.storage_order = storage;
}

}  // namespace

std::optional<Schedule> read_halide_schedule(const std::vector<Halide::Func>& outputs, std::string& why) {
  Schedule out;
  std::set<std::string> output_names;
  out.bound_outputs = !outputs.empty();  // the outputs bounded to their estimates, as apply() bounds them
  for (const auto& o : outputs) {
    output_names.insert(o.name());
    out.bound_outputs = out.bound_outputs && !o.function().schedule().bounds().empty() && bounded_to_estimates(o.function());
  }
  const std::map<std::string, Function> env = pipeline_funcs(outputs);
  for (const auto& [name, fn] : env) {
    const std::string base = func_base_name(name);
    try {
      StageSchedule s0;
      s0.func = base;
      read_placement(fn, env, s0);
      read_definition(fn.definition().schedule(), s0);
      // A Func with updates that Halide computes at its uses' innermost loops has no placement
      // of its own: left undecided, as Halide leaves it.
      const bool placed = !(s0.placement == Placement::Inline && (fn.has_update_definition() || output_names.count(name)));
      if (placed) out.set(s0);
      for (size_t u = 0; u < fn.updates().size(); u++) {
        StageSchedule su;
        su.func = base;
        su.definition = static_cast<int>(u) + 1;
        read_definition(fn.update(u).schedule(), su);
        if (su.decides_loops()) out.set(su);
      }
    } catch (const Error& e) {
      why = fmt::format("stage '{}': the schedule uses {}, which a Schedule does not hold", base, e.what());
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace ts
