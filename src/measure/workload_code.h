#pragma once
// Loading and calling compiled workload code (see workload_compiler.h): the shared Halide
// runtime, a workload's shared object and its argv entry point, the runtime's thread count, and
// Halide buffers over ts::Tensor storage for a call. Used by CompiledModel in the caller's
// process and by the Measurer in its run workers (never in the Measurer's parent: loading the
// runtime starts no threads, but running code does, and a process with Halide's thread pool
// running must not fork).
#include <Halide.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"

namespace ts {

// The argv-style entry point: halide_buffer_t* of the inputs, then of the outputs.
using WorkloadEntryFn = int (*)(void** args);

// Loads the shared Halide runtime with RTLD_GLOBAL (workload code binds to its symbols) once per
// process and returns its handle; later calls return the first one loaded, whatever `so` is
// (every cache's runtime is the same Halide code). Installs an error handler that keeps the
// message (Halide's default prints it and aborts the process), so a failing call returns its
// status and take_halide_error() says why. Throws Error naming `so`.
void* load_halide_runtime(const std::string& so);

// The messages Halide reported since the last call (any thread), then forgets them; "" if none.
std::string take_halide_error();

// Sets the thread pool size of the loaded runtime (threads <= 0: Halide's default). Throws Error
// when no runtime is loaded.
void set_halide_threads(int threads);

// Joins the loaded runtime's thread pool (it restarts on the next parallel call), so that this
// process can fork: a child inherits the pool's state but not its threads. No-op without a
// runtime. Not while another thread of this process runs workload code.
void stop_halide_threads();

// One workload's code, loaded (RTLD_LOCAL) and unloaded with this object.
class WorkloadCode {
 public:
  // Loads cache.object_path(w, schedule_hash) and finds "<workload_function_name>_argv".
  // Throws Error naming the file and what is missing.
  WorkloadCode(const CodeCache& cache, const Workload& w, const std::string& schedule_hash);
  ~WorkloadCode();
  WorkloadCode(WorkloadCode&& o) noexcept;
  WorkloadCode(const WorkloadCode&) = delete;
  WorkloadCode& operator=(const WorkloadCode&) = delete;
  WorkloadCode& operator=(WorkloadCode&&) = delete;

  const std::string& path() const { return path_; }
  // Calls the entry point; returns Halide's status (0 = success).
  int call(void** args) const { return fn_(args); }
  WorkloadEntryFn entry() const { return fn_; }

 private:
  std::string path_;            // the shared object
  void* handle_ = nullptr;      // its dlopen handle
  WorkloadEntryFn fn_ = nullptr;  // its entry point
};

// A Halide buffer viewing t's bytes (dims reversed: Halide's innermost first). t must outlive it.
Halide::Buffer<> tensor_buffer(Tensor& t, const std::string& name);

// Storage and buffers for one call of a workload: its graph inputs (given by name, packed where
// `layouts` says, as the code compiled with those layouts expects) and freshly allocated
// outputs, and the argv array over them.
struct WorkloadCall {
  std::vector<Tensor> inputs;              // w.graph.inputs, in order (packed ones packed)
  std::vector<Tensor> outputs;             // w.graph.outputs, in order (zero-filled)
  std::vector<Halide::Buffer<>> buffers;   // views over inputs then outputs
  std::vector<void*> argv;                 // halide_buffer_t* of buffers, for WorkloadCode::call

  // Copies `values` (every graph input of w by name, shapes and dtypes checked). Throws Error
  // naming the workload and the input. Not copyable or movable: argv points into buffers.
  WorkloadCall(const Workload& w, const std::map<std::string, Tensor>& values, const std::vector<InputLayout>& layouts = {});
  WorkloadCall(const WorkloadCall&) = delete;
  WorkloadCall& operator=(const WorkloadCall&) = delete;
};

// The bytes of `tensors` one after another (outputs sent from a worker or another host).
std::string concat_tensor_bytes(const std::vector<Tensor>& tensors);
// w's outputs, as its code stores them, from the front of `bytes` (concat_tensor_bytes of
// them); nullopt with the reason in `why` when `bytes` is too short.
std::optional<std::vector<Tensor>> outputs_from_bytes(const Workload& w, std::string_view bytes, std::string& why);

}  // namespace ts
