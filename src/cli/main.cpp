// The `tensorsched` command: one subcommand per job (conformance, info, ops, ...).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <Halide.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <iostream>

#include "cli/commands.h"
#include "graph/error.h"
#include "measure/workload_compiler.h"

namespace {

// Log lines go to stderr as "tensorsched: <level>: <text>"; the level comes from
// $TENSORSCHED_LOG (trace, debug, info, warn, error, off), else --verbose / --quiet, else info.
void set_up_logging(bool quiet, bool verbose) {
  auto logger = spdlog::stderr_color_mt("tensorsched");
  logger->set_pattern("tensorsched: %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = quiet ? spdlog::level::warn : verbose ? spdlog::level::debug : spdlog::level::info;
  if (const char* env = std::getenv("TENSORSCHED_LOG"); env && *env) level = spdlog::level::from_str(env);
  spdlog::set_level(level);
}

// What the user asked for, for errors that do not say it themselves (a library's bare
// std::bad_alloc or stoll): the selected (sub)commands and their positional arguments.
std::string command_context(const CLI::App& app) {
  std::string out;
  const CLI::App* cur = &app;
  while (true) {
    auto subs = cur->get_subcommands();
    if (subs.empty()) break;
    cur = subs[0];
    out += (out.empty() ? "" : " ") + cur->get_name();
  }
  for (const CLI::Option* opt : cur->get_options())
    if (opt->get_positional() && opt->count() > 0)
      for (const auto& v : opt->results()) out += " " + ts::printable_name(v);
  return out;
}

// An error message on one line, without control characters (names, attribute values and
// messages from a model are printed harmless).
std::string one_line(std::string m) {
  std::replace(m.begin(), m.end(), '\n', ' ');
  return ts::printable_name(m);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tensorsched: an auto-scheduler for deep neural networks (ONNX -> Halide)"};
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();  // every option's default shows in --help
  app.set_version_flag("--version", fmt::format("tensorsched {} (build {}: version and code generator hash)",
                                               TENSORSCHED_VERSION, ts::code_cache_build_dir()));
  bool quiet = false, verbose = false;
  app.add_flag("-q,--quiet", quiet, "Log warnings and errors only");
  app.add_flag("-v,--verbose", verbose, "Log debug detail too ($TENSORSCHED_LOG=trace|debug|info|warn|error|off overrides)");
  app.fallthrough();  // --quiet / --verbose after the subcommand too
  ts::add_conformance_command(app);
  ts::add_model_commands(app);
  ts::add_run_commands(app);
  ts::add_compile_command(app);
  ts::add_cache_command(app);
  ts::add_report_command(app);
  ts::add_db_commands(app);
  ts::add_space_command(app);
  ts::add_tune_command(app);
  ts::add_features_command(app);
  ts::add_costmodel_command(app);
  ts::add_dataset_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  set_up_logging(quiet, verbose);
  try {
    return ts::run_selected_command(app);
  } catch (const ts::Error& e) {
    std::cerr << "tensorsched: error: " << one_line(e.what()) << "\n";
    return 1;
  } catch (const Halide::Error& e) {
    std::cerr << "tensorsched: error: " << command_context(app) << ": Halide: " << one_line(e.what()) << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "tensorsched: error: " << command_context(app)
              << ": out of memory (a smaller --shape or --max-memory may help)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tensorsched: error: " << command_context(app) << ": " << one_line(e.what()) << "\n";
    return 1;
  }
}
