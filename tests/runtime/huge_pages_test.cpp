// Constants and activations on 2 MiB transparent huge pages (runtime/huge_pages.h): aligned,
// zero-filled, writable memory that the kernel backs with huge pages where it allows them.
#include "runtime/huge_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

namespace ts {
namespace {

std::string selected_mode(const std::string& file) {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/" + file);
  std::string modes;
  std::getline(in, modes);
  const size_t open = modes.find('['), close = modes.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : modes.substr(open + 1, close - open - 1);
}

// Whether transparent huge pages serve madvise'd memory at its first touch here: enabled
// "always" or "madvise", and the fault may compact memory for it (defrag "always", "madvise" or
// "defer+madvise"; otherwise a fragmented host falls back to 4 KiB pages).
bool thp_for_madvise() {
  const std::string enabled = selected_mode("enabled"), defrag = selected_mode("defrag");
  return (enabled == "always" || enabled == "madvise") &&
         (defrag == "always" || defrag == "madvise" || defrag == "defer+madvise");
}

TEST(HugePages, AllocationsAreAlignedZeroedAndWritable) {
  const size_t bytes = (size_t{5} << 20) + 123;  // not a multiple of the page
  HugePageBytes a = allocate_page_aligned_bytes(bytes);
  ASSERT_NE(a.get(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % (size_t{2} << 20), 0u);
  for (size_t i = 0; i < bytes; i += 4096) ASSERT_EQ(a[i], 0) << "at " << i;
  EXPECT_EQ(a[bytes - 1], 0);
  std::memset(a.get(), 0x5a, bytes);
  EXPECT_EQ(a[bytes - 1], 0x5a);
  EXPECT_EQ(allocate_page_aligned_bytes(0).get(), nullptr);
}

TEST(HugePages, TheKernelBacksAdvisedMemoryWithHugePages) {
  const size_t bytes = size_t{8} << 20;
  HugePageBytes huge = allocate_page_aligned_bytes(bytes, true);
  HugePageBytes small = allocate_page_aligned_bytes(bytes, false);
  std::memset(huge.get(), 1, bytes);  // the pages are faulted in at first touch
  std::memset(small.get(), 1, bytes);
  EXPECT_FALSE(backed_by_huge_pages(small.get(), bytes));
  if (!thp_for_madvise()) GTEST_SKIP() << "transparent huge pages are off on this kernel, or not compacted for";
  EXPECT_TRUE(backed_by_huge_pages(huge.get(), bytes)) << "no AnonHugePages in /proc/self/smaps";
}

}  // namespace
}  // namespace ts
