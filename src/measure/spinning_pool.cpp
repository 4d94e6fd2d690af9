#include "measure/spinning_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TS_CPU_RELAX() _mm_pause()
#else
#define TS_CPU_RELAX() std::this_thread::yield()
#endif

namespace ts {

namespace {

// The claim counter holds the loop's size in its high 32 bits and the next index in its low 32,
// so a claim reads the size of the loop it claimed from in the same atomic operation: a worker
// late from one loop cannot take the next loop's indices by comparing with its size. 0 between
// loops (size 0: every claim is refused), so the next loop's fields are written while no one can
// claim. The low half stays below size + threads x chunk, far from overflowing into the size.
constexpr uint64_t claim_word(int size) { return static_cast<uint64_t>(size) << 32; }
constexpr int64_t claim_index(uint64_t word) { return static_cast<int64_t>(word & 0xffffffffu); }
constexpr int64_t claim_size(uint64_t word) { return static_cast<int64_t>(word >> 32); }

// Each thread claims about this many runs of a loop's indices: enough for load balance.
constexpr int kChunksPerThread = 8;

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
    // Publish: the fields first, then open the counter (release), then the generation workers watch.
    fn_.store(f, std::memory_order_relaxed);
    user_context_.store(uc, std::memory_order_relaxed);
    closure_.store(closure, std::memory_order_relaxed);
    min_.store(min, std::memory_order_relaxed);
    chunk_.store(std::max(1, size / (kChunksPerThread * threads_.load(std::memory_order_relaxed))),
                 std::memory_order_relaxed);
    status_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    next_.store(claim_word(size), std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    work();
    while (done_.load(std::memory_order_acquire) < size) TS_CPU_RELAX();
    next_.store(0, std::memory_order_relaxed);  // every index was claimed and finished
    return status_.load(std::memory_order_relaxed);
  }

  void set_threads(int threads) {
    std::lock_guard<std::mutex> owner(loop_mutex_);
    join_workers();
    threads_.store(threads > 0 ? threads : default_threads());
  }

  void set_spin_us(int us) { spin_us_.store(us > 0 ? us : 0); }

  void stop() {
    std::lock_guard<std::mutex> owner(loop_mutex_);
    join_workers();
  }

 private:
  static int default_threads() {
    if (const char* env = std::getenv("HL_NUM_THREADS")) {
      int n = std::atoi(env);
      if (n > 0) return n;
    }
    unsigned hw = std::thread::hardware_concurrency();
    return hw > 0 ? static_cast<int>(hw) : 1;
  }

  // Claims runs of indices until none is left; each finished index (run or skipped after a
  // failure) counts. A claim is an atomic on a cache line both cores write, ~100 ns when the
  // other core wrote it last: runs of chunk_ indices keep that off loops of tiny tasks
  // (ShuffleNet's 116-channel depthwise convs took 3x longer claiming one index at a time).
  void work() {
    inside_task = true;
    for (;;) {
      const int64_t chunk = chunk_.load(std::memory_order_relaxed);  // stale is harmless: claims stay disjoint
      const uint64_t word = next_.fetch_add(static_cast<uint64_t>(chunk), std::memory_order_acq_rel);
      const int64_t first = claim_index(word), size = claim_size(word);
      if (first >= size) break;
      const int64_t end = std::min(first + chunk, size);
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
      done_.fetch_add(static_cast<int>(end - first), std::memory_order_release);
    }
    inside_task = false;
  }

  // `seen`: the generation before the loop that started this worker, so that a worker whose
  // thread starts late still joins that loop.
  void worker_loop(uint64_t seen) {
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
      work();
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
      for (int i = 0; i < wanted; i++) workers_.emplace_back([this, seen] { worker_loop(seen); });
    } catch (const std::system_error&) {
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
    stopping_.store(false);
  }

  std::mutex loop_mutex_;                    // held by the thread whose loop the pool runs
  std::vector<std::thread> workers_;         // threads_ - 1 of them while started
  std::atomic<int> threads_{default_threads()};  // threads of a loop, the caller's included
  std::atomic<int> spin_us_{2000};           // spin this long after the last task, then sleep
  std::atomic<bool> stopping_{false};        // workers return when set
  std::atomic<uint64_t> generation_{0};      // bumped once per loop; workers watch it
  std::atomic<int> sleeping_{0};             // workers waiting on wake_
  std::mutex sleep_mutex_;                   // guards the sleep/wake handshake
  std::condition_variable wake_;             // a new loop, or stopping
  // The current loop: written only while next_ is closed, read by whoever claims an index.
  std::atomic<halide_task_t> fn_{nullptr};   // the loop body
  std::atomic<void*> user_context_{nullptr}; // passed through to fn_
  std::atomic<uint8_t*> closure_{nullptr};   // passed through to fn_
  std::atomic<int> min_{0};                  // first index
  std::atomic<int> chunk_{1};                // indices per claim
  std::atomic<uint64_t> next_{0};            // claim_word: the loop's size and next index
  std::atomic<int> done_{0};                 // indices finished
  std::atomic<int> status_{0};               // first nonzero task status
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
