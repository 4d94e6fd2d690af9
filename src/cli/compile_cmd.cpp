// `tensorsched compile MODEL -o DIR`: the model with the best schedule known per workload
// (records of --db, else the default rule) as a self-contained library (runtime/artifact.h).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "graph/workload.h"
#include "runtime/artifact.h"
#include "runtime/compiled_model.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

struct CompileArgs {
  ModelArgs model;
  std::string out_dir;
  std::string name = "model";
  std::string db_path;
  std::string cache_dir;
  bool no_static = false;
  bool constants_file = false;
  bool json = false;
};

std::string file_hash(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return fnv1a_hex(std::string(std::istreambuf_iterator<char>(f), {}));
}

int compile_command(const CompileArgs& a) {
  Graph g = load_model(a.model);
  CompileOptions copts;
  copts.cache_root = a.cache_dir;
  std::vector<std::string> warnings;
  if (!a.db_path.empty()) copts.schedules = best_schedules_of(g, a.db_path, warnings);
  CompiledModel model(std::move(g), copts);
  const auto& st = model.stats();
  warnings.insert(warnings.end(), st.warnings.begin(), st.warnings.end());

  ArtifactOptions ao;
  ao.out_dir = a.out_dir;
  ao.name = a.name;
  ao.static_library = !a.no_static;
  ao.constants_file = a.constants_file;
  ao.manifest = {{"model", a.model.path}, {"model_fnv1a", file_hash(a.model.path)}, {"layout", a.model.layout},
                 {"shapes", a.model.shapes}, {"records_db", a.db_path}, {"target", Halide::get_host_target().to_string()},
                 {"tuned_workloads", st.tuned}};
  nlohmann::json workloads = nlohmann::json::array();
  const Partition& p = model.partition();
  for (size_t i = 0; i < p.workloads.size(); i++) {
    const Workload& w = p.workloads[i];
    auto tuned = copts.schedules.find(w.exact_key);
    const bool uses_tuned = tuned != copts.schedules.end() &&
                            model.plan().functions[i].find(tuned->second.hash()) != std::string::npos;
    workloads.push_back({{"key", w.key_hash()}, {"name", w.name}, {"count", w.count},
                         {"schedule", uses_tuned ? tuned->second.hash() : std::string(kDefaultScheduleHash)},
                         {"function", model.plan().functions[i]}});
  }
  ao.manifest["workloads"] = workloads;
  if (!warnings.empty()) ao.manifest["warnings"] = warnings;
  Artifact art = write_artifact(model, ao);

  if (a.json) {
    std::cout << nlohmann::json{{"shared_library", art.shared_library}, {"static_library", art.static_library},
                                {"header", art.header}, {"manifest", art.manifest}, {"workloads", st.workloads},
                                {"tuned", st.tuned}, {"warnings", warnings}}
                     .dump()
              << "\n";
    return 0;
  }
  for (const auto& w : warnings) std::cerr << "tensorsched: warning: " << w << "\n";
  std::cout << fmt::format("{}: {} workloads ({} tuned, {} default), {} steps\n", a.model.path, st.workloads, st.tuned,
                           st.workloads - st.tuned, st.steps);
  std::cout << fmt::format("wrote {} ({:.1f} MB)\n", art.shared_library, fs::file_size(art.shared_library) / 1e6);
  if (!art.static_library.empty()) std::cout << fmt::format("wrote {}\n", art.static_library);
  std::cout << fmt::format("wrote {}\nwrote {}\n", art.header, art.manifest);
  return 0;
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  auto* sub = app.add_subcommand("compile", "Compile a model into a self-contained library with a C API");
  add_model_args(sub, args->model);
  sub->add_option("-o,--out", args->out_dir, "Output directory")->required();
  sub->add_option("--name", args->name, "Library name: lib<NAME>.so, lib<NAME>.a")->capture_default_str();
  sub->add_option("--db", args->db_path, "Tuning records database: each workload's fastest measured schedule");
  sub->add_option("--cache-dir", args->cache_dir, "Compiled-code cache root (default ~/.cache/tensorsched)");
  sub->add_flag("--no-static", args->no_static, "Do not write the static library");
  sub->add_flag("--constants-file", args->constants_file, "Also write constants.bin (ts_model_create(path))");
  sub->add_flag("--json", args->json, "One JSON object");
  on_command(sub, [args] { return compile_command(*args); });
}

}  // namespace ts
