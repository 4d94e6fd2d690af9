// bench_knob_sweep: the default rule's knob variants of one workload of a model, measured side by
// side with the rule's own plan, for working on the rule (schedule/default_tile.cpp) from data.
//
//   bench_knob_sweep MODEL KEY|all THREADS [ROUNDS] [KNOBS_JSON ...]
//
// KEY is a workload's key hash (`all`: print every workload's plan, measure nothing; ROUNDS 0:
// print the workload's plan only) (`tensorsched workloads MODEL`); each KNOBS_JSON is a
// params object of the rule's knobs such as '{"vectors":"4","columns_outer":"1"}'. Without any,
// the sweep is every single-knob change of the rule's plan over its range. Every round measures
// the default and all variants once (worker processes, alternating order), so a drift of the
// machine touches all alike; printed: each variant's plan, the median of its round medians, and
// default / variant (ROUNDS_DETAIL=1: every round too). The workload's weights are evicted from the caches before every run
// (MeasureOptions::cold_weights), as in a network. Not a test: timings, run by hand on an idle
// machine.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <nlohmann/json.hpp>

#include "api/compile_model.h"
#include "graph/error.h"
#include "graph/workload.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "schedule/rule_sketch.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

ts::Schedule variant_of_json(const ts::RuleSketch& space, const std::string& text) {
  return space.schedule(ts::DefaultKnobs::from_json(text));
}

// Every knob set that changes one knob of the rule's plan (canonical, distinct).
std::vector<ts::Schedule> single_knob_changes(const ts::RuleSketch& space) {
  std::vector<ts::Schedule> out;
  std::set<std::string> seen{space.schedule({}).hash()};
  for (const std::string& name : ts::default_knob_names())
    for (int value : {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 24, 32, 64, 128}) {
      const std::map<std::string, std::string> params{{name, std::to_string(value)}};
      if (ts::check_default_params(params)) continue;
      ts::Schedule s = space.schedule(ts::DefaultKnobs::from_params(params));
      if (seen.insert(s.hash()).second) out.push_back(s);
    }
  return out;
}

}  // namespace

int sweep(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: bench_knob_sweep MODEL KEY|all THREADS [ROUNDS] [KNOBS_JSON ...]\n";
    return 2;
  }
  const int threads = std::atoi(argv[3]);
  ts::LoadOptions lo;
  lo.threads = threads;  // Winograd planned as `run --threads` plans it
  const ts::Graph g = ts::load_model(argv[1], lo);
  const ts::Partition p = ts::partition_graph(g);
  if (std::string(argv[2]) == "all") {  // every workload's plan, nothing measured
    for (const auto& w : p.workloads)
      std::cout << w.name << " " << w.key_hash() << ": "
                << ts::RuleSketch(ts::lower_workload(w).outputs, Halide::get_host_target()).describe() << "\n";
    return 0;
  }
  const auto it = std::find_if(p.workloads.begin(), p.workloads.end(),
                               [&](const ts::Workload& w) { return w.key_hash() == argv[2]; });
  if (it == p.workloads.end()) {
    std::cerr << argv[1] << ": no workload " << argv[2] << "\n";
    return 1;
  }
  const int rounds = argc > 4 ? std::max(0, std::atoi(argv[4])) : 3;
  const ts::LoweredWorkload lw = ts::lower_workload(*it);
  const ts::RuleSketch space(lw.outputs, Halide::get_host_target());
  std::cout << it->name << " " << it->key_hash() << ": " << space.describe() << "\n";
  if (rounds == 0) return 0;  // the plan only
  std::vector<ts::Schedule> variants;
  for (int i = 5; i < argc; i++) variants.push_back(variant_of_json(space, argv[i]));
  if (variants.empty()) variants = single_knob_changes(space);
  ts::MeasureOptions mo;
  mo.threads = threads;
  mo.repeats = 20;
  mo.warmup = 3;
  if (const char* warm = std::getenv("WARM_WEIGHTS"); warm && std::string(warm) == "1") mo.cold_weights = false;
  ts::Measurer m(*it, mo);
  std::vector<ts::Schedule> batch{space.schedule({})};
  batch.insert(batch.end(), variants.begin(), variants.end());
  std::vector<std::vector<double>> medians(batch.size());
  for (int r = 0; r < rounds; r++) {
    std::vector<ts::Schedule> order = batch;
    if (r % 2) std::reverse(order.begin(), order.end());
    const auto results = m.measure_batch(order);
    for (size_t i = 0; i < order.size(); i++) {
      const size_t at = r % 2 ? order.size() - 1 - i : i;
      if (results[i].valid()) medians[at].push_back(results[i].median);
      else if (r == 0) std::cout << "  " << order[i].to_json() << ": " << results[i].error_kind << "\n";
    }
  }
  // ROUNDS_DETAIL=1 prints every round's median too (a noisy host shows as two clusters).
  const char* detail = std::getenv("ROUNDS_DETAIL");
  const bool rounds_detail = detail && std::string(detail) == "1";
  const double base = median(medians[0]);
  const double gflop = static_cast<double>(it->flops) * 1e-9;
  for (size_t i = 0; i < batch.size(); i++) {
    if (medians[i].empty()) continue;
    const double t = median(medians[i]);
    std::cout << fmt::format("{:9.4f} ms {:7.1f} GFLOP/s  x{:5.3f}  {}\n", t * 1e3, gflop / t,
                             base / t, nlohmann::json(batch[i].origin->params).dump());
    if (rounds_detail) {
      std::vector<std::string> ms;
      for (double v : medians[i]) ms.push_back(fmt::format("{:.3f}", v * 1e3));
      std::cout << "    rounds (ms): " << fmt::format("{}", fmt::join(ms, " ")) << "\n";
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return sweep(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bench_knob_sweep: " << e.what() << "\n";
    return 1;
  }
}
