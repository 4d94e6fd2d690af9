// `tensorsched compile MODEL -o DIR`: the model with the best schedule known per workload
// (records of --db, else the default rule) as a self-contained library (api/compile_model.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/compile_model.h"
#include "cli/commands.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

struct CompileArgs {
  ModelArgs model;
  int threads = 0;  // --threads: the thread count the library is planned and its records chosen for
  CompileRequest req;
  bool no_static = false;
  bool json = false;
};

int compile_command(CompileArgs a) {
  a.req.model = a.model.path;
  a.req.load = load_options(a.model, a.threads);
  a.req.static_library = !a.no_static;
  CompileResult r = compile_model(a.req);
  const Artifact& art = r.artifact;
  if (a.json) {
    std::cout << nlohmann::json{{"shared_library", art.shared_library}, {"static_library", art.static_library},
                                {"header", art.header}, {"manifest", art.manifest}, {"workloads", r.workloads},
                                {"tuned", r.tuned}, {"steps", r.steps}, {"warnings", r.warnings}}
                     .dump()
              << "\n";
    return 0;
  }
  for (const auto& w : r.warnings) spdlog::warn("{}", w);
  std::cout << fmt::format("{}: {} workloads ({} tuned, {} default), {} steps\n", a.model.path, r.workloads, r.tuned,
                           r.workloads - r.tuned, r.steps);
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
  sub->add_option("-o,--out", args->req.out_dir, "Output directory")->required();
  sub->add_option("--name", args->req.name, "Library name: lib<NAME>.so, lib<NAME>.a")->capture_default_str();
  sub->add_option("--db", args->req.db_path, "Tuning records database: each workload's fastest measured schedule");
  sub->add_option("--threads", args->threads,
                  "Threads the library will run with: which convs run as Winograd and which records' re-measurements "
                  "count (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--cache-dir", args->req.cache_dir, "Compiled-code cache root (default ~/.cache/tensorsched)");
  sub->add_flag("--allow-foreign-records", args->req.allow_foreign_records,
                "Also use records measured on another machine or by another build");
  sub->add_flag("--no-static", args->no_static, "Do not write the static library");
  sub->add_flag("--constants-file", args->req.constants_file, "Also write constants.bin (for ts_model_create(path))");
  sub->add_flag("--json", args->json, "One JSON object");
  on_command(sub, [args] { return compile_command(*args); });
}

}  // namespace ts
