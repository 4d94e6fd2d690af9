#include "runtime/graph_runner.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "lower/lower.h"
#include "measure/workload_compiler.h"

namespace ts {

struct GraphRunner::Impl {
  Graph graph;                                       // own copy: callers may pass a temporary
  std::map<std::string, Halide::ImageParam> params;  // one per runtime input
  std::vector<Halide::Func> outputs;                 // one wrapper Func per graph output
  Halide::Pipeline pipeline;
};

GraphRunner::GraphRunner(const Graph& graph) : impl_(new Impl{graph, {}, {}, {}}) {
  const Graph& g = impl_->graph;
  std::map<std::string, LTensor> bound;
  for (const auto& name : g.inputs) {
    const auto& info = g.tensor(name);
    Halide::ImageParam p(halide_type(info.dtype), static_cast<int>(info.shape.size()), sanitize_name("in_" + name));
    impl_->params.emplace(name, p);
    bound[name] = define_tensor(sanitize_name("input_" + name), info.shape, info.dtype, [&](const std::vector<Halide::Expr>& idx) {
      return p(std::vector<Halide::Expr>(idx.rbegin(), idx.rend()));
    });
  }
  auto values = lower_graph(g, bound);
  for (const auto& node : g.nodes)
    for (const auto& o : node.outputs)
      if (!o.empty()) values.at(o).func.compute_root();
  for (size_t k = 0; k < g.outputs.size(); k++) {
    const LTensor& t = values.at(g.outputs[k]);
    LTensor out = define_tensor(fmt::format("output_{}", k), t.shape, t.dtype,
                                [&](const std::vector<Halide::Expr>& idx) { return t.at(idx); });
    impl_->outputs.push_back(out.func);
  }
  // Stages with update definitions (reductions) cannot be inlined: give them their own root.
  for (const auto& f : impl_->outputs)
    for (auto& [name, fn] : Halide::Internal::find_transitive_calls(f.function()))
      if (fn.has_update_definition()) Halide::Func(fn).compute_root();
  impl_->pipeline = Halide::Pipeline(impl_->outputs);
  impl_->pipeline.compile_jit(host_code_target());
}

GraphRunner::~GraphRunner() = default;

std::vector<Tensor> GraphRunner::run(const std::map<std::string, Tensor>& inputs) {
  const Graph& g = impl_->graph;
  std::vector<Halide::Buffer<>> keep;
  for (const auto& [name, t] : inputs)
    if (!impl_->params.count(name))
      throw Error(fmt::format("{}: '{}' is not a runtime input of the model{}", g.path, name,
                              g.tensors.count(name) && g.is_constant(name) ? " (it is a weight)" : ""));
  for (const auto& name : g.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) throw Error(fmt::format("{}: no value given for input '{}'", g.path, name));
    const auto& info = g.tensor(name);
    if (it->second.shape != info.shape || it->second.dtype != info.dtype)
      throw Error(fmt::format("{}: input '{}' is {} {}, the model expects {} {}", g.path, name,
                              dtype_name(it->second.dtype), shape_str(it->second.shape), dtype_name(info.dtype),
                              shape_str(info.shape)));
    keep.push_back(to_halide_buffer(it->second, name));
    impl_->params.at(name).set(keep.back());
  }
  std::vector<Tensor> results;
  std::vector<Halide::Buffer<>> bufs;
  for (const auto& name : g.outputs) {
    const auto& info = g.tensor(name);
    results.emplace_back(info.dtype, info.shape);
    bufs.push_back(to_halide_buffer(results.back(), name));
  }
  impl_->pipeline.realize(Halide::Realization(bufs));
  for (size_t k = 0; k < bufs.size(); k++)
    if (!results[k].bytes.empty()) std::memcpy(results[k].bytes.data(), bufs[k].data(), results[k].bytes.size());
  return results;
}

}  // namespace ts
