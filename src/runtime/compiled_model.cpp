#include "runtime/compiled_model.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "lower/lower.h"
#include "schedule/default_schedule.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

constexpr const char* kDefaultScheduleHash = "default2";  // bump when the heuristic changes

using ArgvFn = int (*)(void**);

// Compiles the workloads in `to_compile` in up to `jobs` forked worker processes, so compiles run in
// parallel and a crash in code generation is an error message, not the end of this process.
void compile_in_workers(const std::vector<const Workload*>& to_compile, const CodeCache& cache, int jobs) {
  struct Running {
    pid_t pid;
    int fd;
    const Workload* w;
  };
  std::vector<Running> running;
  std::vector<std::string> errors;
  size_t next = 0;
  auto reap = [&](Running r) {
    std::string msg;
    char buf[4096];
    ssize_t n;
    while ((n = read(r.fd, buf, sizeof buf)) > 0) msg.append(buf, n);
    close(r.fd);
    int status = 0;
    waitpid(r.pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      errors.push_back(msg.empty() ? fmt::format("workload {} ({}): compiler process died (status {})",
                                                 r.w->key_hash(), r.w->name, status)
                                   : msg);
  };
  while (next < to_compile.size() || !running.empty()) {
    while (next < to_compile.size() && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) throw Error("compile: pipe() failed");
      const Workload* w = to_compile[next++];
      pid_t pid = fork();
      if (pid < 0) throw Error("compile: fork() failed");
      if (pid == 0) {
        close(fds[0]);
        int rc = 0;
        try {
          compile_workload(*w, apply_default_schedule, kDefaultScheduleHash, cache);
        } catch (const std::exception& e) {
          std::string m = e.what();
          if (write(fds[1], m.data(), m.size()) < 0) {}
          rc = 1;
        }
        _exit(rc);
      }
      close(fds[1]);
      running.push_back({pid, fds[0], w});
    }
    // Wait for the oldest; compiles take similar time, so this keeps the workers busy enough.
    reap(running.front());
    running.erase(running.begin());
  }
  if (!errors.empty()) throw Error(errors.front());
}

}  // namespace

std::map<std::string, Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::map<std::string, Tensor> r;
  uint64_t k = 0;
  for (const auto& name : g.inputs) {
    const auto& info = g.tensor(name);
    r[name] = random_tensor(info.dtype, info.shape, seed + 7919 * ++k, dtype_is_float(info.dtype) ? -1.0 : 0.0,
                            dtype_is_float(info.dtype) ? 1.0 : 2.0);
  }
  return r;
}

struct CompiledModel::Impl {
  Graph graph;
  Partition partition;
  CompileStats stats;
  void* runtime = nullptr;                       // dlopen handle of the shared Halide runtime
  std::vector<void*> libs;                       // dlopen handles of workload code
  std::vector<ArgvFn> fns;                       // entry point per distinct workload
  std::map<std::string, Tensor> storage;         // activations and inputs, allocated once
  std::map<std::string, Halide::Buffer<>> bufs;  // views over storage and weights
  std::vector<std::vector<void*>> argv;          // per step: halide_buffer_t* of inputs, outputs
  std::vector<double> step_seconds;              // per step, last run
};

CompiledModel::CompiledModel(Graph g, const CompileOptions& opts) : impl_(new Impl) {
  auto t0 = std::chrono::steady_clock::now();
  Impl& m = *impl_;
  m.graph = std::move(g);
  m.partition = partition_graph(m.graph);
  m.stats.workloads = static_cast<int>(m.partition.workloads.size());
  m.stats.steps = static_cast<int>(m.partition.steps.size());

  CodeCache cache = CodeCache::open_default(Halide::get_host_target(), opts.cache_root);
  const std::string runtime_so = cache.ensure_runtime();
  std::vector<const Workload*> to_compile;
  for (const auto& w : m.partition.workloads)
    if (!fs::exists(cache.object_path(w, kDefaultScheduleHash))) to_compile.push_back(&w);
  m.stats.compiled = static_cast<int>(to_compile.size());
  m.stats.cache_hits = m.stats.workloads - m.stats.compiled;
  int jobs = opts.jobs > 0 ? opts.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  compile_in_workers(to_compile, cache, jobs);

  // Workload code calls into the runtime (allocation, thread pool): load it globally first.
  m.runtime = dlopen(runtime_so.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!m.runtime) throw Error(fmt::format("{}: cannot load: {}", runtime_so, dlerror()));
  for (const auto& w : m.partition.workloads) {
    std::string so = cache.object_path(w, kDefaultScheduleHash);
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw Error(fmt::format("{}: cannot load: {}", so, dlerror()));
    std::string sym = workload_function_name(w, kDefaultScheduleHash) + "_argv";
    auto fn = reinterpret_cast<ArgvFn>(dlsym(h, sym.c_str()));
    if (!fn) throw Error(fmt::format("{}: has no symbol {}", so, sym));
    m.libs.push_back(h);
    m.fns.push_back(fn);
  }

  // Buffers: weights view the graph's constants; everything else is allocated here once.
  auto buffer_for = [&](const std::string& name) -> Halide::Buffer<>& {
    auto it = m.bufs.find(name);
    if (it != m.bufs.end()) return it->second;
    auto& info = m.graph.tensor(name);
    Tensor* t;
    if (info.value) t = &*info.value;
    else t = &m.storage.emplace(name, Tensor(info.dtype, info.shape)).first->second;
    std::vector<int> sizes(t->shape.rbegin(), t->shape.rend());
    return m.bufs.emplace(name, Halide::Buffer<>(halide_type(t->dtype), t->bytes.data(), sizes, name)).first->second;
  };
  for (const auto& name : m.graph.inputs) buffer_for(name);
  for (const auto& step : m.partition.steps) {
    std::vector<void*> a;
    for (const auto& t : step.inputs) a.push_back(buffer_for(t).raw_buffer());
    for (const auto& t : step.outputs) a.push_back(buffer_for(t).raw_buffer());
    m.argv.push_back(std::move(a));
  }
  for (const auto& o : m.graph.outputs) buffer_for(o);
  m.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

CompiledModel::~CompiledModel() {
  for (void* h : impl_->libs) dlclose(h);
  // The runtime stays loaded: its thread pool may still be winding down.
}

const Graph& CompiledModel::graph() const { return impl_->graph; }
const Partition& CompiledModel::partition() const { return impl_->partition; }
const CompileStats& CompiledModel::stats() const { return impl_->stats; }
const std::vector<double>& CompiledModel::step_seconds() const { return impl_->step_seconds; }

void CompiledModel::set_threads(int threads) {
  using SetThreads = int (*)(int);
  auto fn = reinterpret_cast<SetThreads>(dlsym(impl_->runtime, "halide_set_num_threads"));
  if (fn) fn(threads);
}

std::vector<Tensor> CompiledModel::run(const std::map<std::string, Tensor>& inputs) {
  Impl& m = *impl_;
  for (const auto& name : m.graph.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error(fmt::format("{}: no value given for input '{}'", m.graph.path, name));
    Tensor& dst = m.storage.at(name);
    if (it->second.shape != dst.shape || it->second.dtype != dst.dtype)
      throw Error(fmt::format("{}: input '{}' is {} {}, the model expects {} {}", m.graph.path, name,
                              dtype_name(it->second.dtype), shape_str(it->second.shape), dtype_name(dst.dtype),
                              shape_str(dst.shape)));
    std::memcpy(dst.bytes.data(), it->second.bytes.data(), dst.bytes.size());
  }
  for (const auto& [name, t] : inputs)
    if (!m.storage.count(name) || m.graph.is_constant(name))
      throw Error(fmt::format("{}: '{}' is not a runtime input of the model", m.graph.path, name));
  m.step_seconds.resize(m.partition.steps.size());
  for (size_t s = 0; s < m.partition.steps.size(); s++) {
    auto t0 = std::chrono::steady_clock::now();
    int rc = m.fns[m.partition.steps[s].workload](m.argv[s].data());
    m.step_seconds[s] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rc != 0) {
      const auto& w = m.partition.workloads[m.partition.steps[s].workload];
      throw Error(fmt::format("{}: workload {} ({}) failed at run time (Halide error {})", m.graph.path,
                              w.key_hash(), w.name, rc));
    }
  }
  std::vector<Tensor> outs;
  for (const auto& o : m.graph.outputs) {
    const auto& info = m.graph.tensor(o);
    outs.push_back(info.value ? *info.value : m.storage.at(o));
  }
  return outs;
}

}  // namespace ts
