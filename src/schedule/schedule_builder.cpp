#include "schedule/schedule_builder.h"

#include <set>

#include "schedule/restructure.h"

namespace ts {

Tail tail_of(Halide::TailStrategy t) {
  switch (t) {
    case Halide::TailStrategy::GuardWithIf: return Tail::GuardWithIf;
    case Halide::TailStrategy::ShiftInwards: return Tail::ShiftInwards;
    case Halide::TailStrategy::RoundUp: return Tail::RoundUp;
    default: return Tail::Auto;
  }
}

PrefetchBound bound_of(Halide::PrefetchBoundStrategy b) {
  switch (b) {
    case Halide::PrefetchBoundStrategy::Clamp: return PrefetchBound::Clamp;
    case Halide::PrefetchBoundStrategy::NonFaulting: return PrefetchBound::NonFaulting;
    default: return PrefetchBound::GuardWithIf;
  }
}

StageSchedule& StageRef::entry() {
  if (StageSchedule* e = b_->schedule.find(func_, definition_)) return *e;
  StageSchedule s;
  s.func = func_;
  s.definition = definition_;
  return b_->schedule.set(std::move(s));
}

StageRef& StageRef::step(LoopStep s) {
  entry().steps.push_back(std::move(s));
  return *this;
}

StageRef& StageRef::split(const Halide::VarOrRVar& old, const Halide::VarOrRVar& outer, const Halide::VarOrRVar& inner,
                          int factor, Halide::TailStrategy tail) {
  return step({StepKind::Split, {old.name(), outer.name(), inner.name()}, factor, tail_of(tail)});
}

StageRef& StageRef::fuse(const Halide::VarOrRVar& inner, const Halide::VarOrRVar& outer, const Halide::VarOrRVar& fused) {
  return step({StepKind::Fuse, {inner.name(), outer.name(), fused.name()}, 0, Tail::Auto});
}

StageRef& StageRef::reorder(const std::vector<Halide::VarOrRVar>& loops) {
  LoopStep s{StepKind::Reorder, {}, 0, Tail::Auto};
  for (const auto& l : loops) s.loops.push_back(l.name());
  return step(std::move(s));
}

StageRef& StageRef::vectorize(const Halide::VarOrRVar& loop) { return step({StepKind::Vectorize, {loop.name()}, 0, Tail::Auto}); }

StageRef& StageRef::vectorize(const Halide::VarOrRVar& loop, int factor, Halide::TailStrategy tail) {
  return step({StepKind::Vectorize, {loop.name()}, factor, tail_of(tail)});
}

StageRef& StageRef::unroll(const Halide::VarOrRVar& loop) { return step({StepKind::Unroll, {loop.name()}, 0, Tail::Auto}); }

StageRef& StageRef::unroll(const Halide::VarOrRVar& loop, int factor, Halide::TailStrategy tail) {
  return step({StepKind::Unroll, {loop.name()}, factor, tail_of(tail)});
}

StageRef& StageRef::parallel(const Halide::VarOrRVar& loop) { return step({StepKind::Parallel, {loop.name()}, 0, Tail::Auto}); }

StageRef& StageRef::prefetch(const std::string& buffer, const Halide::VarOrRVar& at, const Halide::VarOrRVar& from,
                             int offset, Halide::PrefetchBoundStrategy bound) {
  entry().prefetches.push_back({buffer, at.name(), from.name(), offset, bound_of(bound)});
  return *this;
}

FuncRef UpdateRef::rfactor(const Halide::RVar& rvar, const Halide::Var& var) {
  entry().rfactor.push_back({rvar.name(), var.name()});
  return FuncRef(b_, rfactor_func_name(func_));
}

FuncRef& FuncRef::compute_inline() {
  StageSchedule& e = entry();
  e.placement = Placement::Inline;
  e.compute_at = {};
  return *this;
}

void ScheduleBuilder::inline_the_rest(const std::vector<Halide::Func>& outputs) {
  std::set<std::string> outs;
  for (const auto& o : outputs) outs.insert(func_base_name(o.name()));
  for (const auto& [name, fn] : pipeline_funcs(outputs)) {
    const std::string base = func_base_name(name);
    if (!outs.count(base) && !fn.has_update_definition() && !schedule.find(base, 0)) func(base).compute_inline();
  }
}

FuncRef& FuncRef::compute_root() {
  StageSchedule& e = entry();
  e.placement = Placement::Root;
  e.compute_at = {};
  return *this;
}

FuncRef& FuncRef::compute_at(const FuncRef& consumer, const Halide::VarOrRVar& loop, int definition) {
  StageSchedule& e = entry();
  e.placement = Placement::ComputeAt;
  e.compute_at = {consumer.func(), definition, loop.name()};
  return *this;
}

FuncRef& FuncRef::reorder_storage(const std::vector<Halide::Var>& dims) {
  StageSchedule& e = entry();
  e.storage_order.clear();
  for (const auto& d : dims) e.storage_order.push_back(d.name());
  return *this;
}

UpdateRef FuncRef::update(int u) { return UpdateRef(b_, func_, u + 1); }

FuncRef FuncRef::in(const FuncRef& consumer) {
  entry().staged_for.push_back(consumer.func());
  return FuncRef(b_, staged_copy_name(func_, consumer.func()));
}

FuncRef& FuncRef::task_prefetch(TaskPrefetch req) {
  req.task_func = func_;
  entry().task_prefetches.push_back(std::move(req));
  return *this;
}

}  // namespace ts
