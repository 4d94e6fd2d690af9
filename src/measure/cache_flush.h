#pragma once
// Evicting a workload's weights from every cache level before a timed run. In a network a layer's
// weights come from memory (ResNet-18 holds 45 MB of them, more than an L3), its input from the
// previous layer's writes; a workload measured alone in a loop finds its weights in L2/L3 instead,
// and the tuner then prefers schedules that lean on that (TVM's runner flushes its non-first
// arguments for the same reason). See docs/design.md (src/measure/).
#include <cstddef>

namespace ts {

// Writes back and invalidates every cache line of [data, data + bytes) in the whole coherence
// domain (all cores' caches), with CLFLUSHOPT where the CPU has it, else CLFLUSH, then fences.
// The bytes are unchanged.
void evict_from_caches(const void* data, size_t bytes);

}  // namespace ts
