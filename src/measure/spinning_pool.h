#pragma once
// The thread pool behind Halide's parallel loops in tensorsched's processes and artifacts.
//
// Halide 14's own pool puts a worker to sleep on a condition variable after ~40 yields without
// work, so in a model run (one parallel loop per step, a serial part between them) the workers
// sleep between steps and every step pays a wake-up through the kernel and, on a virtual machine,
// the hypervisor. ONNX Runtime's pool spins instead. This pool's workers spin (pause loop) for a
// while after their last task and only then sleep. Each thread owns a contiguous part of every
// loop and steals from another's only when its own is done, so the same rows of consecutive
// steps stay on the same core: with claims from one shared counter, rows landed on either core
// at random, and a step re-read from the other core's cache what the step before had written.
// Installed with halide_set_custom_do_par_for (install_spinning_pool), it replaces Halide's pool
// for every parallel loop; halide_do_parallel_tasks (async pipelines) keeps Halide's own.
//
// Self-contained (the standard library and HalideRuntime.h only): every artifact compiles it too.
#include <HalideRuntime.h>

namespace ts {

// halide_do_par_for_t: runs f(user_context, i, closure) for i in [min, min + size) on the pool's
// threads and the calling one; returns the first nonzero status of any task (later tasks skip).
// A call made from inside a task, or while another thread's loop holds the pool, runs serially.
int spinning_do_par_for(void* user_context, halide_task_t f, int min, int size, uint8_t* closure);

// The number of threads a parallel loop uses, the caller included (<= 0: the HL_NUM_THREADS
// environment variable, else the hardware's). Not while a loop runs.
void set_spinning_pool_threads(int threads);

// The thread count a loop uses when none is set: HL_NUM_THREADS when positive, else the hardware's.
int default_pool_threads();

// Joins the workers (they restart on the next parallel loop), so that the process can fork.
// Not while a loop runs.
void stop_spinning_pool();

// How long a worker spins after its last task before it sleeps, in microseconds (default 2000).
void set_spinning_pool_spin_us(int microseconds);

}  // namespace ts
