// The pool behind Halide's parallel loops: every index runs exactly once on up to the asked
// number of threads, each thread first runs its own contiguous part and then steals, a failing
// task's status comes back, nested and concurrent loops run serially instead of deadlocking, the pool restarts after stop, and a real compiled Halide
// pipeline run through it gives the same values as a serial run.
#include "measure/spinning_pool.h"

#include <Halide.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "measure/workload_compiler.h"

namespace ts {
namespace {

struct Counts {
  std::vector<std::atomic<int>> runs;  // per index
  std::mutex m;
  std::set<std::thread::id> threads;   // which threads ran a task
  int fail_at = -1;                    // this index returns an error
  int meet_at = -1;                    // this index waits (up to 5 s) until a second thread has run a task
  explicit Counts(int n) : runs(n) {}
};

int count_task(void*, int i, uint8_t* closure) {
  auto* c = reinterpret_cast<Counts*>(closure);
  c->runs[i].fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(c->m);
    c->threads.insert(std::this_thread::get_id());
  }
  if (i == c->meet_at) {
    // Proof that another thread takes part, whatever else loads the machine: it must claim a
    // run of indices while this one waits.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(c->m);
        if (c->threads.size() >= 2) break;
      }
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::yield();
    }
  }
  volatile double x = 0;
  for (int k = 0; k < 2000; k++) x = x + k;
  return i == c->fail_at ? -7 : 0;
}

TEST(SpinningPool, RunsEveryIndexOnceOnSeveralThreads) {
  set_spinning_pool_threads(2);
  for (int size : {1, 2, 3, 17, 116, 1000}) {
    Counts c(size + 5);
    if (size >= 116) c.meet_at = 5;
    ASSERT_EQ(spinning_do_par_for(nullptr, count_task, 5, size, reinterpret_cast<uint8_t*>(&c)), 0);
    for (int i = 0; i < 5; i++) EXPECT_EQ(c.runs[i].load(), 0) << "index below min ran";
    for (int i = 5; i < size + 5; i++) EXPECT_EQ(c.runs[i].load(), 1) << "size " << size << " index " << i;
    if (size >= 116) EXPECT_EQ(c.threads.size(), 2u) << "size " << size << ": one thread did everything";
  }
  set_spinning_pool_threads(0);
}

// Which thread ran each index. Indices from `slow_from` on sleep 1 ms each; index 0 waits (up
// to 5 s) until another thread has run an index, whose number lands in `first_elsewhere`.
struct Owners {
  std::vector<std::atomic<int>> runs;
  std::vector<std::thread::id> thread;
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> first_elsewhere{-1};
  int slow_from;
  Owners(int n, int slow) : runs(n), thread(n), slow_from(slow) {}
};

int owner_task(void*, int i, uint8_t* closure) {
  auto* o = reinterpret_cast<Owners*>(closure);
  o->runs[i].fetch_add(1);
  o->thread[i] = std::this_thread::get_id();  // each index runs once: no race on the slot
  if (o->thread[i] != o->caller) {
    int none = -1;
    o->first_elsewhere.compare_exchange_strong(none, i);
  }
  if (i == 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (o->first_elsewhere.load() < 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  }
  if (i >= o->slow_from) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return 0;
}

TEST(SpinningPool, EachThreadFirstRunsItsOwnContiguousPart) {
  // Thread t owns the t-th half of a loop, so loops of one shape give a thread the same indices
  // every time (what it wrote stays in its caches): while the caller holds index 0, the worker
  // starts at 32, the first index of its half (a shared counter would hand it index 1).
  set_spinning_pool_threads(2);
  for (int rep = 0; rep < 3; rep++) {
    // A worker still looking for work in the previous loop could steal here before it claims
    // its own part: let it go back to waiting first.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Owners o(64, 64);
    ASSERT_EQ(spinning_do_par_for(nullptr, owner_task, 0, 64, reinterpret_cast<uint8_t*>(&o)), 0);
    for (int i = 0; i < 64; i++) ASSERT_EQ(o.runs[i].load(), 1) << "index " << i;
    EXPECT_EQ(o.thread[0], o.caller);
    EXPECT_EQ(o.first_elsewhere.load(), 32) << "rep " << rep;
  }
  set_spinning_pool_threads(0);
}

TEST(SpinningPool, AThreadThatFinishesItsPartStealsFromTheBackOfAnother) {
  // The worker's half is slow (1 ms a task): the caller, done with its own half in microseconds,
  // takes the worker's indices from the back, so what it took is one run ending at the last index.
  set_spinning_pool_threads(2);
  Owners o(64, 33);
  ASSERT_EQ(spinning_do_par_for(nullptr, owner_task, 0, 64, reinterpret_cast<uint8_t*>(&o)), 0);
  int lowest_stolen = 64;
  for (int i = 0; i < 64; i++) {
    ASSERT_EQ(o.runs[i].load(), 1) << "index " << i;
    if (i >= 32 && o.thread[i] == o.caller) lowest_stolen = std::min(lowest_stolen, i);
  }
  ASSERT_LT(lowest_stolen, 64) << "the caller waited for the worker's slow half";
  EXPECT_GT(lowest_stolen, 32) << "the caller took the worker's first index";
  for (int i = lowest_stolen; i < 64; i++) EXPECT_EQ(o.thread[i], o.caller) << "index " << i << ": not one run from the back";
  set_spinning_pool_threads(0);
}

TEST(SpinningPool, AFailingTaskStatusComesBack) {
  set_spinning_pool_threads(2);
  Counts c(64);
  c.fail_at = 10;
  EXPECT_EQ(spinning_do_par_for(nullptr, count_task, 0, 64, reinterpret_cast<uint8_t*>(&c)), -7);
  for (int i = 0; i < 64; i++) EXPECT_LE(c.runs[i].load(), 1);
  // The pool is usable after a failure.
  Counts d(64);
  EXPECT_EQ(spinning_do_par_for(nullptr, count_task, 0, 64, reinterpret_cast<uint8_t*>(&d)), 0);
  for (int i = 0; i < 64; i++) EXPECT_EQ(d.runs[i].load(), 1);
  set_spinning_pool_threads(0);
}

struct Nested {
  std::atomic<int> inner_runs{0};
};

int inner_task(void*, int, uint8_t* closure) {
  reinterpret_cast<Nested*>(closure)->inner_runs.fetch_add(1);
  return 0;
}

int outer_task(void*, int, uint8_t* closure) { return spinning_do_par_for(nullptr, inner_task, 0, 8, closure); }

TEST(SpinningPool, NestedAndConcurrentLoopsRunSerially) {
  set_spinning_pool_threads(2);
  Nested n;
  ASSERT_EQ(spinning_do_par_for(nullptr, outer_task, 0, 16, reinterpret_cast<uint8_t*>(&n)), 0);
  EXPECT_EQ(n.inner_runs.load(), 16 * 8);
  // Two application threads each running loops: whoever finds the pool busy runs its own serially.
  std::vector<std::unique_ptr<Counts>> counts;
  for (int t = 0; t < 2; t++) counts.push_back(std::make_unique<Counts>(200));
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; t++)
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < 5; rep++)
        EXPECT_EQ(spinning_do_par_for(nullptr, count_task, 0, 40, reinterpret_cast<uint8_t*>(counts[t].get())), 0);
    });
  for (auto& c : callers) c.join();
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < 40; i++) EXPECT_EQ(counts[t]->runs[i].load(), 5);
  set_spinning_pool_threads(0);
}

TEST(SpinningPool, RestartsAfterStopAndAfterSleeping) {
  set_spinning_pool_threads(2);
  set_spinning_pool_spin_us(0);  // workers sleep right away: the wake-up path runs
  for (int rep = 0; rep < 20; rep++) {
    Counts c(50);
    ASSERT_EQ(spinning_do_par_for(nullptr, count_task, 0, 50, reinterpret_cast<uint8_t*>(&c)), 0);
    for (int i = 0; i < 50; i++) ASSERT_EQ(c.runs[i].load(), 1);
    if (rep % 5 == 4) stop_spinning_pool();
    if (rep % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  set_spinning_pool_spin_us(2000);
  set_spinning_pool_threads(0);
}

TEST(SpinningPool, AJitCompiledParallelPipelineMatchesSerial) {
  // Halide's JIT runtime takes a custom do_par_for per pipeline the same way the shared runtime
  // does process-wide (workload_code.cpp): the values must not depend on which pool ran them.
  Halide::Var x("x"), y("y");
  Halide::Func f("f");
  f(x, y) = Halide::cast<float>(x * 3 + y * 7) * 0.5f + Halide::sin(Halide::cast<float>(x + y));
  f.parallel(y).vectorize(x, 16);
  const Halide::Target target = host_code_target();
  Halide::Buffer<float> serial = f.realize({256, 93}, target);
  f.jit_handlers().custom_do_par_for = [](Halide::JITUserContext* uc, int (*fn)(Halide::JITUserContext*, int, uint8_t*),
                                          int min, int size, uint8_t* closure) {
    return spinning_do_par_for(uc, reinterpret_cast<halide_task_t>(fn), min, size, closure);
  };
  set_spinning_pool_threads(2);
  Halide::Buffer<float> pooled = f.realize({256, 93}, target);
  for (int j = 0; j < 93; j++)
    for (int i = 0; i < 256; i++) ASSERT_EQ(pooled(i, j), serial(i, j)) << i << "," << j;
  set_spinning_pool_threads(0);
}

}  // namespace
}  // namespace ts
