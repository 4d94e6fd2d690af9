// `tensorsched features MODEL --schedule FILE`: the features of one schedule of one workload
// (per stage definition and the flat vector), as a table or JSON, optionally timed.
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "features/features.h"
#include "graph/error.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "schedule/schedule_space.h"

namespace ts {

namespace {

struct FeaturesArgs {
  ModelArgs model;
  std::string schedule;  // Schedule JSON file
  std::string workload;  // key hash or index ("" = the first workload)
  bool json = false;
  bool time = false;
  int runs = 1000;
};

const Workload& pick_workload(const Partition& p, const std::string& sel) {
  if (p.workloads.empty()) throw Error("the model has no workloads");
  if (sel.empty()) return p.workloads[0];
  if (const Workload* w = find_workload(p, sel)) return *w;
  if (sel.find_first_not_of("0123456789") == std::string::npos && sel.size() < 9) {
    const size_t i = std::stoul(sel);
    if (i < p.workloads.size()) return p.workloads[i];
  }
  throw Error(fmt::format("--workload {}: no workload has this key hash, nor this index (0..{}); see `tensorsched workloads`",
                          sel, p.workloads.size() - 1));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read the schedule file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int features_command(const FeaturesArgs& a) {
  const Schedule s = Schedule::from_json(read_text(a.schedule));
  Graph g = load_model(a.model);
  const Partition p = partition_graph(g);
  const Workload& w = pick_workload(p, a.workload);
  LoweredWorkload lw = lower_workload(w);
  if (auto why = s.validate(lw.outputs))
    throw Error(fmt::format("{}: the schedule does not apply to workload {} ({}): {}", a.schedule, w.key_hash(), w.name, *why));
  SpaceOptions opts;
  opts.vector_bytes = native_vector_bytes(Halide::get_host_target());
  ScheduleSpace space(lw.outputs, host_code_target(), space_options_for(w, opts));
  FeatureExtractor fx(space);
  const ScheduleFeatures f = fx.extract(s);
  double us = 0;
  if (a.time) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile size_t sink = 0;  // keeps the loop
    for (int k = 0; k < a.runs; k++) sink = sink + fx.extract(s).flat.size();
    us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / a.runs;
  }

  if (a.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(f.to_json());
    j["workload"] = {{"key", w.key_hash()}, {"name", w.name}};
    if (a.time) j["us_per_extraction"] = us;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  const auto& names = stage_feature_names();
  std::cout << fmt::format("workload {} ({}), features version {}: {} stage features x {} definitions, {} flat\n",
                           w.key_hash(), w.name, kFeaturesVersion, names.size(), f.stages.size(), f.flat.size());
  // Stage features: one column per definition, rows with a non-zero value somewhere.
  std::cout << fmt::format("{:<26}", "feature");
  for (size_t c = 0; c < f.stages.size(); c++) std::cout << fmt::format(" {:>9}", fmt::format("#{}", c));
  std::cout << "\n";
  for (size_t c = 0; c < f.stages.size(); c++)
    std::cout << fmt::format("  #{} = {}{}{}\n", c, f.stages[c].stage,
                             f.stages[c].definition ? fmt::format(".update({})", f.stages[c].definition - 1) : "",
                             f.stages[c].decided ? "" : " (undecided)");
  for (size_t k = 0; k < names.size(); k++) {
    bool any = false;
    for (const auto& r : f.stages) any |= r.values[k] != 0;
    if (!any) continue;
    std::cout << fmt::format("{:<26}", names[k]);
    for (const auto& r : f.stages) std::cout << fmt::format(" {:>9.4g}", r.values[k]);
    std::cout << "\n";
  }
  std::cout << "flat (non-zero values):\n";
  const auto& fn = flat_feature_names();
  for (size_t k = 0; k < fn.size(); k++)
    if (f.flat[k] != 0) std::cout << fmt::format("  {:<34} {:.6g}\n", fn[k], f.flat[k]);
  if (a.time) std::cout << fmt::format("{:.1f} us per extraction ({} runs)\n", us, a.runs);
  return 0;
}

}  // namespace

void add_features_command(CLI::App& app) {
  auto a = std::make_shared<FeaturesArgs>();
  CLI::App* sub = app.add_subcommand("features", "Print the features of a schedule of one workload of a model");
  add_model_args(sub, a->model);
  sub->add_option("--schedule", a->schedule, "Schedule JSON file")->required();
  sub->add_option("--workload", a->workload, "Workload key hash or index (default: the first)");
  sub->add_flag("--json", a->json, "Print JSON: version, names, per-definition values and the flat vector");
  sub->add_flag("--time", a->time, "Time the extraction (mean over --runs)");
  sub->add_option("--runs", a->runs, "Extractions timed with --time")->check(CLI::PositiveNumber);
  on_command(sub, [a] { return features_command(*a); });
}

}  // namespace ts
