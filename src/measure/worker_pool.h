#pragma once
// Runs jobs in forked child processes, at most `jobs` at a time, each with a wall-clock timeout,
// so that a crash, a hang or an abort in one job (code generation, generated code) is a result
// of that job and never the caller's death. A job writes its message (any bytes) to a pipe; the
// parent drains every pipe while the children run, so messages of any size are fine.
#include <functional>
#include <string>
#include <vector>

namespace ts {

struct WorkerPoolOptions {
  int jobs = 1;                 // children running at once (at least 1)
  double timeout_s = 0;         // per job wall-clock limit; the child is SIGKILLed past it (0 = none)
  bool capture_stderr = false;  // the child's stderr goes to WorkerResult::stderr_tail instead of ours
};

// How one job ended. A job that fails is a result, never an exception.
struct WorkerResult {
  bool exited_ok = false;       // exited with status 0 (and was not killed)
  int exit_code = -1;           // exit status when it exited, else -1
  int signal = 0;               // signal that killed it (SIGKILL after a timeout), else 0
  bool timed_out = false;       // killed for exceeding timeout_s
  std::string message;          // bytes the job wrote to its message pipe
  std::string stderr_tail;      // last 64 KiB of its stderr (capture_stderr only)
  double seconds = 0;           // wall time from fork to end

  // One line for error messages: "exit status 1", "killed by signal 11 (Segmentation fault)",
  // "timed out after 2 s".
  std::string describe_end(double timeout_s) const;
};

// Runs in the child: writes its message to `message_fd` (see write_all) and returns the exit
// code. An exception it throws becomes exit code 1 with what() appended to the message.
using WorkerJob = std::function<int(size_t index, int message_fd)>;

// Runs jobs 0..count-1 and returns their results in index order; `on_done` (optional) is called
// in the parent as each job ends, in completion order. Throws ts::Error only when pipe() or
// fork() fails.
std::vector<WorkerResult> run_workers(size_t count, const WorkerJob& job, const WorkerPoolOptions& opts,
                                      const std::function<void(size_t index, const WorkerResult&)>& on_done = {});

// A function run_workers calls from its wait loop, about every 100 ms, in the parent (null: none).
// A process that must show it is alive while its jobs run installs one: an MPI runner rank sends
// its heartbeat so (measure/mpi_fleet.h). Returns the one it replaces.
using WorkerWaitHook = std::function<void()>;
WorkerWaitHook set_worker_wait_hook(WorkerWaitHook hook);

// Worker text (compiler output, Halide's messages) kept in an error message.
inline constexpr size_t kMessageChars = 2000;
// The last `n` characters of s, marked "..." when cut.
std::string message_tail(const std::string& s, size_t n = kMessageChars);

// Writes all of `bytes` to fd (retrying short writes); false when the pipe is gone.
bool write_all(int fd, const std::string& bytes);

}  // namespace ts
