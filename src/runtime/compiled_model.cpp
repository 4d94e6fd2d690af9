#include "runtime/compiled_model.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "measure/workload_code.h"
#include "schedule/default_schedule.h"

namespace fs = std::filesystem;

namespace ts {



struct CompiledModel::Impl {
  Graph graph;
  Partition partition;
  CompileStats stats;
  std::vector<WorkloadCode> code;                // loaded code per distinct workload
  std::map<std::string, Tensor> storage;         // activations and inputs (in their planned layouts), allocated once; weights the plan blocks, packed at load
  std::map<std::string, Halide::Buffer<>> bufs;  // views over storage and weights
  std::vector<std::vector<void*>> argv;          // per step: halide_buffer_t* of inputs, outputs
  // Inputs a step's code takes packed (schedule/input_layout.h): constants are packed once here;
  // a runtime tensor is packed before each run of the step, from `from` into `packed`.
  struct RunPack {
    std::string from;        // the model tensor
    InputLayout layout;      // its layout
    Tensor* packed;          // packed storage (in `packed`)
  };
  std::map<std::string, Tensor> packed;          // by "<tensor>#<layout>"
  std::vector<std::vector<RunPack>> run_packs;   // per step
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
  const int jobs = opts.jobs;

  // Per workload the schedule hash its code is cached under: tuned when given, else the default.
  std::vector<std::string> hashes;
  std::vector<std::vector<InputLayout>> layouts;  // per workload, of the code that runs
  std::vector<CompileJob> to_compile;
  std::vector<size_t> compile_index;  // workload of each job
  for (size_t i = 0; i < m.partition.workloads.size(); i++) {
    const Workload& w = m.partition.workloads[i];
    auto tuned = opts.schedules.find(w.exact_key);
    CompileJob job = tuned == opts.schedules.end()
                         ? CompileJob{&w, apply_default_schedule, kDefaultScheduleHash, {}}
                         : CompileJob{&w, schedule_fn(tuned->second), tuned->second.hash(), tuned->second.layouts};
    hashes.push_back(job.hash);
    layouts.push_back(job.layouts);
    if (fs::exists(cache.object_path(w, job.hash)) && fs::exists(cache.relocatable_path(w, job.hash))) continue;
    to_compile.push_back(std::move(job));
    compile_index.push_back(i);
  }
  m.stats.compiled = static_cast<int>(to_compile.size());
  m.stats.cache_hits = m.stats.workloads - m.stats.compiled;

  // A tuned schedule that does not compile (e.g. from another Halide version) falls back to the default.
  std::vector<CompileJob> fallback;
  std::vector<std::string> errors;
  for (const auto& o : compile_batch(to_compile, cache, {jobs, 0})) errors.push_back(o.error);
  for (size_t k = 0; k < errors.size(); k++) {
    if (errors[k].empty()) continue;
    if (to_compile[k].hash == kDefaultScheduleHash) throw Error(errors[k]);
    const Workload& w = *to_compile[k].workload;
    m.stats.warnings.push_back(fmt::format("workload {} ({}): tuned schedule {} failed to compile, using the default: {}",
                                           w.key_hash(), w.name, to_compile[k].hash, errors[k].substr(0, 500)));
    hashes[compile_index[k]] = kDefaultScheduleHash;
    layouts[compile_index[k]].clear();
    if (!fs::exists(cache.object_path(w, kDefaultScheduleHash)))
      fallback.push_back({&w, apply_default_schedule, kDefaultScheduleHash, {}});
  }
  for (const auto& o : compile_batch(fallback, cache, {jobs, 0}))
    if (!o.error.empty()) throw Error(o.error);
  for (const auto& h : hashes) m.stats.tuned += h != kDefaultScheduleHash;

  load_halide_runtime(runtime_so);  // workload code calls into it (allocation, thread pool)
  for (size_t i = 0; i < m.partition.workloads.size(); i++)
    m.code.emplace_back(cache, m.partition.workloads[i], hashes[i]);

  // Buffers: weights view the graph's constants; everything else is allocated here once.
  auto buffer_for = [&](const std::string& name) -> Halide::Buffer<>& {
    auto it = m.bufs.find(name);
    if (it != m.bufs.end()) return it->second;
    auto& info = m.graph.tensor(name);
    Tensor* t;
    if (info.value && !info.layout.blocked()) t = &*info.value;
    else if (info.value) t = &m.storage.emplace(name, pack(info.layout, *info.value, fmt::format("weight '{}'", name))).first->second;
    else t = &m.storage.emplace(name, Tensor(info.dtype, storage_shape(info.layout, info.shape))).first->second;
    return m.bufs.emplace(name, tensor_buffer(*t, name)).first->second;
  };
  for (const auto& name : m.graph.inputs) buffer_for(name);
  for (const auto& step : m.partition.steps) {
    std::vector<void*> a;
    std::vector<Impl::RunPack> packs;
    const Workload& w = m.partition.workloads[step.workload];
    for (size_t k = 0; k < step.inputs.size(); k++) {
      const std::string& t = step.inputs[k];
      const InputLayout* l = find_layout(layouts[step.workload], w.graph.inputs[k]);
      if (!l) {
        a.push_back(buffer_for(t).raw_buffer());
        continue;
      }
      const std::string key = t + "#" + describe(*l);
      auto it = m.packed.find(key);
      if (it == m.packed.end()) {
        const TensorInfo& info = m.graph.tensor(t);
        Tensor p = info.value ? pack_tensor(*l, *info.value) : Tensor(info.dtype, packed_shape(*l, info.shape));
        it = m.packed.emplace(key, std::move(p)).first;
        m.bufs.emplace(key, tensor_buffer(it->second, t));
        if (!info.value) packs.push_back({t, *l, &it->second});
      }
      a.push_back(m.bufs.at(key).raw_buffer());
    }
    for (const auto& t : step.outputs) a.push_back(buffer_for(t).raw_buffer());
    m.argv.push_back(std::move(a));
    m.run_packs.push_back(std::move(packs));
  }
  for (const auto& o : m.graph.outputs) buffer_for(o);
  m.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Workload code is unloaded with Impl::code; the runtime stays loaded (its threads may be winding down).
CompiledModel::~CompiledModel() = default;

const Graph& CompiledModel::graph() const { return impl_->graph; }
const Partition& CompiledModel::partition() const { return impl_->partition; }
const CompileStats& CompiledModel::stats() const { return impl_->stats; }
const std::vector<double>& CompiledModel::step_seconds() const { return impl_->step_seconds; }

void CompiledModel::set_threads(int threads) { set_halide_threads(threads); }

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
    for (const auto& p : m.run_packs[s]) pack_into(p.layout, m.storage.at(p.from), *p.packed);
    int rc = m.code[m.partition.steps[s].workload].call(m.argv[s].data());
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
