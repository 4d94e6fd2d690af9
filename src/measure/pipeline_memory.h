#pragma once
// The memory a workload's Halide pipeline allocates for itself (a padded copy of an input, a
// compute_root intermediate), kept from one run for the next.
//
// Why: Halide's generated code takes these buffers from halide_malloc at every call and frees
// them at its end. A block of a megabyte or more came back from glibc as fresh pages each time
// (mapped and unmapped, or the heap grown and trimmed), and every page faulted on first touch: in
// a network whose conv reads a padded 1.4 MB copy of its input, page faults were a third of the
// run. ONNX Runtime's arena reuses its memory across runs; these two functions do the same for
// Halide's allocations. Installed with halide_set_custom_malloc / halide_set_custom_free in every
// process that runs workloads and in every artifact.
//
// Self-contained (the standard library only): every artifact compiles it too.
#include <cstddef>

namespace ts {

// halide_malloc_t: `bytes` aligned to 128. A block of 64 KiB or more comes from the blocks freed
// before when one fits (no more than twice the size asked for), else is new.
void* reusing_halide_malloc(void* user_context, size_t bytes);

// halide_free_t: a block of 64 KiB or more is kept for a later reusing_halide_malloc while the
// kept blocks total under 1 GiB; smaller ones, and any beyond that, go back to the system.
void reusing_halide_free(void* user_context, void* ptr);

// The bytes kept for reuse now.
size_t kept_pipeline_memory_bytes();

// Returns every kept block to the system (the blocks in use stay valid).
void release_kept_pipeline_memory();

}  // namespace ts
