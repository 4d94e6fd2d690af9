#include "runtime/compiled_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include "graph/const_eval.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "measure/time_stats.h"
#include "measure/workload_code.h"
#include "measure/workload_compiler.h"
#include "runtime/huge_pages.h"
#include "schedule/default_schedule.h"

namespace fs = std::filesystem;

namespace ts {

struct CompiledModel::Impl {
  Graph graph;
  Partition partition;
  CompileStats stats;
  std::vector<WorkloadCode> code;                // loaded code per distinct workload
  std::vector<std::string> schedule_hashes;      // per workload: the schedule its code was compiled with
  std::vector<std::string> default_hashes;       // per workload: the default rule's schedule's hash
  std::vector<std::string> object_files;         // per plan function: its relocatable object
  std::string runtime_object;                    // the Halide runtime's relocatable object
  std::map<std::string, Tensor> packed;          // constants packed at load (by the plan or a schedule), until copied to constant_blob
  std::vector<const void*> constants;            // per plan buffer: a constant's bytes, else null
  HugePageBytes constant_blob;                   // every constant at its plan offset, on huge pages
  std::unique_ptr<plan::Executor> executor;      // runs the plan over the loaded code

  // Compiles (or finds in the cache) each workload's code, tuned where opts has a schedule, else
  // the default; fills schedule_hashes and returns per workload the input layouts of its code.
  std::vector<std::vector<InputLayout>> compile_workloads(CodeCache& cache, const CompileOptions& opts);
  // Loads each workload's code and names its plan function in p; returns their entries.
  std::vector<plan::EntryFn> load_code(CodeCache& cache, plan::Plan& p);
  // The plan's buffers and steps: constants view the graph's values (packed ones are packed
  // here, once); model inputs are the caller's; everything else is an activation.
  void add_buffers_and_steps(plan::Plan& p, const std::vector<std::vector<InputLayout>>& layouts,
                             const CompileOptions& opts);
  // Copies every constant into one blob at the plan's offsets, as an artifact lays them out.
  void place_constants(plan::Plan& p, bool huge_pages);
};

namespace {

plan::Buffer plan_buffer(const std::string& name, plan::Role role, DType dtype, const Shape& storage) {
  const Halide::Type t = halide_type(dtype);
  return plan::Buffer{name, role, static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bits()), storage, 0};
}

// Lays the constants out in one blob (64-byte aligned offsets), as an artifact stores them.
void assign_constant_offsets(plan::Plan& p) {
  uint64_t at = 0;
  for (auto& b : p.buffers) {
    if (b.role != plan::Role::Constant) continue;
    b.offset = at;
    at = (at + b.bytes() + 63) / 64 * 64;
  }
  p.constant_bytes = at;
}

// Each input buffer of a concat with its byte offset inside the output, when the producers of the
// inputs can write their results there in place, else {} (the concat stays a copy step). In
// place needs every input to be an activation of its own (not a model input, a constant or
// already a view), used once by the concat and passed unpacked, stored in the output's layout
// and dtype, and the concat axis's outer storage dims all 1 (batch 1): each input is then one
// contiguous region of the output, at a 64-byte aligned offset.
std::vector<std::pair<int, uint64_t>> in_place_offsets(const Graph& g, const Workload& w, const WorkloadStep& step,
                                       const plan::Plan& p, const plan::Step& ps) {
  if (w.graph.nodes.size() != 1 || w.graph.nodes[0].op != "Concat" || step.outputs.size() != 1 || !ps.packs.empty())
    return {};
  const Node& node = w.graph.nodes[0];
  const TensorInfo& out = g.tensor(step.outputs[0]);
  const Shape out_storage = storage_shape(out.layout, out.shape);
  const int64_t axis = normalize_axis(node.attr_int("axis", 0), static_cast<int64_t>(out.shape.size()), node);
  int64_t outer = 1, inner = static_cast<int64_t>(halide_type(out.dtype).bytes());
  for (int64_t d = 0; d < axis; d++) outer *= out_storage[d];
  for (size_t d = axis + 1; d < out_storage.size(); d++) inner *= out_storage[d];
  if (outer != 1) return {};
  std::vector<std::pair<int, uint64_t>> offsets;
  std::set<std::string> seen;
  uint64_t at = 0;
  for (const auto& name : node.inputs) {
    const auto k = std::find(w.graph.inputs.begin(), w.graph.inputs.end(), name) - w.graph.inputs.begin();
    if (k >= static_cast<long>(step.inputs.size())) return {};
    const std::string& t = step.inputs[k];
    const plan::Buffer& b = p.buffers[ps.args[k]];
    const TensorInfo& info = g.tensor(t);
    if (!seen.insert(t).second || b.name != t || b.role != plan::Role::Activation || b.view_of >= 0 ||
        info.layout != out.layout || info.dtype != out.dtype)
      return {};
    const Shape s = storage_shape(info.layout, info.shape);
    for (size_t d = 0; d < s.size(); d++)
      if (static_cast<int64_t>(d) != axis && s[d] != out_storage[d]) return {};
    if (at % plan::kActivationAlign != 0) return {};
    offsets.emplace_back(ps.args[k], at);
    at += static_cast<uint64_t>(s[axis] * inner);
  }
  if (at != static_cast<uint64_t>(out_storage[axis] * inner)) return {};
  return offsets;
}

// Elements from the start of a Slice's input to the start of its window when the window is one
// contiguous run of a row-major input (unit steps where it spans more than one index, the axes
// before the first cut of extent 1, the axes after it whole), else nullopt.
std::optional<int64_t> contiguous_slice_start(const Graph& wg, const Node& n, const Shape& in) {
  auto constant = [&](size_t k) -> std::optional<std::vector<int64_t>> {
    if (k >= n.inputs.size() || n.inputs[k].empty()) return std::vector<int64_t>{};
    const TensorInfo& t = wg.tensor(n.inputs[k]);
    if (!t.value) return std::nullopt;
    return t.value->to_i64_vector();
  };
  if (wg.opset < 10) return std::nullopt;
  const auto starts = constant(1), ends = constant(2), axes = constant(3), steps = constant(4);
  if (!starts || !ends || !axes || !steps) return std::nullopt;
  const SliceWindow w = slice_window(n, in, *starts, *ends, *axes, *steps);
  // cut: the first axis the window does not take whole (in.size(): the whole input).
  const size_t r = in.size();
  size_t cut = 0;
  while (cut < r && w.shape[cut] == in[cut] && w.begin[cut] == 0) cut++;
  int64_t start = 0, stride = 1;
  for (size_t d = r; d-- > 0;) {
    const bool unit = w.shape[d] <= 1 || w.step[d] == 1;
    const bool whole = w.shape[d] == in[d] && w.begin[d] == 0;
    if (!unit || (d < cut && cut < r && in[d] != 1) || (d > cut && !whole)) return std::nullopt;
    start += w.begin[d] * stride;
    stride *= in[d];
  }
  return start;
}

// The byte offset inside its one input at which a step's output lies when the step only views
// that input: Reshape, Flatten, Squeeze and Unsqueeze keep the bytes, a Slice that takes one
// contiguous run moves the start (ShuffleNetV2's channel halves). Plain activations only (not a
// model input or output, nothing packed or blocked), the offset 64-byte aligned as the
// executor's views require; else nullopt and the step stays a copy.
std::optional<uint64_t> view_offset(const Graph& g, const Workload& w, const WorkloadStep& step, const plan::Plan& p,
                                    const plan::Step& ps) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1 || !ps.packs.empty() || ps.args.size() != 2 ||
      w.graph.inputs.size() != 1 || w.graph.outputs.size() != 1)
    return std::nullopt;
  const TensorInfo& in = g.tensor(step.inputs[0]);
  const TensorInfo& out = g.tensor(step.outputs[0]);
  const plan::Buffer& from = p.buffers[ps.args[0]];
  const plan::Buffer& to = p.buffers[ps.args[1]];
  if (from.role != plan::Role::Activation || to.role != plan::Role::Activation || from.name != step.inputs[0] ||
      to.view_of >= 0 || in.layout.blocked() || out.layout.blocked() || in.dtype != out.dtype ||
      is_graph_output(g, step.outputs[0]))
    return std::nullopt;
  static const std::set<std::string> reshapes = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  std::string cur = w.graph.inputs[0];
  int64_t start = 0;  // elements
  for (const auto& n : w.graph.nodes) {
    if (n.inputs.empty() || n.inputs[0] != cur || n.outputs.size() != 1) return std::nullopt;
    if (n.op == "Slice") {
      const auto s = contiguous_slice_start(w.graph, n, w.graph.tensor(cur).shape);
      if (!s) return std::nullopt;
      start += *s;
    } else if (!reshapes.count(n.op)) {
      return std::nullopt;
    }
    cur = n.outputs[0];
  }
  const uint64_t offset = static_cast<uint64_t>(start) * halide_type(in.dtype).bytes();
  if (cur != w.graph.outputs[0] || offset % plan::kActivationAlign != 0 || offset + to.bytes() > from.bytes())
    return std::nullopt;
  return offset;
}

}  // namespace

std::vector<std::vector<InputLayout>> CompiledModel::Impl::compile_workloads(CodeCache& cache,
                                                                            const CompileOptions& opts) {
  // Per workload the schedule hash its code is cached under: tuned when given, else the default.
  std::vector<std::string> hashes;
  std::vector<std::vector<InputLayout>> layouts;  // per workload, of the code that runs
  std::vector<CompileJob> to_compile;
  std::vector<size_t> compile_index;  // workload of each job
  std::vector<Schedule> defaults;  // per workload, the default rule's schedule
  default_hashes.clear();
  for (size_t i = 0; i < partition.workloads.size(); i++) {
    const Workload& w = partition.workloads[i];
    defaults.push_back(default_schedule_of(w));
    default_hashes.push_back(defaults.back().hash());
    auto tuned = opts.schedules.find(w.exact_key);
    CompileJob job = tuned == opts.schedules.end()
                         ? CompileJob{&w, schedule_fn(defaults.back()), default_hashes.back(), {}}
                         : CompileJob{&w, schedule_fn(tuned->second), tuned->second.hash(), tuned->second.layouts};
    hashes.push_back(job.hash);
    layouts.push_back(job.layouts);
    if (cache.has_entry(w, job.hash)) continue;
    to_compile.push_back(std::move(job));
    compile_index.push_back(i);
  }
  stats.compiled = static_cast<int>(to_compile.size());
  stats.cache_hits = stats.workloads - stats.compiled;

  // A tuned schedule that does not compile (e.g. from another Halide version) falls back to the default.
  std::vector<CompileJob> fallback;
  std::vector<std::string> errors;
  for (const auto& o : compile_batch(to_compile, cache, {opts.jobs, opts.compile_timeout_s})) errors.push_back(o.error);
  for (size_t k = 0; k < errors.size(); k++) {
    if (errors[k].empty()) continue;
    const size_t i = compile_index[k];
    if (to_compile[k].hash == default_hashes[i]) throw Error(errors[k]);
    const Workload& w = *to_compile[k].workload;
    stats.warnings.push_back(fmt::format("workload {} ({}): tuned schedule {} failed to compile, using the default: {}",
                                         w.key_hash(), w.name, to_compile[k].hash, errors[k].substr(0, 500)));
    hashes[i] = default_hashes[i];
    layouts[i].clear();
    if (!cache.has_entry(w, default_hashes[i])) fallback.push_back({&w, schedule_fn(defaults[i]), default_hashes[i], {}});
  }
  for (const auto& o : compile_batch(fallback, cache, {opts.jobs, opts.compile_timeout_s}))
    if (!o.error.empty()) throw Error(o.error);
  for (size_t i = 0; i < hashes.size(); i++) stats.tuned += hashes[i] != default_hashes[i];
  schedule_hashes = hashes;
  return layouts;
}

std::vector<plan::EntryFn> CompiledModel::Impl::load_code(CodeCache& cache, plan::Plan& p) {
  std::vector<plan::EntryFn> entries;
  for (size_t i = 0; i < partition.workloads.size(); i++) {
    const Workload& w = partition.workloads[i];
    code.emplace_back(cache, w, schedule_hashes[i]);
    p.functions.push_back(workload_function_name(w, schedule_hashes[i]) + "_argv");
    entries.push_back(code.back().entry());
    object_files.push_back(cache.relocatable_path(w, schedule_hashes[i]));
  }
  return entries;
}

void CompiledModel::Impl::add_buffers_and_steps(plan::Plan& p, const std::vector<std::vector<InputLayout>>& layouts,
                                                const CompileOptions& opts) {
  std::map<std::string, int> index;
  auto add = [&](const std::string& key, plan::Buffer b, const void* data) {
    index[key] = static_cast<int>(p.buffers.size());
    p.buffers.push_back(std::move(b));
    constants.push_back(data);
    return index[key];
  };
  auto buffer_for = [&](const std::string& name) -> int {
    if (auto it = index.find(name); it != index.end()) return it->second;
    const TensorInfo& info = graph.tensor(name);
    const Shape storage = storage_shape(info.layout, info.shape);
    const void* data = nullptr;
    if (info.value && info.layout.blocked())
      data = packed.emplace(name, pack(info.layout, *info.value, fmt::format("weight '{}'", name))).first->second.bytes.data();
    else if (info.value) data = info.value->bytes.data();
    const plan::Role role = info.value ? plan::Role::Constant : plan::Role::Activation;
    return add(name, plan_buffer(name, role, info.dtype, storage), data);
  };
  for (const auto& name : graph.inputs) {
    const TensorInfo& info = graph.tensor(name);
    p.inputs.push_back(add(name, plan_buffer(name, plan::Role::Input, info.dtype, storage_shape(info.layout, info.shape)), nullptr));
  }
  for (const auto& step : partition.steps) {
    const Workload& w = partition.workloads[step.workload];
    plan::Step ps{static_cast<int>(step.workload), fmt::format("workload {} ({})", w.key_hash(), w.name), {}, {}};
    for (size_t k = 0; k < step.inputs.size(); k++) {
      const std::string& t = step.inputs[k];
      const InputLayout* l = find_layout(layouts[step.workload], w.graph.inputs[k]);
      const int plain = buffer_for(t);
      if (!l) {
        ps.args.push_back(plain);
        continue;
      }
      // A schedule's packing of this input: constants once here, runtime tensors before each run.
      const std::string key = t + "#" + describe(*l);
      if (!index.count(key)) {
        const TensorInfo& info = graph.tensor(t);
        const plan::Role role = info.value ? plan::Role::Constant : plan::Role::Activation;
        const void* data = info.value ? packed.emplace(key, pack_tensor(*l, *info.value)).first->second.bytes.data() : nullptr;
        add(key, plan_buffer(key, role, info.dtype, packed_shape(*l, info.shape)), data);
        if (!info.value)
          ps.packs.push_back({plain, index[key], static_cast<int>(info.shape.size()) - 1 - l->dim, l->block});
      }
      ps.args.push_back(index[key]);
    }
    for (const auto& t : step.outputs) ps.args.push_back(buffer_for(t));
    if (const auto offset = view_offset(graph, w, step, p, ps)) {
      p.buffers[ps.args[1]].view_of = ps.args[0];
      p.buffers[ps.args[1]].view_offset = *offset;
      ps.function = plan::kElided;
      stats.views++;
    } else if (opts.in_place_concat) {
      const auto offsets = in_place_offsets(graph, w, step, p, ps);
      for (const auto& [b, offset] : offsets) {
        p.buffers[b].view_of = ps.args.back();
        p.buffers[b].view_offset = offset;
      }
      if (!offsets.empty()) {
        ps.function = plan::kElided;
        stats.in_place++;
      }
    }
    p.steps.push_back(std::move(ps));
  }
  for (const auto& o : graph.outputs) p.outputs.push_back(buffer_for(o));
}

void CompiledModel::Impl::place_constants(plan::Plan& p, bool huge_pages) {
  assign_constant_offsets(p);
  // On huge pages; the packed copies are dropped (the graph keeps its own values).
  constant_blob = allocate_page_aligned_bytes(p.constant_bytes, huge_pages);
  for (size_t b = 0; b < p.buffers.size(); b++) {
    if (p.buffers[b].role != plan::Role::Constant || !constants[b]) continue;
    uint8_t* to = constant_blob.get() + p.buffers[b].offset;
    std::memcpy(to, constants[b], p.buffers[b].bytes());
    constants[b] = to;
  }
  packed.clear();
}

CompiledModel::CompiledModel(Graph g, const CompileOptions& opts) : impl_(new Impl) {
  auto t0 = std::chrono::steady_clock::now();
  Impl& m = *impl_;
  m.graph = std::move(g);
  m.partition = partition_graph(m.graph);
  m.stats.workloads = static_cast<int>(m.partition.workloads.size());
  m.stats.steps = static_cast<int>(m.partition.steps.size());

  CodeCache cache = CodeCache::open_default(host_code_target(), opts.cache_root);
  const std::string runtime_so = cache.ensure_runtime();
  const std::vector<std::vector<InputLayout>> layouts = m.compile_workloads(cache, opts);

  load_halide_runtime(runtime_so);  // workload code calls into it (allocation, thread pool)
  m.runtime_object = cache.runtime_object_path();
  plan::Plan p;
  std::vector<plan::EntryFn> entries = m.load_code(cache, p);
  m.add_buffers_and_steps(p, layouts, opts);
  m.place_constants(p, opts.huge_pages);
  try {
    m.executor = std::make_unique<plan::Executor>(std::move(p), std::move(entries), m.constants, opts.huge_pages);
    m.stats.activation_bytes = m.executor->arena_bytes();
  } catch (const std::runtime_error& e) {
    throw Error(fmt::format("{}: {}", m.graph.path, e.what()));
  }
  m.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Workload code is unloaded with Impl::code; the runtime stays loaded (its threads may be winding down).
CompiledModel::~CompiledModel() = default;

const Graph& CompiledModel::graph() const { return impl_->graph; }
const Partition& CompiledModel::partition() const { return impl_->partition; }
const CompileStats& CompiledModel::stats() const { return impl_->stats; }
const std::vector<double>& CompiledModel::step_seconds() const { return impl_->executor->step_seconds(); }
const plan::Plan& CompiledModel::plan() const { return impl_->executor->plan(); }
const std::vector<const void*>& CompiledModel::constant_data() const { return impl_->constants; }
const std::vector<std::string>& CompiledModel::object_files() const { return impl_->object_files; }
const std::vector<std::string>& CompiledModel::schedule_hashes() const { return impl_->schedule_hashes; }
const std::vector<std::string>& CompiledModel::default_schedule_hashes() const { return impl_->default_hashes; }
const std::string& CompiledModel::runtime_object() const { return impl_->runtime_object; }

void CompiledModel::set_threads(int threads) { set_halide_threads(threads); }

std::vector<Tensor> CompiledModel::run(const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> outs;
  run(inputs, outs);
  return outs;
}

void CompiledModel::run(const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outs) {
  Impl& m = *impl_;
  const plan::Plan& p = m.executor->plan();
  std::vector<const void*> in;
  for (int b : p.inputs) {
    const plan::Buffer& buf = p.buffers[b];
    auto it = inputs.find(buf.name);
    if (it == inputs.end()) throw Error(fmt::format("{}: no value given for input '{}'", m.graph.path, buf.name));
    const TensorInfo& info = m.graph.tensor(buf.name);
    if (it->second.shape != buf.shape || it->second.dtype != info.dtype)
      throw Error(fmt::format("{}: input '{}' is {} {}, the model expects {} {}", m.graph.path, buf.name,
                              dtype_name(it->second.dtype), shape_str(it->second.shape), dtype_name(info.dtype),
                              shape_str(buf.shape)));
    in.push_back(it->second.bytes.data());
  }
  for (const auto& [name, t] : inputs)
    if (std::find(m.graph.inputs.begin(), m.graph.inputs.end(), name) == m.graph.inputs.end())
      throw Error(fmt::format("{}: '{}' is not a runtime input of the model", m.graph.path, name));
  outs.resize(m.graph.outputs.size());
  std::vector<void*> out;
  for (size_t k = 0; k < outs.size(); k++) {
    const TensorInfo& info = m.graph.tensor(m.graph.outputs[k]);
    const size_t bytes = dtype_size(info.dtype) * static_cast<size_t>(num_elements(info.shape));
    if (outs[k].dtype != info.dtype || outs[k].shape != info.shape || outs[k].bytes.size() != bytes)
      outs[k] = Tensor(info.dtype, info.shape);
    if (outs[k].bytes.size() != p.buffers[p.outputs[k]].bytes())
      throw Error(fmt::format("{}: output '{}' is not stored plain", m.graph.path, m.graph.outputs[k]));
    out.push_back(outs[k].bytes.data());
  }
  take_halide_error();  // only this run's messages
  try {
    m.executor->run(in.data(), out.data(), true);
  } catch (const std::runtime_error& e) {
    const std::string why = take_halide_error();
    throw Error(fmt::format("{}: {}{}", m.graph.path, e.what(), why.empty() ? "" : ": " + why));
  }
}

std::vector<double> time_alternately(const std::vector<CompiledModel*>& models,
                                     const std::map<std::string, Tensor>& inputs, int iters, int warmup,
                                     const std::function<void(size_t, double)>& after_run) {
  const size_t n = models.size();
  std::vector<std::vector<double>> times(n);
  std::vector<std::vector<Tensor>> outputs(n);
  for (int round = 0; round < warmup + iters; round++)
    for (size_t k = 0; k < n; k++) {
      const size_t i = (k + static_cast<size_t>(round)) % n;
      const auto t0 = std::chrono::steady_clock::now();
      models[i]->run(inputs, outputs[i]);
      if (round < warmup) continue;
      times[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (after_run) after_run(i, times[i].back());
    }
  std::vector<double> medians;
  for (const auto& t : times) medians.push_back(time_stats(t).median);
  return medians;
}

}  // namespace ts
