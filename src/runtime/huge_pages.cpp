#include "runtime/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <fstream>
#include <new>
#include <sstream>
#include <string>

namespace ts {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
size_t round_up(size_t n) { return (n + kHugePage - 1) / kHugePage * kHugePage; }
}  // namespace

void HugePageRelease::operator()(uint8_t* p) const {
  if (p) munmap(p, bytes);
}

HugePageBytes allocate_page_aligned_bytes(size_t bytes, bool huge_pages) {
  if (bytes == 0) return HugePageBytes(nullptr, HugePageRelease{0});
  const size_t length = round_up(bytes);
  // Map one huge page more than needed and trim both ends to a 2 MiB boundary.
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t end = start + length + kHugePage;
  if (end > aligned + length) munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
  uint8_t* p = reinterpret_cast<uint8_t*>(aligned);
  if (huge_pages) madvise(p, length, MADV_HUGEPAGE);  // advice only: without THP the pages stay 4 KiB
  else madvise(p, length, MADV_NOHUGEPAGE);          // even where THP is "always"
  return HugePageBytes(p, HugePageRelease{length});
}

bool backed_by_huge_pages(const void* p, size_t bytes) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      std::istringstream v(line.substr(14));
      size_t kb = 0;
      v >> kb;
      return kb * 1024 >= std::min(bytes, kHugePage);
    }
  }
  return false;
}

}  // namespace ts
