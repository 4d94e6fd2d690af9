#include "measure/workload_code.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "graph/layout.h"
#include "lower/lower.h"
#include "measure/pipeline_memory.h"
#include "measure/spinning_pool.h"

namespace ts {

namespace {

std::mutex runtime_mutex;
void* runtime_handle = nullptr;  // the process's Halide runtime; never unloaded (its threads may linger)

std::mutex error_mutex;
std::string halide_errors;  // what the runtime reported since take_halide_error()

extern "C" void keep_halide_error(void* /*user_context*/, const char* msg) {
  std::lock_guard<std::mutex> lock(error_mutex);
  if (halide_errors.size() > 4096) return;  // one failure can be reported by every task
  std::string m = msg ? msg : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  halide_errors += (halide_errors.empty() ? "" : "; ") + m;
}

// The runtime's function `name`; `where` begins the error when it has none.
template <class Fn>
Fn runtime_function(void* runtime, const char* name, const std::string& where) {
  auto fn = reinterpret_cast<Fn>(dlsym(runtime, name));
  if (!fn) throw Error(fmt::format("{}: the Halide runtime has no {}", where, name));
  return fn;
}

}  // namespace

std::string take_halide_error() {
  std::lock_guard<std::mutex> lock(error_mutex);
  return std::exchange(halide_errors, std::string());
}

void* load_halide_runtime(const std::string& so) {
  std::lock_guard<std::mutex> lock(runtime_mutex);
  if (runtime_handle) return runtime_handle;
  runtime_handle = dlopen(so.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!runtime_handle) throw Error(fmt::format("{}: cannot load the Halide runtime: {}", so, dlerror()));
  using Handler = void (*)(void*, const char*);
  runtime_function<Handler (*)(Handler)>(runtime_handle, "halide_set_error_handler", so)(keep_halide_error);
  using SetParFor = halide_do_par_for_t (*)(halide_do_par_for_t);
  runtime_function<SetParFor>(runtime_handle, "halide_set_custom_do_par_for", so)(spinning_do_par_for);
  using SetMalloc = halide_malloc_t (*)(halide_malloc_t);
  runtime_function<SetMalloc>(runtime_handle, "halide_set_custom_malloc", so)(reusing_halide_malloc);
  using SetFree = halide_free_t (*)(halide_free_t);
  runtime_function<SetFree>(runtime_handle, "halide_set_custom_free", so)(reusing_halide_free);
  return runtime_handle;
}

void set_halide_threads(int threads) {
  void* rt;
  {
    std::lock_guard<std::mutex> lock(runtime_mutex);
    rt = runtime_handle;
  }
  if (!rt) throw Error("set_halide_threads: no Halide runtime is loaded yet");
  // 0 = Halide's default (HL_NUM_THREADS or the core count)
  runtime_function<int (*)(int)>(rt, "halide_set_num_threads", "set_halide_threads")(threads > 0 ? threads : 0);
  set_spinning_pool_threads(threads);  // parallel loops run there; Halide's pool keeps async tasks
}

void stop_halide_threads() {
  void* rt;
  {
    std::lock_guard<std::mutex> lock(runtime_mutex);
    rt = runtime_handle;
  }
  if (!rt) return;
  stop_spinning_pool();
  using Shutdown = void (*)();
  if (auto fn = reinterpret_cast<Shutdown>(dlsym(rt, "halide_shutdown_thread_pool"))) fn();
}

WorkloadCode::WorkloadCode(const CodeCache& cache, const Workload& w, const std::string& schedule_hash)
    : path_(cache.object_path(w, schedule_hash)) {
  handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw Error(fmt::format("{}: cannot load workload {} ({}): {}", path_, w.key_hash(), w.name, dlerror()));
  const std::string sym = workload_function_name(w, schedule_hash) + "_argv";
  fn_ = reinterpret_cast<WorkloadEntryFn>(dlsym(handle_, sym.c_str()));
  if (!fn_) {
    dlclose(handle_);
    throw Error(fmt::format("{}: has no symbol {}", path_, sym));
  }
}

WorkloadCode::WorkloadCode(WorkloadCode&& o) noexcept
    : path_(std::move(o.path_)), handle_(o.handle_), fn_(o.fn_) {
  o.handle_ = nullptr;
  o.fn_ = nullptr;
}

WorkloadCode::~WorkloadCode() {
  if (handle_) dlclose(handle_);
}

Halide::Buffer<> tensor_buffer(Tensor& t, const std::string& name) {
  std::vector<int> sizes(t.shape.rbegin(), t.shape.rend());
  return Halide::Buffer<>(halide_type(t.dtype), t.bytes.data(), sizes, name);
}

WorkloadCall::WorkloadCall(const Workload& w, const std::map<std::string, Tensor>& values,
                           const std::vector<InputLayout>& layouts) {
  for (const auto& name : w.graph.inputs) {
    auto it = values.find(name);
    if (it == values.end())
      throw Error(fmt::format("workload {} ({}): no value for input '{}'", w.key_hash(), w.name, name));
    const auto& info = w.graph.tensor(name);
    if (it->second.shape != info.shape || it->second.dtype != info.dtype)
      throw Error(fmt::format("workload {} ({}): input '{}' is {} {}, the workload expects {} {}", w.key_hash(), w.name,
                              name, dtype_name(it->second.dtype), shape_str(it->second.shape), dtype_name(info.dtype),
                              shape_str(info.shape)));
    const InputLayout* l = find_layout(layouts, name);
    if (l) inputs.push_back(pack_tensor(*l, it->second));
    else if (info.layout.blocked()) inputs.push_back(pack(info.layout, it->second, fmt::format("workload {} input '{}'", w.key_hash(), name)));
    else inputs.push_back(it->second);
  }
  for (const auto& name : w.graph.outputs) {
    const auto& info = w.graph.tensor(name);
    outputs.emplace_back(info.dtype, storage_shape(info.layout, info.shape));
  }
  // Buffers only once both vectors are complete: they point into the tensors' bytes.
  for (size_t i = 0; i < inputs.size(); i++) buffers.push_back(tensor_buffer(inputs[i], w.graph.inputs[i]));
  for (size_t i = 0; i < outputs.size(); i++) buffers.push_back(tensor_buffer(outputs[i], w.graph.outputs[i]));
  for (auto& b : buffers) argv.push_back(b.raw_buffer());
}

std::string concat_tensor_bytes(const std::vector<Tensor>& tensors) {
  std::string bytes;
  for (const Tensor& t : tensors) bytes.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return bytes;
}

std::optional<std::vector<Tensor>> outputs_from_bytes(const Workload& w, std::string_view bytes, std::string& why) {
  std::vector<Tensor> out;
  size_t offset = 0;
  for (const auto& name : w.graph.outputs) {
    const auto& info = w.graph.tensor(name);
    Tensor t(info.dtype, storage_shape(info.layout, info.shape));  // as the code stores it
    if (bytes.size() < offset + t.bytes.size()) {
      why = fmt::format("{} bytes of outputs, expected at least {}", bytes.size(), offset + t.bytes.size());
      return std::nullopt;
    }
    std::copy_n(bytes.data() + offset, t.bytes.size(), reinterpret_cast<char*>(t.bytes.data()));
    offset += t.bytes.size();
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace ts
