// `tensorsched workloads MODEL` (the partition) and `tensorsched run MODEL` (compile, run,
// time, check against ONNX test data).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "api/compile_model.h"
#include "cli/commands.h"
#include "graph/npy.h"
#include "graph/workload.h"
#include "measure/time_stats.h"
#include "measure/workload_compiler.h"
#include "runtime/compiled_model.h"
#include "runtime/conformance.h"
#include "runtime/graph_runner.h"
#include "schedule/default_schedule.h"
#include "schedule/schedule.h"
#include "schedule/task_prefetch.h"
#include "tune/records_db.h"
#include "tune/tuner.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

struct RunArgs {
  ModelArgs model;
  int iters = 10;
  int threads = 0;
  std::vector<std::string> input_files;  // NAME=FILE.pb or NAME=FILE.npy
  std::string output_dir;                // --output: each output as <name>.npy and <name>.pb
  std::string check_dir;
  std::string cache_dir;
  std::string db_path;                   // --db: tuning records to take the best schedule per workload from
  std::vector<std::string> knobs;        // --knobs KEY=JSON: that workload runs the rule with these knobs
  bool json = false;
  bool profile = false;
  bool allow_foreign = false;            // --allow-foreign-records
  bool copy_concats = false;             // --copy-concats
  bool small_pages = false;              // --small-pages
};

std::map<std::string, Tensor> inputs_from_set(const Graph& g, const std::string& set) {
  auto files = test_data_files(set, "input_");
  if (files.size() != g.inputs.size())
    throw Error(fmt::format("{}: {} input files, the model has {} runtime inputs", set, files.size(), g.inputs.size()));
  std::map<std::string, Tensor> r;
  for (size_t i = 0; i < files.size(); i++) r[g.inputs[i]] = read_tensor_pb(files[i]);
  return r;
}

// Per step, over every timed run: mean ms, % of the mean latency, GFLOP/s, the workload and the
// ONNX nodes it covers; largest first. The rest of the latency (between steps) is its own line.
nlohmann::json print_profile(const CompiledModel& model, const std::vector<double>& step_total,
                             const std::vector<double>& run_ms, bool json_only) {
  const Partition& p = model.partition();
  const Graph& g = model.graph();
  const double runs = static_cast<double>(run_ms.size());
  double mean_ms = 0;
  for (double m : run_ms) mean_ms += m / runs;
  std::vector<size_t> order(step_total.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return step_total[x] > step_total[y]; });
  nlohmann::json prof = nlohmann::json::array();
  double steps_ms = 0;
  if (!json_only)
    std::cout << fmt::format("profile over {} runs (mean {:.3f} ms):\n{:>4} {:>9} {:>6} {:>8}  {:<16} {:<22} {}\n", run_ms.size(),
                             mean_ms, "step", "ms", "%", "GFLOP/s", "workload", "ops", "ONNX nodes");
  for (size_t s : order) {
    const WorkloadStep& st = p.steps[s];
    const Workload& w = p.workloads[st.workload];
    const double step_ms = step_total[s] / runs * 1e3;
    steps_ms += step_ms;
    const double gflops = step_ms > 0 ? w.flops / (step_ms * 1e-3) * 1e-9 : 0;
    std::vector<std::string> nodes;
    for (size_t n : st.nodes) nodes.push_back(g.nodes[n].name);
    prof.push_back({{"step", s}, {"key", w.key_hash()}, {"name", w.name}, {"nodes", nodes}, {"ms", step_ms},
                    {"percent", 100 * step_ms / mean_ms}, {"gflops", gflops}});
    if (json_only) continue;
    std::string node_text = nodes.empty() ? "" : nodes[0];
    if (nodes.size() > 1) node_text += fmt::format(" +{}", nodes.size() - 1);
    std::cout << fmt::format("{:>4} {:>9.3f} {:>5.1f}% {:>8.2f}  {:<16} {:<22} {}\n", s, step_ms, 100 * step_ms / mean_ms,
                             gflops, w.key_hash(), w.name.substr(0, 22), node_text);
  }
  if (!json_only)
    std::cout << fmt::format("     {:>9.3f} {:>5.1f}%           between steps (input binding, output copy, calls)\n",
                             mean_ms - steps_ms, 100 * (mean_ms - steps_ms) / mean_ms);
  return prof;
}

// Runs the model on each test data set under check_dir (ONNX's test_data_set_N) and compares its
// outputs with the set's: within 1e-3 of the largest finite reference value. Writes the results
// into j ("check", "check_ok"); returns whether every output matched.
bool check_outputs(CompiledModel& model, const std::string& check_dir, bool json_only, nlohmann::json& j) {
  bool check_ok = true;
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& set : test_data_sets(check_dir)) {
    auto outs = model.run(inputs_from_set(model.graph(), set));
    auto want_files = test_data_files(set, "output_");
    if (want_files.size() != outs.size())
      throw Error(fmt::format("{}: {} output files, the model has {} outputs", set, want_files.size(), outs.size()));
    for (size_t k = 0; k < outs.size(); k++) {
      Tensor want = read_tensor_pb(want_files[k]);
      double ref_max = 0;
      // Finite values only: one Inf in the reference must not make every error tolerable
      // (non-finite elements must match exactly, compare_tensors).
      for (int64_t i = 0; i < want.size(); i++)
        if (std::isfinite(want.get_f64(i))) ref_max = std::max(ref_max, std::fabs(want.get_f64(i)));
      // Pass when max |got - want| <= 1e-3 * max |want|.
      Comparison c = compare_tensors(outs[k], want, 0, 1e-3 * ref_max);
      check_ok &= c.ok;
      checks.push_back({{"data_set", fs::path(set).filename().string()}, {"output", k}, {"ok", c.ok},
                        {"max_abs_error", c.max_abs_error}, {"max_abs_reference", ref_max}});
      if (!json_only)
        std::cout << fmt::format("check {} output {}: {} (max abs error {:.3g}, max |reference| {:.3g}){}\n",
                                 fs::path(set).filename().string(), k, c.ok ? "ok" : "MISMATCH", c.max_abs_error, ref_max,
                                 c.ok ? "" : ": " + c.message);
    }
  }
  j["check"] = checks;
  j["check_ok"] = check_ok;
  return check_ok;
}

// Runs the model on `inputs` and writes each output as OUTPUT_DIR/NAME.npy and .pb; returns
// the files written.
nlohmann::json write_outputs(CompiledModel& model, const std::map<std::string, Tensor>& inputs,
                             const std::string& output_dir, bool json_only) {
  auto outs = model.run(inputs);
  fs::create_directories(output_dir);
  nlohmann::json files = nlohmann::json::array();
  for (size_t k = 0; k < outs.size(); k++) {
    const std::string& name = model.graph().outputs[k];
    std::string file = name;  // a tensor name may hold characters a file name cannot
    for (char& c : file)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
    const fs::path base = fs::path(output_dir) / file;
    write_tensor_npy(outs[k], base.string() + ".npy");
    write_tensor_pb(outs[k], name, base.string() + ".pb");
    files.push_back({{"name", name}, {"npy", base.string() + ".npy"}, {"pb", base.string() + ".pb"}});
    if (!json_only) std::cout << fmt::format("output '{}' {} {}: {}.npy, .pb\n", name, dtype_name(outs[k].dtype),
                                          shape_str(outs[k].shape), base.string());
  }
  return files;
}

int run_command(const RunArgs& a) {
  Graph g = load_model(a.model, a.threads);
  CompileOptions copts;
  copts.cache_root = a.cache_dir;
  std::vector<std::string> db_warnings;
  if (!a.db_path.empty()) copts.schedules = best_schedules_of(g, a.db_path, db_warnings, a.allow_foreign, a.threads);
  for (auto& [key, schedule] : knob_schedules_of(g, a.knobs)) copts.schedules[key] = std::move(schedule);  // over --db's
  copts.in_place_concat = !a.copy_concats;
  copts.huge_pages = !a.small_pages;
  CompiledModel model(std::move(g), copts);
  const Graph& graph = model.graph();
  if (a.threads > 0) model.set_threads(a.threads);
  const auto& st = model.stats();

  std::map<std::string, Tensor> inputs = random_inputs(graph, 1);
  for (const auto& spec : a.input_files) {
    auto eq = spec.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("--input '{}': expected NAME=FILE.pb or NAME=FILE.npy", spec));
    std::string name = spec.substr(0, eq);
    if (!inputs.count(name)) throw Error(fmt::format("--input '{}': the model has no runtime input '{}'", spec, name));
    inputs[name] = read_tensor_file(spec.substr(eq + 1));
  }

  nlohmann::json j = {{"model", graph.path},
                      {"workloads", st.workloads},
                      {"steps", st.steps},
                      {"in_place_concats", st.in_place},
                      {"views", st.views},
                      {"activation_bytes", st.activation_bytes},
                      {"compiled", st.compiled},
                      {"cache_hits", st.cache_hits},
                      {"compile_seconds", st.seconds},
                      {"tuned", st.tuned}};
  std::vector<std::string> warnings = db_warnings;
  warnings.insert(warnings.end(), st.warnings.begin(), st.warnings.end());
  if (!warnings.empty()) j["warnings"] = warnings;
  if (!a.json) {
    std::cout << fmt::format("{}: {} workloads ({} steps{}{}, activations {:.1f} MB): compiled {}, cache hits {}, {:.2f} s\n",
                             graph.path, st.workloads, st.steps,
                             st.in_place > 0 ? fmt::format(", {} concats written in place", st.in_place) : "",
                             st.views > 0 ? fmt::format(", {} reshapes and slices as views", st.views) : "",
                             st.activation_bytes / 1e6, st.compiled, st.cache_hits, st.seconds);
    if (!a.db_path.empty())
      std::cout << fmt::format("tuned schedules: {} of {} workloads ({})\n", st.tuned, st.workloads, a.db_path);
    for (const auto& w : warnings) spdlog::warn("{}", w);
  }

  bool check_ok = true;
  if (!a.check_dir.empty()) check_ok = check_outputs(model, a.check_dir, a.json, j);
  if (!a.output_dir.empty()) j["outputs"] = write_outputs(model, inputs, a.output_dir, a.json);
  std::vector<Tensor> outputs;
  model.run(inputs, outputs);  // warm-up
  std::vector<double> ms;
  std::vector<double> step_total(model.partition().steps.size(), 0.0);  // seconds over all timed runs
  for (int i = 0; i < a.iters; i++) {
    auto t0 = std::chrono::steady_clock::now();
    model.run(inputs, outputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    for (size_t s = 0; s < step_total.size(); s++) step_total[s] += model.step_seconds()[s];
  }
  if (!ms.empty()) {
    const TimeStats st = time_stats(ms);
    const double max = *std::max_element(ms.begin(), ms.end());
    j["latency_ms"] = {{"median", st.median}, {"min", st.min}, {"max", max}, {"iters", a.iters}};
    if (!a.json)
      std::cout << fmt::format("latency over {} runs: median {:.3f} ms, min {:.3f} ms, max {:.3f} ms\n", a.iters,
                               st.median, st.min, max);
  }
  if (a.profile && !ms.empty()) j["profile"] = print_profile(model, step_total, ms, a.json);
  if (a.json) std::cout << j.dump() << "\n";
  return check_ok ? 0 : 3;
}

}  // namespace

void add_run_commands(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand("run", "Compile a model (each workload once, cached) and run it");
  add_model_args(run, args->model);
  run->add_option("--iters", args->iters, "Timed runs after one warm-up")->check(CLI::NonNegativeNumber);
  run->add_option("--threads", args->threads, "Halide threads (default: all cores)")->check(CLI::NonNegativeNumber);
  run->add_option("--input", args->input_files, "Input value from a file: NAME=FILE.npy or NAME=FILE.pb (others random)");
  run->add_option("--output", args->output_dir, "Write each output to DIR as <name>.npy and <name>.pb");
  run->add_option("--check", args->check_dir, "Compare with ONNX test data: DIR/test_data_set_*/{input,output}_i.pb");
  run->add_option("--cache-dir", args->cache_dir, "Compiled-code cache root (default ~/.cache/tensorsched)");
  run->add_option("--db", args->db_path, "Tuning records database: run each workload's fastest measured schedule");
  run->add_option("--knobs", args->knobs,
                  "KEY=KNOBS_JSON: workload KEY (`tensorsched workloads`) runs the default rule with these knobs, e.g. "
                  "'{\"prefetch\":\"0\"}' (repeatable; over --db's)");
  run->add_flag("--allow-foreign-records", args->allow_foreign,
                 "With --db: also use records measured on another machine or by another build");
  run->add_flag("--copy-concats", args->copy_concats,
                "Run every Concat as a copy step (default: a concat's inputs are written into its output in place where they can be)");
  run->add_flag("--small-pages", args->small_pages,
                "Keep constants and activations on 4 KiB pages, for comparison (default: 2 MiB transparent huge pages where the kernel allows)");
  run->add_flag("--json", args->json, "One JSON object");
  run->add_flag("--profile", args->profile, "Time per step over all timed runs: ONNX nodes, % of the latency, GFLOP/s");
  on_command(run, [args] { return run_command(*args); });

  auto wl = std::make_shared<ModelArgs>();
  auto wl_json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("workloads", "List the workloads a model is partitioned into");
  add_model_args(sub, *wl);
  sub->add_flag("--json", *wl_json, "One JSON object per workload");
  auto wl_stmt = std::make_shared<std::string>();
  sub->add_option("--stmt", *wl_stmt, "Print the Halide statement the default schedule lowers workload KEY (a key hash) to");
  auto wl_knobs = std::make_shared<std::string>();
  sub->add_option("--knobs", *wl_knobs, "With --stmt: the default rule with these knobs, a JSON object such as '{\"chunk\":\"8\"}'");
  auto wl_schedule = std::make_shared<std::string>();
  sub->add_option("--schedule", *wl_schedule,
                  "Print the default rule's schedule of workload KEY as the Halide C++ it stands for (with --json: its JSON), "
                  "with --knobs' variant when given");
  auto wl_asm = std::make_shared<bool>(false);
  sub->add_flag("--asm", *wl_asm, "With --stmt: print the assembly instead of the statement");
  auto wl_threads = std::make_shared<int>(0);
  sub->add_option("--threads", *wl_threads,
                  "The partition `run --threads N` and `tune --threads N` use (which 3x3 convs run as Winograd "
                  "depends on the threads; 0 = all cores)")
      ->check(CLI::NonNegativeNumber);
  on_command(sub, [wl, wl_json, wl_stmt, wl_knobs, wl_asm, wl_threads, wl_schedule] {
    Graph g = load_model(*wl, *wl_threads);
    Partition p = partition_graph(g);
    if (!wl_schedule->empty()) {
      const Workload* w = find_workload(p, *wl_schedule);
      if (!w) throw Error(fmt::format("{}: no workload with key {}", g.path, *wl_schedule));
      const LoweredWorkload lw = lower_workload(*w);
      const Schedule s = default_schedule(lw.outputs, host_code_target(), DefaultKnobs::from_json(*wl_knobs));
      std::cout << (*wl_json ? s.to_json(1) + "\n" : fmt::format("// schedule {} of workload {} ({})\n{}", s.hash(), w->key_hash(), w->name, s.to_halide_source()));
      return 0;
    }
    if (!wl_stmt->empty()) {
      const Workload* w = find_workload(p, *wl_stmt);
      if (!w) throw Error(fmt::format("{}: no workload with key {}", g.path, *wl_stmt));
      const Halide::Target target = host_code_target();
      LoweredWorkload lw = lower_workload(*w);
      apply_default_variant(lw.outputs, target, DefaultKnobs::from_json(*wl_knobs));
      add_task_prefetch_passes(lw.pipeline, lw.outputs);  // as compile_workload does
      const std::string path = (std::filesystem::temp_directory_path() / fmt::format("ts_stmt_{}.txt", getpid())).string();
      if (*wl_asm) lw.pipeline.compile_to_assembly(path, lw.args, "workload", target);
      else lw.pipeline.compile_to_lowered_stmt(path, lw.args, Halide::StmtOutputFormat::Text, target);
      std::ifstream in(path);
      std::cout << in.rdbuf();
      std::filesystem::remove(path);
      return 0;
    }
    int64_t total_flops = 0;
    for (const auto& w : p.workloads) total_flops += w.flops * w.count;
    if (!*wl_json)
      std::cout << fmt::format("{}: {} distinct workloads, {} steps, {:.3f} GFLOP per inference\n", g.path,
                               p.workloads.size(), p.steps.size(), total_flops * 1e-9);
    for (const auto& w : p.workloads) {
      if (*wl_json) {
        nlohmann::json j = {{"key", w.key_hash()}, {"class", w.class_hash()}, {"name", w.name},
                            {"count", w.count}, {"flops", w.flops}, {"bytes", w.bytes},
                            {"exact_key", w.exact_key}, {"class_key", w.class_key}};
        std::cout << j.dump() << "\n";
      } else {
        std::cout << fmt::format("  {} class {} x{:<3} {:>10.2f} MFLOP {:>9.2f} MB  {}\n", w.key_hash(), w.class_hash(),
                                 w.count, w.flops * 1e-6, w.bytes * 1e-6, w.name);
      }
    }
    return 0;
  });
}

}  // namespace ts
