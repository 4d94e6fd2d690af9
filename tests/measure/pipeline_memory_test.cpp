// The allocator behind Halide pipelines' own buffers: aligned, and a freed block of 64 KiB or
// more handed out again for a request it fits.
#include "measure/pipeline_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace ts {
namespace {

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 128 == 0; }

TEST(PipelineMemory, AFreedBlockServesTheNextRequestItFits) {
  release_kept_pipeline_memory();
  void* a = reusing_halide_malloc(nullptr, 1 << 20);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(aligned(a));
  std::memset(a, 1, 1 << 20);  // the whole block is usable
  reusing_halide_free(nullptr, a);
  EXPECT_EQ(kept_pipeline_memory_bytes(), size_t{1} << 20);
  void* b = reusing_halide_malloc(nullptr, (1 << 20) - 1000);  // fits: the same block
  EXPECT_EQ(b, a);
  EXPECT_EQ(kept_pipeline_memory_bytes(), 0u);
  reusing_halide_free(nullptr, b);
  void* small = reusing_halide_malloc(nullptr, 300 << 10);  // under half the block: a new one
  EXPECT_NE(small, a);
  EXPECT_TRUE(aligned(small));
  void* big = reusing_halide_malloc(nullptr, 2 << 20);  // larger than the block: a new one
  EXPECT_NE(big, a);
  reusing_halide_free(nullptr, small);
  reusing_halide_free(nullptr, big);
  EXPECT_EQ(kept_pipeline_memory_bytes(), (size_t{1} << 20) + (300 << 10) + (2 << 20));
  release_kept_pipeline_memory();
  EXPECT_EQ(kept_pipeline_memory_bytes(), 0u);
}

TEST(PipelineMemory, SmallBlocksGoBackToTheSystem) {
  release_kept_pipeline_memory();
  void* p = reusing_halide_malloc(nullptr, 1000);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(aligned(p));
  reusing_halide_free(nullptr, p);
  reusing_halide_free(nullptr, nullptr);
  EXPECT_EQ(kept_pipeline_memory_bytes(), 0u);
}

}  // namespace
}  // namespace ts
