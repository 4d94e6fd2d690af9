#include "measure/pipeline_memory.h"

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace ts {

namespace {

constexpr size_t kAlign = 128;              // Halide's buffers want 64; a cache line pair is safe
constexpr size_t kKeepFrom = 64 * 1024;     // smaller blocks: glibc's heap reuses them already
constexpr size_t kKeepAtMost = size_t{1} << 30;
constexpr size_t kPage = 4096;

// Stored just below the pointer handed out.
struct Header {
  void* raw;        // what std::malloc returned
  size_t capacity;  // usable bytes from the handed-out pointer
};

struct Kept {
  std::mutex mutex;
  std::vector<Header*> blocks;  // freed blocks of kKeepFrom bytes or more
  size_t bytes = 0;             // their capacities' sum
};

Kept& kept() {
  static Kept* k = new Kept;  // never destroyed: a pipeline may free during static destruction
  return *k;
}

Header* header_of(void* p) { return reinterpret_cast<Header*>(static_cast<uint8_t*>(p) - sizeof(Header)); }
void* memory_of(Header* h) { return reinterpret_cast<uint8_t*>(h) + sizeof(Header); }

void* allocate_new(size_t capacity) {
  void* raw = std::malloc(capacity + 2 * kAlign);
  if (!raw) return nullptr;
  const auto at = (reinterpret_cast<uintptr_t>(raw) + kAlign + kAlign - 1) & ~(uintptr_t{kAlign} - 1);
  auto* h = reinterpret_cast<Header*>(at - sizeof(Header));
  h->raw = raw;
  h->capacity = capacity;
  return memory_of(h);
}

}  // namespace

void* reusing_halide_malloc(void* /*user_context*/, size_t bytes) {
  if (bytes < kKeepFrom) return allocate_new(bytes);
  {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    size_t best = k.blocks.size();
    for (size_t i = 0; i < k.blocks.size(); i++) {
      const size_t c = k.blocks[i]->capacity;
      if (c >= bytes && c / 2 <= bytes && (best == k.blocks.size() || c < k.blocks[best]->capacity)) best = i;
    }
    if (best < k.blocks.size()) {
      Header* h = k.blocks[best];
      k.blocks[best] = k.blocks.back();
      k.blocks.pop_back();
      k.bytes -= h->capacity;
      return memory_of(h);
    }
  }
  return allocate_new((bytes + kPage - 1) / kPage * kPage);
}

void reusing_halide_free(void* /*user_context*/, void* ptr) {
  if (!ptr) return;
  Header* h = header_of(ptr);
  if (h->capacity >= kKeepFrom) {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    if (k.bytes + h->capacity <= kKeepAtMost) {
      k.blocks.push_back(h);
      k.bytes += h->capacity;
      return;
    }
  }
  std::free(h->raw);
}

size_t kept_pipeline_memory_bytes() {
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  return k.bytes;
}

void release_kept_pipeline_memory() {
  std::vector<Header*> blocks;
  {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    blocks.swap(k.blocks);
    k.bytes = 0;
  }
  for (Header* h : blocks) std::free(h->raw);
}

}  // namespace ts
