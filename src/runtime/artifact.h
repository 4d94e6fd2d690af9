#pragma once
// The artifact `tensorsched compile` hands to users: the model's code as one self-contained
// shared library (every workload's object as compiled for the CompiledModel, its packed
// constants, one Halide runtime, the plan executor and the C API of api/tensorsched_model.h),
// the same as a static library, the C header, and a manifest saying what is inside. The library
// needs only libc, libstdc++, libm and pthreads at run time: no libHalide, LLVM or tensorsched.
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/compiled_model.h"

namespace ts {

struct ArtifactOptions {
  std::string out_dir;               // created when missing; the artifact's files in it are replaced
  std::string name = "model";        // lib<name>.so, lib<name>.a
  bool static_library = true;        // also write lib<name>.a
  bool constants_file = false;       // also write constants.bin (for ts_model_create(path))
  nlohmann::json manifest;           // fields added to manifest.json (model, records, ...)
};

struct Artifact {
  std::string shared_library;        // <out>/lib<name>.so
  std::string static_library;        // <out>/lib<name>.a ("" when not written)
  std::string header;                // <out>/tensorsched_model.h
  std::string manifest;              // <out>/manifest.json
  nlohmann::json manifest_json;      // what it holds
};

// Builds the artifact of `model` with the system C++ compiler (argument vectors, no shell).
// Throws Error naming the stage (compile, link, archive) and the compiler's output.
Artifact write_artifact(const CompiledModel& model, const ArtifactOptions& opts);

}  // namespace ts
