#pragma once
// Compiles one Workload to a shared object in the on-disk code cache: lower its subgraph with
// an ImageParam per input (weights included, so identical workloads share code), apply a
// schedule, compile_to_object with Target::NoRuntime, link with the system C++ compiler. One
// shared Halide runtime (compile_standalone_runtime) serves every workload of a process.
#include <Halide.h>

#include <functional>
#include <string>
#include <vector>

#include "graph/workload.h"
#include "schedule/input_layout.h"
#include "schedule/schedule.h"
#include "schedule/schedule_fn.h"

namespace ts {


// The code cache root: `root` when given, else $TENSORSCHED_CACHE_DIR, else
// $XDG_CACHE_HOME/tensorsched, else ~/.cache/tensorsched (absolute).
std::string code_cache_root(const std::string& root = "");
// The target code is compiled for: the host's, less what its CPU does not have. Halide 14 names
// AVX512_SapphireRapids for any CPU with AVX512-BF16 and VNNI, and LLVM's Sapphire Rapids model
// includes AVX512-FP16, which AMD's AVX-512 CPUs lack: a 6-element int64 select of fixed shape was
// compiled to vmovw there (SIGILL). Every compile, JIT included, uses this target.
Halide::Target host_code_target();
// This build's folder under the root: "<tensorsched version>-<code generator source hash>".
std::string code_cache_build_dir();

struct CodeCache {
  std::string dir;          // <root>/<tensorsched version>-<code generator source hash>/<target string>
  Halide::Target target;    // what the code is compiled for

  // Default root: $TENSORSCHED_CACHE_DIR, else $XDG_CACHE_HOME/tensorsched, else ~/.cache/tensorsched.
  static CodeCache open_default(const Halide::Target& target, const std::string& root = "");
  // Path of the shared object of (workload, schedule).
  std::string object_path(const Workload& w, const std::string& schedule_hash) const;
  // Whether (workload, schedule) has an intact entry: the shared object matches the digest
  // recorded when it was linked, and the relocatable object exists. A damaged entry is removed
  // (with a warning), so the caller compiles it again.
  bool has_entry(const Workload& w, const std::string& schedule_hash) const;
  // Every file of an entry (shared object, its digest, relocatable object), to remove it.
  std::vector<std::string> entry_files(const Workload& w, const std::string& schedule_hash) const;
  // Path of the same code as a relocatable object (kept for artifacts).
  std::string relocatable_path(const Workload& w, const std::string& schedule_hash) const;
  // The shared runtime's shared object, built on first use (with its relocatable object).
  std::string ensure_runtime() const;
  // The runtime's relocatable object (exists after ensure_runtime()).
  std::string runtime_object_path() const;
};

// The default rule's schedule of workload w on this host (schedule/default_schedule.h), read from
// one lowering of w. Its hash names the default's code in the cache like any schedule's: a rule
// that decides otherwise, here or on another host, is another entry (and a change of the lowering
// or the rule's sources is another cache directory: code_cache_build_dir).
Schedule default_schedule_of(const Workload& w);

// Symbol of the argv-style entry point of a workload's code: "<name>_argv".
std::string workload_function_name(const Workload& w, const std::string& schedule_hash);

// Lowers w and returns the pipeline and its arguments (inputs in order). An input with a layout
// (schedule/input_layout.h) gets an ImageParam of the packed rank, read through its wrapper Func,
// so the Funcs (and the schedules that name them) are the same with or without layouts.
struct LoweredWorkload {
  Halide::Pipeline pipeline;
  std::vector<Halide::ImageParam> params;     // one per w.graph.inputs, in order
  std::vector<Halide::Argument> args;         // the same, as compile arguments
  std::vector<Halide::Func> outputs;          // one per w.graph.outputs
};
LoweredWorkload lower_workload(const Workload& w, const std::vector<InputLayout>& layouts = {});

// Compiles w with `schedule` (over inputs laid out by `layouts`) into `cache` (if absent):
// the shared object and the relocatable object. Throws Error naming the workload.
void compile_workload(const Workload& w, const ScheduleFn& schedule, const std::string& schedule_hash,
                      const CodeCache& cache, const std::vector<InputLayout>& layouts = {});

// One workload to compile with one schedule.
struct CompileJob {
  const Workload* workload = nullptr;  // what to compile (outlives the batch)
  ScheduleFn schedule;                 // how to schedule it
  std::string hash;                    // the schedule's hash (code cache key)
  std::vector<InputLayout> layouts;    // how its inputs are packed
  std::string schedule_json;           // the schedule as data (Schedule::to_json), for a builder on another host
};

struct CompileBatchOptions {
  int jobs = 0;            // compiler processes at once; 0 = hardware threads
  double timeout_s = 0;    // per job wall-clock limit (0 = none)
};

struct CompileOutcome {
  std::string error;       // "" when compiled, else why (names the workload; Halide's or the linker's text)
  std::string error_kind;  // with an error: "" (a compile_error) or "runner_lost" (the host building it is gone)
  double seconds = 0;      // wall time of its compile
};

// Compiles `jobs` in forked worker processes (compile_workload in each), so compiles run in
// parallel and a crash or hang in code generation is an error message, not this process's end.
// Stops this process's Halide thread pool first (a process must not fork with it running).
std::vector<CompileOutcome> compile_batch(const std::vector<CompileJob>& jobs, const CodeCache& cache,
                                          const CompileBatchOptions& opts = {});

}  // namespace ts
