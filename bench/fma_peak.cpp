// Peak single-precision FMA throughput of this CPU, the roofline ceiling the benchmarks quote.
//
//   c++ -O3 -march=native -pthread bench/fma_peak.cpp -o build/fma_peak && build/fma_peak
//
// Each thread runs 12 independent vector accumulators through a loop of FMAs: 12 chains cover
// the FMA latency (4 cycles) times the FMA pipes (2), so the loop is throughput bound. Expect
// 32 FP32 flops per cycle per core on Zen 4 (its 512-bit FMAs run over 256-bit pipes, so AVX2
// gives the same), 64 on Zen 5 server parts and Intel server cores with two 512-bit FMA units.
//
// Prints {"gflops_1t":..., "gflops_all":..., "threads":N, ...}, each the best of several
// repetitions (GFLOP = 1e9 multiply-adds x 2). Rates are per second of each thread's own CPU time,
// summed over threads, so that other processes sharing the cores (a build) do not lower the peak;
// the wall_* fields divide by wall time instead and show how much those processes took.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__AVX512F__)
using vec = __m512;
static constexpr int kLanes = 16;
static inline vec vset(float x) { return _mm512_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline float vsum(vec a) {
  alignas(64) float t[16];
  _mm512_store_ps(t, a);
  float s = 0;
  for (float x : t) s += x;
  return s;
}
#elif defined(__AVX2__) && defined(__FMA__)
using vec = __m256;
static constexpr int kLanes = 8;
static inline vec vset(float x) { return _mm256_set1_ps(x); }
static inline vec vfma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline float vsum(vec a) {
  alignas(32) float t[8];
  _mm256_store_ps(t, a);
  float s = 0;
  for (float x : t) s += x;
  return s;
}
#else
#error "fma_peak needs AVX-512F or AVX2+FMA: compile with -march=native on x86-64"
#endif

static constexpr int kChains = 12;
static volatile float g_sink;  // keeps the result, and so the loop, alive

// iters x kChains FMAs on independent accumulators; returns their sum.
static float kernel(long iters) {
  vec acc[kChains];
  for (int i = 0; i < kChains; i++) acc[i] = vset(0.001f * i);
  // a close to 1, b small: the values stay finite however long the loop runs.
  const vec a = vset(0.999999f), b = vset(1e-7f);
  for (long n = 0; n < iters; n++) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; i++) acc[i] = vfma(acc[i], a, b);
  }
  float s = 0;
  for (int i = 0; i < kChains; i++) s += vsum(acc[i]);
  return s;
}

static double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Rate {
  double cpu = 0, wall = 0;  // GFLOP/s per CPU second (summed over threads), per wall second
};

// Best rates over `reps` runs of `threads` threads, each doing `iters` loop iterations.
static Rate measure(int threads, long iters, int reps) {
  const double gflop = 2.0 * kLanes * kChains * double(iters) / 1e9;  // per thread
  Rate best;
  for (int r = 0; r < reps; r++) {
    std::vector<double> cpu(threads);
    std::vector<float> out(threads);
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++) {
      pool.emplace_back([&, t] {
        double c0 = thread_cpu_seconds();
        out[t] = kernel(iters);
        cpu[t] = thread_cpu_seconds() - c0;
      });
    }
    for (auto& th : pool) th.join();
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double sum = 0;
    for (int t = 0; t < threads; t++) {
      g_sink = g_sink + out[t];
      sum += gflop / cpu[t];
    }
    best.cpu = std::max(best.cpu, sum);
    best.wall = std::max(best.wall, gflop * threads / wall);
  }
  return best;
}

int main(int argc, char** argv) {
  // ~50 ms per repetition at 4 GHz with 2 FMA pipes (6 cycles per iteration).
  long iters = argc > 1 ? std::atol(argv[1]) : 30'000'000;
  int n = std::max(1u, std::thread::hardware_concurrency());
  measure(1, iters / 10, 1);  // warm-up: clocks ramp, AVX-512 license settles
  Rate one = measure(1, iters, 5);
  Rate all = measure(n, iters, 5);
  std::printf("{\"gflops_1t\": %.1f, \"gflops_all\": %.1f, \"threads\": %d, \"wall_gflops_1t\": %.1f, "
              "\"wall_gflops_all\": %.1f, \"lanes\": %d, \"chains\": %d}\n",
              one.cpu, all.cpu, n, one.wall, all.wall, kLanes, kChains);
  return 0;
}
