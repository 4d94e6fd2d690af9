#include "measure/subprocess.h"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "graph/error.h"

extern char** environ;

namespace ts {

namespace {
constexpr size_t kOutputBytes = 64 * 1024;  // output kept for messages
}

ProgramResult run_program(const std::vector<std::string>& argv, const std::string& cwd) {
  if (argv.empty()) throw Error("run_program: empty argument vector");
  int fds[2];
  if (pipe(fds) != 0) throw Error(fmt::format("{}: pipe failed: {}", argv[0], std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw Error(fmt::format("{}: cannot start it: {}", argv[0], std::strerror(rc)));
  }
  ProgramResult r;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.output.append(buf, static_cast<size_t>(n));
    if (r.output.size() > 2 * kOutputBytes) r.output.erase(0, r.output.size() - kOutputBytes);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (r.output.size() > kOutputBytes) r.output.erase(0, r.output.size() - kOutputBytes);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

std::vector<std::string> cxx_command() {
  const char* cxx = std::getenv("CXX");
  std::vector<std::string> words;
  std::string word;
  for (const char* c = cxx ? cxx : ""; *c; c++) {
    if (*c != ' ') word += *c;
    else if (!word.empty()) words.push_back(std::move(word)), word.clear();
  }
  if (!word.empty()) words.push_back(word);
  if (words.empty()) words.push_back("c++");
  return words;
}

}  // namespace ts
