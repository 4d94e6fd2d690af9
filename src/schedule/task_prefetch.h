#pragma once
// Prefetching the next parallel task's weights into L2 while this task computes.
//
// A blocked conv whose weights come from memory (ResNet-50's layer4: 9.4 MB per 3x3 conv; a
// network's weights evict each other) reads each task's slice of them (two output blocks:
// 590 KB) in the task's first row, at the rate one core pulls from memory, while the FMAs wait.
// Prefetches of the next task's slice, a few cache lines at a time spread over this task's
// reduction loops, overlap the two. Halide 14 cannot say it: its prefetch directive emits
// prefetchnta (far slower for this) for a whole region at one loop level. So the schedule
// records a TaskPrefetch on the tiled Func, and the compile half (measure/workload_compiler.cpp)
// adds a custom lowering pass per request that inserts the prefetches (llvm.prefetch, inlined;
// the request's locality) into the lowered loops.
//
// Halide 14 keeps custom lowering passes per Pipeline (a Func's own are lost when another Pipeline
// is made of it), and the schedule sees only Funcs: the request rides on the Func as a trace tag,
// text that no code reads unless tracing is on (tensorsched never turns it on).
#include <Halide.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ts {

// One request: inside every iteration t of the parallel loop, prefetch bytes
// [(t + 1) * task_bytes, (t + 2) * task_bytes) of `buffer` (up to buffer_bytes), a chunk at the
// start of each iteration of the first loop of `spread_stage` whose chunk (the slice over the
// iterations of the loops from the parallel one down to it, rounded up to whole cache lines) is
// at most kMaxPrefetchChunkBytes; a chunk that starts past that range is skipped.
struct TaskPrefetch {
  std::string task_loop;     // the parallel loop's variable name (the lowered loop ends in ".<name>")
  std::string task_func;     // the Func whose pure stage the parallel loop belongs to
  std::string spread_stage;  // the stage whose loops carry the chunks ("<func>.s1")
  std::string buffer;        // the input buffer (an ImageParam's name)
  int64_t task_bytes = 0;    // bytes of the buffer one task reads, contiguous, task t's at t * task_bytes
  int64_t buffer_bytes = 0;  // bytes of the whole buffer
  int locality = 2;          // llvm.prefetch locality: 3 prefetcht0 (into L1), 2 prefetcht1 (L2); the rule's: weight_prefetch_locality()
  int walk_ahead_tasks = 0;  // > 0: also one prefetch per 4 KiB page of the slice this many tasks past the next (task t + 1 + this many), walking its page tables early (see below)

  std::string to_tag() const;
  // The request a tag written by to_tag() holds, nullopt for any other text.
  static std::optional<TaskPrefetch> from_tag(const std::string& tag);
  bool operator==(const TaskPrefetch&) const = default;
};

// Page walks ahead (walk_ahead_tasks): in a network the weights' page-table entries are as cold
// as the weights (100 MB of weights evict them from every cache), and in a virtual machine whose
// host maps its memory in 4 KiB pages every page of a slice costs a two-level walk from memory,
// huge pages in the guest or not. A line prefetch of the next task's slice that starts a page
// waits on that walk, and the lines behind it wait too. One more prefetch per page, for the slice
// three tasks ahead (two past the next), walks each page before the line prefetches reach it.
// It pays on some workloads and costs on others of the same shape, so it is a point of the space
// (the knob), not the rule's choice: whether it pays depends on the network around the workload,
// which a full-model evaluation sees and a workload measured alone does not
// (measured: docs/benchmarks.md, "The default rule").
inline constexpr int64_t kPageBytes = 4096;
inline constexpr int kWalkAheadTasks = 2;  // walk_ahead_tasks of the knob's requests (4 ran the same)

// Chunks of at most this many bytes (8 cache lines): a burst of prefetches holds the line-fill
// buffers, and loads behind them wait (measured: docs/benchmarks.md, "The default rule").
inline constexpr int64_t kMaxPrefetchChunkBytes = 512;

// Records `req` on f (see above).
void request_task_prefetch(Halide::Func f, const TaskPrefetch& req);

// Every request recorded on the Funcs `outputs` reach.
std::vector<TaskPrefetch> task_prefetch_requests(const std::vector<Halide::Func>& outputs);

// Adds one custom lowering pass per request to p (the pipeline of `outputs`); returns how many.
int add_task_prefetch_passes(Halide::Pipeline& p, const std::vector<Halide::Func>& outputs);

// The pass on one lowered statement: s with the prefetches inserted; `sites` (when given) gets
// the number of loops that received them (0: the loops or the buffer named were not found, s is
// returned as it was).
Halide::Internal::Stmt insert_task_prefetch(const Halide::Internal::Stmt& s, const TaskPrefetch& req,
                                            int* sites = nullptr);

}  // namespace ts
