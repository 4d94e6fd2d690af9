#pragma once
// ScheduleFn: whatever schedules a lowered pipeline in place, given its output Funcs and the
// target (the default heuristic, a Schedule's apply, an autoscheduler). The compile half
// (measure/workload_compiler.h) takes one; schedule/ produces them.
#include <Halide.h>

#include <functional>
#include <vector>

namespace ts {

using ScheduleFn = std::function<void(const std::vector<Halide::Func>& outputs, const Halide::Target&)>;

}  // namespace ts
