#pragma once
// Runs an external program (the system C++ compiler, ar) from an argument vector with
// posix_spawnp: no shell, so a path with quotes or spaces is one argument, never a command.
#include <string>
#include <vector>

namespace ts {

struct ProgramResult {
  int exit_code = -1;   // exit status; -1 when it did not exit normally
  int signal = 0;       // signal that ended it, else 0
  std::string output;   // its stdout and stderr together (last 64 KiB)
  bool ok() const { return exit_code == 0 && signal == 0; }
};

// Runs argv[0] (searched in PATH) with argv in directory `cwd` ("" = ours) and waits for it.
// Throws Error when it cannot be started (naming the program and the reason).
ProgramResult run_program(const std::vector<std::string>& argv, const std::string& cwd = "");

// The C++ compiler's argument vector prefix: $CXX split at spaces when set ("ccache g++"),
// else {"c++"}.
std::vector<std::string> cxx_command();

}  // namespace ts
