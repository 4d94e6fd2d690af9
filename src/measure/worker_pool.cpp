#include "measure/worker_pool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "graph/error.h"

namespace ts {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStderrTailBytes = 64 * 1024;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Running {
  size_t index;              // job index
  pid_t pid;                 // the child
  int message_fd;            // read end of its message pipe (-1 once at EOF)
  int stderr_fd;             // read end of its stderr pipe (-1 once at EOF or without capture)
  Clock::time_point start;   // fork time
  WorkerResult result;       // filled as it runs
  bool reaped = false;       // waitpid has returned its status
  int status = 0;            // that status
};

// Reads what is available without blocking; closes fd at EOF or on error.
void drain(int& fd, std::string& into, size_t keep_last = 0) {
  char buf[65536];
  while (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      if (keep_last && into.size() > keep_last) into.erase(0, into.size() - keep_last);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    close(fd);
    fd = -1;
  }
}

// The child's side: never returns.
[[noreturn]] void run_child(const WorkerJob& job, size_t index, int message_fd, int stderr_fd, pid_t parent) {
  // A child outliving its parent (killed tuner) would keep a core busy, e.g. in a hung candidate.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);
  if (stderr_fd >= 0) {
    dup2(stderr_fd, STDERR_FILENO);
    close(stderr_fd);
  }
  int rc = 1;
  try {
    rc = job(index, message_fd);
  } catch (const std::exception& e) {
    write_all(message_fd, e.what());
    rc = 1;
  } catch (...) {
    write_all(message_fd, "unknown exception");
    rc = 1;
  }
  fflush(nullptr);
  _exit(rc);
}

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("worker pool: pipe() failed: {}", strerror(errno)));
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
}

}  // namespace

bool write_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string WorkerResult::describe_end(double timeout_s) const {
  if (timed_out) return fmt::format("timed out after {:g} s", timeout_s);
  if (signal) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit status {}", exit_code);
}

namespace {
WorkerWaitHook g_wait_hook;  // see set_worker_wait_hook
}  // namespace

WorkerWaitHook set_worker_wait_hook(WorkerWaitHook hook) {
  std::swap(g_wait_hook, hook);
  return hook;
}

std::vector<WorkerResult> run_workers(size_t count, const WorkerJob& job, const WorkerPoolOptions& opts,
                                      const std::function<void(size_t, const WorkerResult&)>& on_done) {
  std::vector<WorkerResult> results(count);
  std::vector<Running> running;
  const size_t max_running = static_cast<size_t>(std::max(1, opts.jobs));
  const pid_t parent = getpid();
  size_t next = 0;

  auto start_one = [&] {
    int msg[2], err[2] = {-1, -1};
    make_pipe(msg);
    if (opts.capture_stderr) make_pipe(err);
    fflush(nullptr);  // buffered output would otherwise be written by both processes
    pid_t pid = fork();
    if (pid < 0) throw Error(fmt::format("worker pool: fork() failed: {}", strerror(errno)));
    if (pid == 0) {
      close(msg[0]);
      if (err[0] >= 0) close(err[0]);
      run_child(job, next, msg[1], err[1], parent);
    }
    close(msg[1]);
    if (err[1] >= 0) close(err[1]);
    running.push_back({next++, pid, msg[0], err[0], Clock::now(), {}});
  };

  // Ends a reaped (or killed) job: collects what is left in its pipes and records the result.
  auto finish = [&](Running& w) {
    drain(w.message_fd, w.result.message);
    drain(w.stderr_fd, w.result.stderr_tail, kStderrTailBytes);
    // A grandchild (e.g. the linker) may still hold a pipe: what the job wrote is already read.
    for (int* fd : {&w.message_fd, &w.stderr_fd})
      if (*fd >= 0) close(*fd), *fd = -1;
    WorkerResult& r = w.result;
    r.seconds = seconds_since(w.start);
    if (WIFEXITED(w.status)) {
      r.exit_code = WEXITSTATUS(w.status);
      r.exited_ok = !r.timed_out && r.exit_code == 0;
    } else if (WIFSIGNALED(w.status)) {
      r.signal = WTERMSIG(w.status);
    }
    results[w.index] = std::move(r);
    if (on_done) on_done(w.index, results[w.index]);
  };

  while (next < count || !running.empty()) {
    while (next < count && running.size() < max_running) start_one();

    // Sleep until a pipe has data, the nearest deadline, or a short tick to reap exited children.
    std::vector<pollfd> pfds;
    int wait_ms = 100;
    for (const auto& w : running) {
      if (w.message_fd >= 0) pfds.push_back({w.message_fd, POLLIN, 0});
      if (w.stderr_fd >= 0) pfds.push_back({w.stderr_fd, POLLIN, 0});
      if (w.message_fd < 0 && w.stderr_fd < 0) wait_ms = std::min(wait_ms, 5);
      if (opts.timeout_s > 0)
        wait_ms = std::min(wait_ms, std::max(1, static_cast<int>((opts.timeout_s - seconds_since(w.start)) * 1000) + 1));
    }
    poll(pfds.data(), pfds.size(), wait_ms);
    if (g_wait_hook) g_wait_hook();

    for (size_t k = running.size(); k-- > 0;) {
      Running& w = running[k];
      drain(w.message_fd, w.result.message);
      drain(w.stderr_fd, w.result.stderr_tail, kStderrTailBytes);
      if (waitpid(w.pid, &w.status, WNOHANG) == w.pid) {
        w.reaped = true;
      } else if (opts.timeout_s > 0 && seconds_since(w.start) > opts.timeout_s) {
        kill(w.pid, SIGKILL);
        while (waitpid(w.pid, &w.status, 0) < 0 && errno == EINTR) {
        }
        w.reaped = true;
        w.result.timed_out = true;
      }
      if (w.reaped) {
        finish(w);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
  }
  return results;
}

std::string message_tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

}  // namespace ts
