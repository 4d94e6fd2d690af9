#pragma once
// The user-facing entry points the `tensorsched` command and the Python module share: load a
// model as every command sees it, pick each workload's schedule from a records database, and
// compile a model into an artifact (runtime/artifact.h) with a manifest of what it holds.
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/artifact.h"
#include "schedule/schedule.h"

namespace ts {

struct LoadOptions {
  std::vector<std::string> shapes;   // "NAME=D1,D2,..." overrides of input shapes
  std::string layout = "blocked";    // "blocked": the layout plan (graph/layout_plan.h); "plain": as declared
  uint64_t max_memory_bytes = 0;     // ImportOptions::max_memory_bytes (0 = 3/4 of physical memory)
  bool winograd = true;              // blocked layouts: 3x3 convs that pay run as Winograd F(4x4, 3x3) (graph/winograd.h)
  int threads = 0;                   // Halide threads the model will run with (0: the default count): where Winograd pays depends on it
};

// Imports the model (graph-only models get generated weights), runs the default passes and
// plans tensor layouts (blocked by the host's float32 vector lanes unless layout is "plain").
// Throws Error naming the file, node or op.
Graph load_model(const std::string& path, const LoadOptions& opts = {});

// The schedule every workload of g runs with `threads` Halide threads (0: the default count)
// by the records database at db_path (which must exist; tune/tuner.h, best_schedules), of this
// machine and build unless allow_foreign; why a record was passed over (and how many foreign
// ones were) goes to `warnings`. The default's own record is not a tuned schedule.
std::map<std::string, Schedule> best_schedules_of(const Graph& g, const std::string& db_path,
                                                  std::vector<std::string>& warnings, bool allow_foreign = false,
                                                  int threads = 0);

// The schedules that `specs` ask for, by exact key: each "KEY=KNOBS_JSON" (KEY a workload's key
// hash, as `tensorsched workloads` prints it; KNOBS_JSON a DefaultKnobs object such as
// {"columns":"7","prefetch":"0"}) runs that workload of g with the default rule under those
// knobs, so a variant of the rule is measured inside the whole network, where the caches hold
// what the earlier steps left. Throws Error naming a spec that is malformed or names no workload.
std::map<std::string, Schedule> knob_schedules_of(const Graph& g, const std::vector<std::string>& specs);

struct CompileRequest {
  std::string model;                 // ONNX file
  LoadOptions load;                  // how to load it
  std::string out_dir;               // artifact directory
  std::string name = "model";        // lib<name>.so: letters, digits, '_' and '-'
  std::string db_path;               // records database ("" = default schedules only)
  std::string cache_dir;             // code cache root ("" = default)
  bool allow_foreign_records = false;  // use records of other machines and builds too
  bool static_library = true;        // also lib<name>.a
  bool constants_file = false;       // also constants.bin
};

struct CompileResult {
  Artifact artifact;                 // the files written and the manifest
  int workloads = 0;                 // distinct workloads
  int tuned = 0;                     // of them, running a tuned schedule from the database
  int steps = 0;                     // workload calls per inference
  std::vector<std::string> warnings; // records passed over, tuned schedules that did not compile
};

// Loads, compiles (with the database's best schedules) and writes the artifact.
CompileResult compile_model(const CompileRequest& req);

}  // namespace ts
