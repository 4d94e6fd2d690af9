// `tensorsched space MODEL`: the schedule space of every workload (stages, decisions, average
// branching factor, log10 of the number of schedules), cf. Table 2 of the value-learning paper.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "analysis/pipeline_view.h"
#include "cli/commands.h"
#include "graph/workload.h"
#include "measure/workload_compiler.h"
#include "schedule/schedule_space.h"

namespace ts {

namespace {

struct SpaceArgs {
  ModelArgs model;
  int rollouts = 100;
  uint64_t seed = 1;
  bool json = false;
};

int space_command(const SpaceArgs& a) {
  Graph g = load_model(a.model);
  const Partition p = partition_graph(g);
  SpaceOptions opts;
  opts.vector_bytes = native_vector_bytes(Halide::get_host_target());
  nlohmann::json rows = nlohmann::json::array();
  double log10_total = 0, branching_sum = 0;
  int decisions = 0;
  if (!a.json)
    std::cout << fmt::format("{:<16} {:<28} {:>5} {:>7} {:>10} {:>14}\n", "workload", "name", "count", "stages",
                             "avg branch", "log10 schedules");
  for (const auto& w : p.workloads) {
    LoweredWorkload lw = lower_workload(w);
    ScheduleSpace space(build_pipeline_view(lw.outputs), space_options_for(w, opts));
    SpaceStats st = space.estimate(a.rollouts, a.seed);
    // Workloads are scheduled independently, and each occurrence of a workload runs the same code.
    log10_total += st.log10_size;
    branching_sum += st.avg_branching * st.decisions;
    decisions += st.decisions;
    rows.push_back({{"key", w.key_hash()}, {"name", w.name}, {"count", w.count}, {"stages", st.stages},
                    {"decisions", st.decisions}, {"avg_branching", st.avg_branching}, {"log10_size", st.log10_size}});
    if (!a.json)
      std::cout << fmt::format("{:<16} {:<28} {:>5} {:>7} {:>10.3g} {:>14.1f}\n", w.key_hash(), w.name.substr(0, 28),
                               w.count, st.stages, st.avg_branching, st.log10_size);
  }
  const double avg = decisions > 0 ? branching_sum / decisions : 0;
  nlohmann::json j = {{"model", g.path}, {"workloads", rows}, {"decisions", decisions},
                      {"avg_branching", avg}, {"log10_size", log10_total}, {"rollouts", a.rollouts}};
  if (a.json) std::cout << j.dump(2) << "\n";
  else
    std::cout << fmt::format("{}: {} workloads, {} decisions, average branching factor {:.3g}, space size 10^{:.0f} "
                             "({} random rollouts per workload)\n",
                             g.path, p.workloads.size(), decisions, avg, log10_total, a.rollouts);
  return 0;
}

}  // namespace

void add_space_command(CLI::App& app) {
  auto a = std::make_shared<SpaceArgs>();
  CLI::App* sub = app.add_subcommand("space", "Print the schedule space of every workload of a model");
  add_model_args(sub, a->model);
  sub->add_option("--rollouts", a->rollouts, "Random schedules drawn per workload to estimate the space")->check(CLI::PositiveNumber);
  sub->add_option("--seed", a->seed, "Seed of the random rollouts");
  sub->add_flag("--json", a->json, "Print JSON");
  on_command(sub, [a] { return space_command(*a); });
}

}  // namespace ts
