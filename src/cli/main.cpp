// The `tensorsched` command: one subcommand per job (conformance, info, ops, ...).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <Halide.h>
#include <iostream>

#include "cli/commands.h"
#include "graph/error.h"

int main(int argc, char** argv) {
  CLI::App app{"tensorsched: an auto-scheduler for deep neural networks (ONNX -> Halide)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tensorsched ") + TENSORSCHED_VERSION);
  ts::add_conformance_command(app);
  ts::add_model_commands(app);
  ts::add_run_commands(app);
  ts::add_compile_command(app);
  ts::add_db_commands(app);
  ts::add_space_command(app);
  ts::add_tune_command(app);
  ts::add_features_command(app);
  ts::add_costmodel_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return ts::run_selected_command(app);
  } catch (const ts::Error& e) {
    std::cerr << "tensorsched: error: " << e.what() << "\n";
    return 1;
  } catch (const Halide::Error& e) {
    std::string m = e.what();
    std::replace(m.begin(), m.end(), '\n', ' ');
    std::cerr << "tensorsched: error: Halide: " << m << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tensorsched: error: " << e.what() << "\n";
    return 1;
  }
}
