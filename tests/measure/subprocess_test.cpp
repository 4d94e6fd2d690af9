// run_program passes every argument through unchanged (no shell), reports exit status, signal
// and output, and names a program it cannot start.
#include "measure/subprocess.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "graph/error.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

TEST(Subprocess, ArgumentsAreNotInterpretedByAShell) {
  const std::string tricky = "it's a \"path\" with $HOME; `spaces` & quotes";
  ProgramResult r = run_program({"printf", "%s|%s", tricky, "second"});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output, tricky + "|second");
}

TEST(Subprocess, ExitStatusSignalAndMissingProgram) {
  ProgramResult fail = run_program({"sh", "-c", "echo oops >&2; exit 3"});
  EXPECT_FALSE(fail.ok());
  EXPECT_EQ(fail.exit_code, 3);
  EXPECT_EQ(fail.output, "oops\n");
  ProgramResult killed = run_program({"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(killed.signal, 9);
  EXPECT_FALSE(killed.ok());
  EXPECT_TRUE(test::throws_naming<Error>([&] { run_program({"/nonexistent/tensorsched-no-such-program"}); },
                                         {"tensorsched-no-such-program"}));
}

TEST(Subprocess, CxxCommandSplitsWords) {
  setenv("CXX", "ccache  g++", 1);
  EXPECT_EQ(cxx_command(), (std::vector<std::string>{"ccache", "g++"}));
  unsetenv("CXX");
  EXPECT_EQ(cxx_command(), (std::vector<std::string>{"c++"}));
}

}  // namespace
}  // namespace ts
