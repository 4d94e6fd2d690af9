#pragma once
// The schedule directives that make Funcs: rfactor (an update's partial results in a new Func)
// and staging copies (Func::in). apply() runs them before any other decision, so the entries of
// the Funcs they make find them; validate() runs them on a deep copy of the pipeline.
#include <Halide.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace ts {

// Every Func the outputs reach (the outputs included), by full Halide name.
std::map<std::string, Halide::Internal::Function> pipeline_funcs(const std::vector<Halide::Func>& outputs);

// Input buffers (ImageParams) the Funcs of `env` read, by name.
std::map<std::string, Halide::Internal::Parameter> pipeline_buffers(const std::map<std::string, Halide::Internal::Function>& env);

// A deep copy of the pipeline computing `outputs`: its Funcs with their schedules (input buffers
// are shared). Scheduling the copy leaves the original as it was.
std::vector<Halide::Func> copy_pipeline(const std::vector<Halide::Func>& outputs);

// What restructure() did: which Funcs rfactor made or changed, and the names Halide gave the
// Funcs it made. Halide names them after their sources' full names and makes a name unique in
// the process as it likes ("acc$1_intm", or "acc_1_intm$1" once a copy took that name), so the
// schedule names them rfactor_func_name() and staged_copy_name() of base names instead.
struct Restructured {
  std::set<std::string> changed;               // base names of the Funcs rfactor made or changed
  std::map<std::string, std::string> names;    // full Halide name of each Func made -> its name in the schedule
};

// Applies the rfactor and staged_for entries of `s`, in stage order, to the pipeline of
// `outputs`. Returns why one cannot be applied (the pipeline may then be partly restructured), or
// nullopt.
std::optional<std::string> restructure(const Schedule& s, const std::vector<Halide::Func>& outputs, Restructured& done);

// Makes every consumer of a staging copy call the copy in its definitions, as Halide does when it
// lowers the pipeline, so that a view of the pipeline (analysis/pipeline_view.h) has the copies as
// stages. For a restructured copy of a pipeline (copy_pipeline) that is only read afterwards.
void call_staged_copies(const std::vector<Halide::Func>& outputs);

}  // namespace ts
