// `tensorsched space MODEL`: the schedule space of every workload (stages, decisions, average
// branching factor, log10 of the number of schedules), cf. Table 2 of the value-learning paper.
// `--table`: the same columns from the listed candidates (ScheduleSpace::candidates, what a
// greedy search scores) along the default rule's decisions, per workload and for the network.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "analysis/pipeline_view.h"
#include "cli/commands.h"
#include "graph/error.h"
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
  bool table = false;  // the listed candidates' statistics
};

// Decisions, listed candidates per decision and the slowest listing, along the rule's path.
struct ListedSpace {
  int decisions = 0;
  double branching_sum = 0;  // listed candidates summed over the decisions
  double log10_size = 0;     // sum of log10(listed candidates)
  double slowest_ms = 0;     // the slowest decision's listing
};

// The space lists the rule's decision (it has the rule's sketch): the walk follows it.
ListedSpace listed_space(const ScheduleSpace& space) {
  ListedSpace out;
  const DecisionCandidateOptions o;
  Schedule partial;
  for (size_t i = 0; i < space.decisions().size(); i++) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<DecisionCandidate> cands = space.candidates(partial, i, o);
    out.slowest_ms = std::max(out.slowest_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    out.decisions++;
    out.branching_sum += static_cast<double>(cands.size());
    out.log10_size += std::log10(std::max<size_t>(1, cands.size()));
    // Follow the rule where it fits, else the first listed.
    auto it = std::find_if(cands.begin(), cands.end(), [](const DecisionCandidate& c) { return c.source == "rule"; });
    if (!cands.empty()) space.take(partial, i, it != cands.end() ? *it : cands.front());
  }
  return out;
}

int table_command(const SpaceArgs& a) {
  Graph g = load_model(a.model);
  const Partition p = partition_graph(g);
  SpaceOptions opts;
  opts.vector_bytes = native_vector_bytes(Halide::get_host_target());
  nlohmann::json rows = nlohmann::json::array();
  ListedSpace total;
  if (!a.json)
    std::cout << fmt::format("{:<16} {:<28} {:>9} {:>10} {:>14} {:>11}\n", "workload", "name", "decisions", "avg branch",
                             "log10 listed", "slowest ms");
  for (const auto& w : p.workloads) {
    LoweredWorkload lw = lower_workload(w);
    const ScheduleSpace space(lw.outputs, host_code_target(), space_options_for(w, opts));
    ListedSpace ls;
    try {
      ls = listed_space(space);
    } catch (const Error& e) {
      // The rule placed a Func where the space offers no site (a Winograd product at the output's
      // task loop): the walk along the rule stops there.
      rows.push_back({{"key", w.key_hash()}, {"name", w.name}, {"error", e.what()}});
      if (!a.json) std::cout << fmt::format("{:<16} {:<28} not listed: {}\n", w.key_hash(), w.name.substr(0, 28), e.what());
      continue;
    }
    total.decisions += ls.decisions;
    total.branching_sum += ls.branching_sum;
    total.log10_size += ls.log10_size;
    total.slowest_ms = std::max(total.slowest_ms, ls.slowest_ms);
    const double avg = ls.decisions > 0 ? ls.branching_sum / ls.decisions : 0;
    rows.push_back({{"key", w.key_hash()}, {"name", w.name}, {"decisions", ls.decisions}, {"avg_branching", avg},
                    {"log10_size", ls.log10_size}, {"slowest_listing_ms", ls.slowest_ms}});
    if (!a.json)
      std::cout << fmt::format("{:<16} {:<28} {:>9} {:>10.1f} {:>14.1f} {:>11.2f}\n", w.key_hash(), w.name.substr(0, 28),
                               ls.decisions, avg, ls.log10_size, ls.slowest_ms);
  }
  const double avg = total.decisions > 0 ? total.branching_sum / total.decisions : 0;
  if (a.json) {
    std::cout << nlohmann::json{{"model", g.path}, {"workloads", rows}, {"decisions", total.decisions}, {"avg_branching", avg},
                                {"log10_size", total.log10_size}, {"slowest_listing_ms", total.slowest_ms}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format("{}: {} workloads, {} decisions, average branching factor {:.1f} (listed candidates), "
                             "space size 10^{:.0f}, slowest listing {:.2f} ms\n",
                             g.path, p.workloads.size(), total.decisions, avg, total.log10_size, total.slowest_ms);
  }
  return 0;
}

int space_command(const SpaceArgs& a) {
  if (a.table) return table_command(a);
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
  sub->add_flag("--table", a->table,
                "Decisions, branching factor and space size from the listed candidates a greedy search scores, along "
                "the default rule's decisions (cf. the value-learning paper's Table 2), and the slowest listing");
  on_command(sub, [a] { return space_command(*a); });
}

}  // namespace ts
