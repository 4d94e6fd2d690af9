// run_workers: every way a forked job can end is a result (exit code, signal, timeout, exception),
// messages larger than a pipe's buffer arrive whole, and stderr can be captured.
#include "measure/worker_pool.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "graph/error.h"

namespace ts {
namespace {

TEST(WorkerPool, EveryKindOfEndIsAResult) {
  WorkerPoolOptions opts;
  opts.jobs = 2;
  opts.timeout_s = 1;
  opts.capture_stderr = true;
  const std::string big(1 << 20, 'x');  // far more than a pipe holds: the parent must drain while the child writes
  std::vector<size_t> completion;
  auto results = run_workers(
      6,
      [&](size_t i, int fd) -> int {
        switch (i) {
          case 0: write_all(fd, "hello"); return 0;
          case 1: return 3;
          case 2: std::abort();
          case 3: for (;;) pause();
          case 4: throw Error("job 4 failed");
          default:
            fputs("a line on stderr\n", stderr);
            write_all(fd, big);
            return 0;
        }
      },
      opts, [&](size_t i, const WorkerResult&) { completion.push_back(i); });
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(completion.size(), 6u);
  EXPECT_TRUE(results[0].exited_ok);
  EXPECT_EQ(results[0].message, "hello");
  EXPECT_FALSE(results[1].exited_ok);
  EXPECT_EQ(results[1].exit_code, 3);
  EXPECT_EQ(results[2].signal, SIGABRT);
  EXPECT_NE(results[2].describe_end(1).find("killed by signal 6"), std::string::npos) << results[2].describe_end(1);
  EXPECT_TRUE(results[3].timed_out);
  EXPECT_FALSE(results[3].exited_ok);
  EXPECT_EQ(results[3].describe_end(1), "timed out after 1 s");
  EXPECT_GE(results[3].seconds, 1.0);
  EXPECT_EQ(results[4].exit_code, 1);
  EXPECT_EQ(results[4].message, "job 4 failed");
  EXPECT_TRUE(results[5].exited_ok);
  EXPECT_EQ(results[5].message, big);
  EXPECT_EQ(results[5].stderr_tail, "a line on stderr\n");
}

}  // namespace
}  // namespace ts
