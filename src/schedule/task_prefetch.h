#pragma once
// Prefetching the next parallel task's weights into L2 while this task computes.
//
// A blocked conv whose weights come from memory (ResNet-50's layer4: 9.4 MB per 3x3 conv; a
// network's 100 MB of weights evict each other) reads each task's slice of them (two output
// blocks: 590 KB) in the task's first row, at the ~10 GB/s one core pulls from memory, while the
// FMAs wait: 2.0 ms against 1.5 with the weights cached. Prefetches of the next task's slice,
// a few cache lines at a time spread over this task's reduction loops, overlap the two (1.97 ->
// 1.57 ms). Halide 14 cannot say it: its prefetch directive emits prefetchnta (measured 10x
// slower on an Intel Xeon) for a whole region at one loop level. So the schedule records a
// TaskPrefetch on the tiled Func, and the compile half (measure/workload_compiler.cpp) adds a
// custom lowering pass per request that inserts the prefetches (llvm.prefetch, inlined; the
// request's locality) into the lowered loops.
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
// Measured on the Zen 5 VM, in the network (`run --profile`, knob prefetch=2 against 1, 4-6
// rounds alternated): ResNet-50's 1x1 convs at 7 x 7 with 4-8 MB of weights 1.13-1.17x at 1
// thread and 1.05-1.14x at 2 (the network 1.03x / 0.98x), but its 14 x 14 ones 0.85-1.03x at 2
// threads, the same 8 MB conv inside ResNeXt-50 0.97x at 1 thread, EfficientNet-B4's,
// R(2+1)D-18's, ViT-B/16's and the Transformer's 0.85-1.02x. So it is a point of the space (the
// knob), not the rule's choice: whether it pays depends on the network around the workload,
// which a full-model evaluation sees and a workload measured alone does not.
inline constexpr int64_t kPageBytes = 4096;
inline constexpr int kWalkAheadTasks = 2;  // walk_ahead_tasks of the knob's requests (4 ran the same)

// Chunks of at most this many bytes (8 cache lines): a burst of prefetches holds the line-fill
// buffers, and loads behind them wait. On ResNet-50's 7x7 512-channel conv (1 thread, weights
// cold): chunks of 3 lines per input channel 1.57 ms, 42 lines per input block 2.10 ms
// (no prefetch 1.97).
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
