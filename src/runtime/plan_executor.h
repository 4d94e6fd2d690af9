#pragma once
// The execution plan of a compiled model and the executor that runs it: which buffers exist
// (model inputs, activations, constants), which compiled workload function each step calls on
// which buffers, and which runtime tensors a step packs first. CompiledModel builds a plan and
// runs it in this process; an artifact (runtime/artifact.h) carries the same plan as text and
// runs it with this same executor, so what `run` measures is what a user ships.
//
// Self-contained on purpose: standard headers, HalideRuntime.h and graph/block_copy.h only. Its
// source is compiled into every artifact, which needs no libHalide, LLVM or tensorsched library.
// Errors are std::runtime_error whose text names the plan line, step or buffer.
#include <HalideRuntime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/huge_pages.h"

namespace ts::plan {

enum class Role : uint8_t {
  Activation = 0,  // written by a step; allocated by the executor
  Constant = 1,    // weights (packed as the code expects); bytes given to the executor
  Input = 2,       // a model input; points at the caller's data during run()
};

struct Buffer {
  std::string name;             // model tensor ("<tensor>#<packing>" for a packed copy)
  Role role = Role::Activation;  // who provides its bytes
  uint8_t type_code = 2;        // halide_type_code_t (2 = float)
  uint8_t bits = 32;            // element bits
  std::vector<int64_t> shape;   // storage shape, outermost first (ONNX order)
  uint64_t offset = 0;          // Constant: byte offset in the artifact's constant blob
  int view_of = -1;             // Activation: >= 0 when its bytes lie inside buffer view_of's
  uint64_t view_offset = 0;     // ...starting at this byte offset (a concat's input, written in place)

  int64_t elements() const;
  uint64_t bytes() const { return static_cast<uint64_t>(elements()) * ((bits + 7) / 8); }
};

// Before a step: copy buffer `from` (plain) into buffer `to` with one axis blocked.
struct Pack {
  int from = 0;        // plain source buffer
  int to = 0;          // blocked destination buffer
  int axis = 0;        // blocked axis of `from`, ONNX order
  int64_t block = 0;   // its block
};

struct Step {
  int function = 0;         // index into Plan::functions; kElided: nothing to run (see below)
  std::string label;        // for errors and profiles: workload key and name
  std::vector<int> args;    // buffers passed to the function: inputs, then outputs
  std::vector<Pack> packs;  // run before the call
};

// Alignment of every activation and of every view inside one (a cache line, one AVX-512 vector).
constexpr uint64_t kActivationAlign = 64;

// An elided step's output was already written in place by the steps before it (a concat whose
// inputs are views of its output); it stays in the plan so step i is still partition step i.
constexpr int kElided = -1;

struct Plan {
  std::vector<std::string> functions;  // argv entry points' symbol names ("<name>_argv")
  std::vector<Buffer> buffers;
  std::vector<Step> steps;             // in execution order
  std::vector<int> inputs;             // model inputs, in model order (role Input)
  std::vector<int> outputs;            // model outputs, in model order (any role)
  uint64_t constant_bytes = 0;         // size of the constant blob (offsets point into it)
};

// Line-based text; names and labels are percent-escaped, so any tensor name round-trips.
std::string serialize(const Plan& plan);
// Throws std::runtime_error "model plan, line N: why" on malformed text or indices out of range.
Plan parse(const std::string& text);
// Checks indices, roles and sizes; throws std::runtime_error naming the step or buffer.
void validate(const Plan& plan);

// Byte offsets of the activations (roots, not views) in one arena of `arena_bytes`: buffers whose
// live ranges (first to last step using them or a view of them; outputs to the end) do not
// overlap share bytes, so a step writes memory an earlier step just used, still in cache,
// rather than fresh memory a whole network's worth of activations away (which the CPU reads
// from DRAM before writing). Greedy: largest first, each at the lowest offset that fits.
// `plan` must be valid (validate()).
std::vector<uint64_t> plan_arena(const Plan& plan, uint64_t& arena_bytes);

using EntryFn = int (*)(void** args);

class Executor {
 public:
  // `functions[i]` implements plan.functions[i]; `constants[b]` holds the bytes of buffer b when
  // its role is Constant (read only, must outlive the executor; ignored otherwise). Allocates
  // one arena for the activations (plan_arena), on 2 MiB huge pages unless `huge_pages` is false
  // (runtime/huge_pages.h). Throws std::runtime_error (validate()).
  Executor(Plan plan, std::vector<EntryFn> functions, std::vector<const void*> constants, bool huge_pages = true);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // One inference: `inputs[i]` holds plan.inputs[i] dense in its storage shape (read only),
  // `outputs[i]` receives plan.outputs[i]. Per-step seconds go to step_seconds() when `time_steps`.
  // Throws std::runtime_error naming the step when a function returns non-zero.
  void run(const void* const* inputs, void* const* outputs, bool time_steps = false);

  const Plan& plan() const { return plan_; }
  const std::vector<double>& step_seconds() const { return step_seconds_; }
  uint64_t arena_bytes() const { return arena_bytes_; }  // the activations' memory (plan_arena)

 private:
  Plan plan_;
  std::vector<EntryFn> functions_;
  uint64_t arena_bytes_ = 0;
  HugePageBytes arena_;                                // every activation (plan_arena)
  std::vector<halide_buffer_t> halide_buffers_;        // one per plan buffer
  std::vector<std::vector<halide_dimension_t>> dims_;  // their dims, innermost first
  std::vector<std::vector<void*>> argv_;               // per step: halide_buffer_t* of its args
  std::vector<double> step_seconds_;
};

}  // namespace ts::plan
