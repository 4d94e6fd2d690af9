#include "measure/cache_flush.h"

#include <cpuid.h>
#include <immintrin.h>

#include <cstdint>

namespace ts {

namespace {

constexpr uintptr_t kCacheLine = 64;

bool has_clflushopt() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23));
}

// CLFLUSHOPT flushes lines in parallel (CLFLUSH serializes them): far faster on megabytes.
__attribute__((target("clflushopt"))) void flush_lines_opt(uintptr_t first, uintptr_t end) {
  for (uintptr_t p = first; p < end; p += kCacheLine) _mm_clflushopt(reinterpret_cast<void*>(p));
}

void flush_lines(uintptr_t first, uintptr_t end) {
  for (uintptr_t p = first; p < end; p += kCacheLine) _mm_clflush(reinterpret_cast<const void*>(p));
}

}  // namespace

void evict_from_caches(const void* data, size_t bytes) {
  if (!data || bytes == 0) return;
  static const bool opt = has_clflushopt();
  const uintptr_t first = reinterpret_cast<uintptr_t>(data) & ~(kCacheLine - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
  if (opt) flush_lines_opt(first, end);
  else flush_lines(first, end);
  _mm_mfence();
}

}  // namespace ts
