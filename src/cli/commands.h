#pragma once
// Subcommand registration. Each add_* registers its subcommands and remembers what to run;
// run_selected_command() runs the one the user chose and returns the exit code.
#include <CLI/CLI.hpp>

#include <functional>

#include <string>
#include <vector>

#include "api/compile_model.h"
#include "graph/graph.h"

namespace ts {

void add_conformance_command(CLI::App& app);
void add_model_commands(CLI::App& app);
void add_run_commands(CLI::App& app);
void add_db_commands(CLI::App& app);
void add_space_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_features_command(CLI::App& app);
void add_costmodel_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_dataset_command(CLI::App& app);
// Registers the action of a subcommand.
void on_command(CLI::App* sub, std::function<int()> action);
int run_selected_command(CLI::App& app);

// Flags shared by every command that loads a model.
struct ModelArgs {
  std::string path;
  std::vector<std::string> shapes;
  std::string layout = "blocked";  // "blocked": the layout plan (graph/layout_plan.h); "plain": every tensor as declared
  std::string max_memory;          // --max-memory: "" = 3/4 of physical memory
  bool no_winograd = false;        // --no-winograd: every conv direct (graph/winograd.h)
};
// The LoadOptions these arguments stand for (parses --shape and --max-memory later, at import),
// for a model run with `threads` Halide threads (0: the default count).
LoadOptions load_options(const ModelArgs& m, int threads = 0);
void add_model_args(CLI::App* sub, ModelArgs& m);
// Imports the model (graph-only models get generated weights), runs the default passes and
// plans the layouts of its tensors (blocked by the host's float32 vector lanes unless m.layout is
// "plain") and its Winograd convs for `threads` Halide threads (0: the default count).
Graph load_model(const ModelArgs& m, int threads = 0);

}  // namespace ts
