// Memory for the large, long-lived buffers of a compiled model (its constants, its activation
// arena) on 2 MiB transparent huge pages where the kernel allows them.
//
// Why: a network's steps each read megabytes of weights once, cold. On 4 KiB pages each step
// first walks the page tables for hundreds of pages (the second-level TLB covers a few MiB), and
// the hardware prefetchers stop at every 4 KiB boundary; on 2 MiB pages neither happens. Linux
// backs an madvise(MADV_HUGEPAGE) region with huge pages at first touch when transparent huge
// pages are "always" or "madvise" (Debian's default); elsewhere this is plain anonymous memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ts {

struct HugePageRelease {
  size_t bytes = 0;  // the mapping's length
  void operator()(uint8_t* p) const;
};
using HugePageBytes = std::unique_ptr<uint8_t[], HugePageRelease>;

// `bytes` zero-filled bytes, 2 MiB aligned, advised for huge pages unless `huge_pages` is false
// (then plain 4 KiB pages, for comparison); null for 0 bytes. Throws std::bad_alloc when the
// mapping fails.
HugePageBytes allocate_page_aligned_bytes(size_t bytes, bool huge_pages = true);

// Whether the kernel backed [p, p + bytes) with huge pages (from /proc/self/smaps; false where it
// cannot tell).
bool backed_by_huge_pages(const void* p, size_t bytes);

}  // namespace ts
