#include "measure/spinning_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TS_CPU_RELAX() _mm_pause()
#else
#define TS_CPU_RELAX() std::this_thread::yield()
#endif

namespace ts {

int default_pool_threads() {
  if (const char* env = std::getenv("HL_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

namespace {

// A thread's range of a loop's indices: begin in the low 32 bits, end in the high 32. Its owner
// claims from the front, a thread that finished its own range steals from the back; both by CAS
// on the one word, so a claim is never taken twice. Empty (begin >= end) between loops.
constexpr uint64_t range_word(int64_t begin, int64_t end) {
  return static_cast<uint64_t>(begin) | (static_cast<uint64_t>(end) << 32);
}
constexpr int64_t range_begin(uint64_t word) { return static_cast<int64_t>(word & 0xffffffffu); }
constexpr int64_t range_end(uint64_t word) { return static_cast<int64_t>(word >> 32); }

// One cache line per range: the owner's claims stay in its own L1 until someone steals.
struct alignas(64) ThreadRange {
  std::atomic<uint64_t> word{0};
};

thread_local bool inside_task = false;  // this thread runs a task: nested loops run serially

// False once the pool is destroyed (process exit, an artifact's dlclose): a loop Halide starts
// afterwards (another static's destructor) runs serially instead of using a dead pool.
std::atomic<bool> pool_alive{false};

class SpinningPool {
 public:
  SpinningPool() { pool_alive.store(true); }
  ~SpinningPool() {
    pool_alive.store(false);
    stop();
  }

  static int run_serially(void* uc, halide_task_t f, int min, int size, uint8_t* closure) {
    for (int i = min; i < min + size; i++)
      if (int r = f(uc, i, closure)) return r;
    return 0;
  }

  int run(void* uc, halide_task_t f, int min, int size, uint8_t* closure) {
    if (size <= 0) return 0;
    if (size == 1 || inside_task || threads_.load(std::memory_order_relaxed) <= 1)
      return run_serially(uc, f, min, size, closure);
    std::unique_lock<std::mutex> owner(loop_mutex_, std::try_to_lock);
    if (!owner.owns_lock() || !start_workers()) return run_serially(uc, f, min, size, closure);
    // Publish: the fields first, then open the ranges (release), then the generation workers watch.
    fn_.store(f, std::memory_order_relaxed);
    user_context_.store(uc, std::memory_order_relaxed);
    closure_.store(closure, std::memory_order_relaxed);
    min_.store(min, std::memory_order_relaxed);
    status_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    // Thread t owns the t-th contiguous part: a loop of the same shape gives each thread the
    // same rows every time, and consecutive steps split alike, so what a thread writes it
    // mostly reads next from its own L2 instead of the other core's.
    const int threads = loop_threads();
    for (int t = 0; t < threads; t++)
      ranges_[t].word.store(range_word(int64_t{size} * t / threads, int64_t{size} * (t + 1) / threads),
                            std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    work(0);
    while (done_.load(std::memory_order_acquire) < size) TS_CPU_RELAX();
    return status_.load(std::memory_order_relaxed);
  }

  void set_threads(int threads) {
    std::lock_guard<std::mutex> owner(loop_mutex_);
    join_workers();
    threads_.store(threads > 0 ? threads : default_pool_threads());
  }

  void set_spin_us(int us) { spin_us_.store(us > 0 ? us : 0); }

  void stop() {
    std::lock_guard<std::mutex> owner(loop_mutex_);
    join_workers();
  }

 private:
  // Threads taking part in a loop, the caller's included (the workers read it without the lock).
  int loop_threads() const { return workers_count_.load(std::memory_order_relaxed) + 1; }

  // Runs [first, end) of the current loop (after a failure they are skipped); the caller counts
  // them done.
  void run_claimed(int64_t first, int64_t end) {
    for (int64_t i = first; i < end; i++) {
      if (status_.load(std::memory_order_relaxed) != 0) continue;
      auto f = fn_.load(std::memory_order_relaxed);
      int r = f(user_context_.load(std::memory_order_relaxed), min_.load(std::memory_order_relaxed) + static_cast<int>(i),
                closure_.load(std::memory_order_relaxed));
      if (r != 0) {
        int zero = 0;
        status_.compare_exchange_strong(zero, r);
      }
    }
  }

  // Thread `self` claims its own range one index at a time from the front (a CAS on a line only
  // it writes until someone steals), then steals half of what is left of another's range from
  // its back until every range is empty. A worker late from a loop finds the ranges empty, or
  // claims from the next loop, whose fields were published before its ranges opened. Indices
  // count as done once per run of them (done_ is a line both cores write: once per index made
  // loops of tiny tasks pay a cross-core transfer each).
  void work(int self) {
    inside_task = true;
    const int threads = loop_threads();
    std::atomic<uint64_t>& own = ranges_[self].word;
    int ran = 0;
    for (uint64_t w = own.load(std::memory_order_acquire); range_begin(w) < range_end(w);) {
      if (own.compare_exchange_weak(w, range_word(range_begin(w) + 1, range_end(w)), std::memory_order_acq_rel)) {
        run_claimed(range_begin(w), range_begin(w) + 1);
        ran++;
      }
    }
    if (ran > 0) done_.fetch_add(ran, std::memory_order_release);
    for (bool found = true; found;) {
      found = false;
      for (int k = 1; k < threads; k++) {
        std::atomic<uint64_t>& victim = ranges_[(self + k) % threads].word;
        uint64_t w = victim.load(std::memory_order_acquire);
        while (range_begin(w) < range_end(w)) {
          found = true;
          const int64_t take = std::max<int64_t>(1, (range_end(w) - range_begin(w)) / 2);
          if (victim.compare_exchange_weak(w, range_word(range_begin(w), range_end(w) - take), std::memory_order_acq_rel)) {
            run_claimed(range_end(w) - take, range_end(w));
            done_.fetch_add(static_cast<int>(take), std::memory_order_release);
            break;
          }
        }
      }
    }
    inside_task = false;
  }

  // `seen`: the generation before the loop that started this worker, so that a worker whose
  // thread starts late still joins that loop.
  void worker_loop(int self, uint64_t seen) {
    for (;;) {
      auto spin_start = std::chrono::steady_clock::now();
      for (int k = 1; generation_.load(std::memory_order_acquire) == seen; k++) {
        if (stopping_.load(std::memory_order_relaxed)) return;
        TS_CPU_RELAX();
        if (k % 256 != 0) continue;
        auto spun = std::chrono::steady_clock::now() - spin_start;
        if (spun < std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed))) continue;
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleeping_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] {
          return generation_.load(std::memory_order_seq_cst) != seen || stopping_.load(std::memory_order_relaxed);
        });
        sleeping_.fetch_sub(1, std::memory_order_seq_cst);
        spin_start = std::chrono::steady_clock::now();
      }
      seen = generation_.load(std::memory_order_acquire);
      work(self);
    }
  }

  // Called with loop_mutex_ held. False when no thread could be started (the loop then runs
  // serially: an exception must not cross Halide's C runtime).
  bool start_workers() {
    const int wanted = threads_.load(std::memory_order_relaxed) - 1;
    if (static_cast<int>(workers_.size()) == wanted) return true;
    join_workers();
    try {
      const uint64_t seen = generation_.load(std::memory_order_acquire);
      ranges_.reset(new ThreadRange[wanted + 1]);
      workers_count_.store(wanted, std::memory_order_relaxed);
      for (int i = 0; i < wanted; i++) workers_.emplace_back([this, seen, i] { worker_loop(i + 1, seen); });
    } catch (const std::exception&) {  // no thread (system_error) or no memory for the ranges
      join_workers();
      return false;
    }
    return true;
  }

  // Called with loop_mutex_ held.
  void join_workers() {
    if (workers_.empty()) return;
    {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      stopping_.store(true);
      wake_.notify_all();
    }
    for (auto& t : workers_) t.join();
    workers_.clear();
    workers_count_.store(0, std::memory_order_relaxed);
    stopping_.store(false);
  }

  std::mutex loop_mutex_;                    // held by the thread whose loop the pool runs
  std::vector<std::thread> workers_;         // threads_ - 1 of them while started
  std::atomic<int> threads_{default_pool_threads()};  // threads of a loop, the caller's included
  std::atomic<int> spin_us_{2000};           // spin this long after the last task, then sleep
  std::atomic<bool> stopping_{false};        // workers return when set
  std::atomic<uint64_t> generation_{0};      // bumped once per loop; workers watch it
  std::atomic<int> sleeping_{0};             // workers waiting on wake_
  std::mutex sleep_mutex_;                   // guards the sleep/wake handshake
  std::condition_variable wake_;             // a new loop, or stopping
  // The current loop: written only while every range is empty, read by whoever claims an index.
  std::atomic<halide_task_t> fn_{nullptr};   // the loop body
  std::atomic<void*> user_context_{nullptr}; // passed through to fn_
  std::atomic<uint8_t*> closure_{nullptr};   // passed through to fn_
  std::atomic<int> min_{0};                  // first index
  std::unique_ptr<ThreadRange[]> ranges_;    // one per thread (the caller's is 0): what it claims first
  std::atomic<int> workers_count_{0};        // workers_.size(), read by the workers themselves
  alignas(64) std::atomic<int> done_{0};     // indices finished, on a line of its own (the caller polls it)
  alignas(64) std::atomic<int> status_{0};   // first nonzero task status
};

SpinningPool& pool() {
  static SpinningPool p;
  return p;
}

}  // namespace

int spinning_do_par_for(void* user_context, halide_task_t f, int min, int size, uint8_t* closure) {
  SpinningPool& p = pool();  // constructed on first use
  if (!pool_alive.load(std::memory_order_relaxed)) return SpinningPool::run_serially(user_context, f, min, size, closure);
  return p.run(user_context, f, min, size, closure);
}

void set_spinning_pool_threads(int threads) { pool().set_threads(threads); }

void stop_spinning_pool() { pool().stop(); }

void set_spinning_pool_spin_us(int microseconds) { pool().set_spin_us(microseconds); }

}  // namespace ts
