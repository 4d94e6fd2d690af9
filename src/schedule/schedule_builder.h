#pragma once
// ScheduleBuilder: Halide's scheduling calls, written as Halide spells them, recorded as Schedule
// data instead of run. The default rule and the Winograd plans build their schedules with it, so
// their kernels are data that apply() replays (the only code that calls Halide's scheduling
// methods), that a database record keeps and that the features see.
//
//   ScheduleBuilder sb;
//   sb.func(o).compute_root().split(x, xo, xi, 16, Halide::TailStrategy::ShiftInwards).vectorize(xi);
//   sb.func(r).compute_at(sb.func(o), xo).vectorize(x);
//   apply(sb.schedule, outputs, target);
//
// Funcs are named by base name (func_base_name). A def-0 entry's placement is Inline until
// compute_root() or compute_at() says otherwise, as in Halide.
#include <Halide.h>

#include <string>
#include <utility>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/task_prefetch.h"

namespace ts {

class ScheduleBuilder;

// Halide's tail and prefetch-bound strategies as Schedule data holds them.
Tail tail_of(Halide::TailStrategy t);
PrefetchBound bound_of(Halide::PrefetchBoundStrategy b);

// One definition's loop directives (LoopStep).
class StageRef {
 public:
  StageRef(ScheduleBuilder* b, std::string func, int definition) : b_(b), func_(std::move(func)), definition_(definition) {}

  StageRef& split(const Halide::VarOrRVar& old, const Halide::VarOrRVar& outer, const Halide::VarOrRVar& inner, int factor,
                  Halide::TailStrategy tail = Halide::TailStrategy::Auto);
  StageRef& fuse(const Halide::VarOrRVar& inner, const Halide::VarOrRVar& outer, const Halide::VarOrRVar& fused);
  StageRef& reorder(const std::vector<Halide::VarOrRVar>& loops);  // innermost first
  template <typename... More>
  StageRef& reorder(const Halide::VarOrRVar& first, const More&... more) {
    return reorder(std::vector<Halide::VarOrRVar>{first, Halide::VarOrRVar(more)...});
  }
  StageRef& vectorize(const Halide::VarOrRVar& loop);
  StageRef& vectorize(const Halide::VarOrRVar& loop, int factor, Halide::TailStrategy tail = Halide::TailStrategy::Auto);
  StageRef& unroll(const Halide::VarOrRVar& loop);
  StageRef& unroll(const Halide::VarOrRVar& loop, int factor, Halide::TailStrategy tail = Halide::TailStrategy::Auto);
  StageRef& parallel(const Halide::VarOrRVar& loop);
  // Prefetches of the input named `buffer`.
  StageRef& prefetch(const std::string& buffer, const Halide::VarOrRVar& at, const Halide::VarOrRVar& from, int offset = 1,
                     Halide::PrefetchBoundStrategy bound = Halide::PrefetchBoundStrategy::GuardWithIf);

  const std::string& func() const { return func_; }  // the Func's base name
  int definition() const { return definition_; }     // 0 = pure, k = update k-1

 protected:
  StageSchedule& entry();  // the stage's entry in the schedule, made on first use
  StageRef& step(LoopStep s);

  ScheduleBuilder* b_;
  std::string func_;
  int definition_;
};

class FuncRef;

// An update definition: loop directives, and rfactor.
class UpdateRef : public StageRef {
 public:
  using StageRef::StageRef;
  // Factors RVar `rvar` out into pure Var `var` of the Func rfactor makes (rfactor_func_name).
  FuncRef rfactor(const Halide::RVar& rvar, const Halide::Var& var);
};

// A Func: its placement and storage, the pure definition's loop directives, and its updates.
class FuncRef : public StageRef {
 public:
  FuncRef(ScheduleBuilder* b, std::string func) : StageRef(b, std::move(func), 0) {}

  FuncRef& compute_inline();
  FuncRef& compute_root();
  // Computed at `loop` of the consumer's definition `definition` (the one that reads this Func).
  FuncRef& compute_at(const FuncRef& consumer, const Halide::VarOrRVar& loop, int definition = 0);
  FuncRef& reorder_storage(const std::vector<Halide::Var>& dims);  // innermost first
  template <typename... More>
  FuncRef& reorder_storage(const Halide::Var& first, const More&... more) {
    return reorder_storage(std::vector<Halide::Var>{first, more...});
  }
  UpdateRef update(int u = 0);
  // The staging copy `consumer` reads this Func through (Func::in; staged_copy_name).
  FuncRef in(const FuncRef& consumer);
  // The next parallel task's slice of a buffer prefetched (task_func is this Func).
  FuncRef& task_prefetch(TaskPrefetch req);
};

class ScheduleBuilder {
 public:
  FuncRef func(const Halide::Func& f) { return FuncRef(this, func_base_name(f.name())); }
  FuncRef func(const std::string& base_name) { return FuncRef(this, base_name); }
  // Every pure Func of the pipeline of `outputs` the schedule has not placed (outputs aside) is
  // inlined, as Halide leaves it: the schedule then decides every Func it can inline, so it
  // reads the same to validate(), the features and the space.
  void inline_the_rest(const std::vector<Halide::Func>& outputs);

  Schedule schedule;  // what has been recorded
};

}  // namespace ts
