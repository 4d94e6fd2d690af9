#pragma once
// Subcommand registration. Each add_* registers its subcommands and remembers what to run;
// run_selected_command() runs the one the user chose and returns the exit code.
#include <CLI/CLI.hpp>

#include <functional>

namespace ts {

void add_conformance_command(CLI::App& app);
void add_model_commands(CLI::App& app);
// Registers the action of a subcommand.
void on_command(CLI::App* sub, std::function<int()> action);
int run_selected_command(CLI::App& app);

}  // namespace ts
