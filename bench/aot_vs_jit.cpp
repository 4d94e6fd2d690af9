// Same model, same default schedule, two ways to get machine code: AOT shared objects with one
// shared runtime (CompiledModel) and Halide's in-process JIT (one Pipeline per workload). Prints
// compile time and median latency of each and their ratio, measured in the same run.
//   build/bench_aot_vs_jit MODEL [ITERS]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "runtime/compiled_model.h"
#include "schedule/default_schedule.h"

using namespace ts;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_aot_vs_jit MODEL [ITERS]\n";
    return 2;
  }
  const int iters = argc > 2 ? std::atoi(argv[2]) : 10;
  ImportOptions o;
  o.op_supported = op_supported;
  Graph g = import_onnx(argv[1], o);
  run_default_passes(g);
  auto inputs = random_inputs(g, 1);

  // AOT: a fresh cache so the compile time is real.
  CompileOptions copts;
  copts.cache_root = fmt::format("/tmp/tensorsched-aot-vs-jit-{}", getpid());
  copts.jobs = 1;  // JIT below compiles serially too
  auto t0 = Clock::now();
  CompiledModel aot(g, copts);
  double aot_compile = seconds_since(t0);
  aot.run(inputs);
  std::vector<double> aot_ms;
  for (int i = 0; i < iters; i++) {
    t0 = Clock::now();
    aot.run(inputs);
    aot_ms.push_back(seconds_since(t0) * 1e3);
  }

  // JIT: one Pipeline per distinct workload, realized step by step over buffers allocated once.
  const Partition& p = aot.partition();
  Halide::Target target = Halide::get_jit_target_from_environment();
  std::vector<LoweredWorkload> jit;
  t0 = Clock::now();
  for (const auto& w : p.workloads) {
    jit.push_back(lower_workload(w));
    apply_default_schedule(jit.back().outputs, target);
    jit.back().pipeline.compile_jit(target);
  }
  double jit_compile = seconds_since(t0);
  std::map<std::string, Halide::Buffer<>> bufs;
  auto buffer = [&](const std::string& name) -> Halide::Buffer<> {
    if (auto it = bufs.find(name); it != bufs.end()) return it->second;
    const auto& info = g.tensor(name);
    Halide::Buffer<> b = info.value ? to_halide_buffer(*info.value, name)
                         : inputs.count(name) ? to_halide_buffer(inputs.at(name), name)
                                              : to_halide_buffer(Tensor(info.dtype, info.shape), name);
    return bufs.emplace(name, b).first->second;
  };
  auto run_jit = [&] {
    for (const auto& step : p.steps) {
      LoweredWorkload& lw = jit[step.workload];
      Halide::ParamMap params;
      for (size_t i = 0; i < step.inputs.size(); i++) params.set(lw.params[i], buffer(step.inputs[i]));
      std::vector<Halide::Buffer<>> outs;
      for (const auto& t : step.outputs) outs.push_back(buffer(t));
      lw.pipeline.realize(Halide::Realization(outs), target, params);
    }
  };
  run_jit();
  std::vector<double> jit_ms;
  for (int i = 0; i < iters; i++) {
    t0 = Clock::now();
    run_jit();
    jit_ms.push_back(seconds_since(t0) * 1e3);
  }
  std::cout << fmt::format("{}: {} workloads\n  AOT: compile {:.2f} s, median {:.3f} ms\n  JIT: compile {:.2f} s, median {:.3f} ms\n"
                           "  JIT/AOT latency ratio {:.3f}, compile ratio {:.3f}\n",
                           argv[1], p.workloads.size(), aot_compile, median(aot_ms), jit_compile, median(jit_ms),
                           median(jit_ms) / median(aot_ms), jit_compile / aot_compile);
  return 0;
}
