#pragma once
// Schedule: the decisions of tensorsched's schedule space as plain data that replays onto a
// Halide pipeline (like Ansor's transform steps). See docs/design.md (src/schedule/) and the
// value-learning paper, section 4 (per stage: split every loop into up to 3 levels, reorder,
// vectorize, place, parallelize).
//
// Model
//  - A stage is one definition of one Func: `func` plus `definition` (0 = the pure definition,
//    k = update k-1, as in PipelineView). Its name is "f" or "f.update(k-1)".
//  - Funcs are named without the "$N" suffixes Halide adds to a name reused in one process (a
//    workload lowered twice has "Conv_0_n0_acc$1", its staging copy "B$1_in_Conv_0_n0_acc$1"),
//    so a schedule replays on every lowering; a name several Funcs of one pipeline share cannot
//    be scheduled.
//  - A stage absent from the Schedule is undecided: a partial schedule is a first-class value.
//    apply() leaves undecided stages at Halide's default: a Func without a definition-0 entry
//    is inlined (a Func with update definitions is then computed at the innermost loop of each
//    use; an output at root), and a definition without an entry keeps its default loop nest.
//  - Placement and storage belong to the Func, i.e. to its definition-0 entry: inline, root, or
//    computed at a loop of a consumer definition's nest, stored there, at an outer loop of that
//    nest, or at root. Update entries keep the placement fields at their defaults.
//  - Original loops of a definition, innermost first (Halide's default nest): for definition 0
//    the Func's args; for an update its reduction variables (RVars, RDom order), then the pure
//    args its left-hand side uses.
//  - Tiling splits an original loop L into 2 or 3 levels named, innermost first, L_i, L_o or
//    L_i, L_m, L_o; `factors` are the inner levels' extents, the outermost level takes the
//    rest. 2 levels: split(L, L_o, L_i, f0, tail). 3 levels: split(L, L_o, L_mi, f0*f1, tail)
//    then the exact split(L_mi, L_m, L_i, f0): only the outermost split has a tail.
//  - Against the Func's estimates (set_estimate): a shift_inwards split (auto in a pure
//    definition) may not exceed the extent; a round_up split (auto in an update) must divide it,
//    unless the Func is computed at a consumer loop (it must divide the region there).
//  - `order` lists every loop after tiling, innermost first; empty keeps the default nest
//    (each tiled loop's levels where the loop was).
//  - The vectorized loop: a non-outermost tiling level of extent == width is vectorized whole;
//    any other loop is split by the width with a guarded tail (vectorize(L, width, GuardWithIf);
//    a tiling level's extent must be a multiple of the width). The loop named L is then the
//    serial outer part, the vector lanes are just inside it.
//  - The parallel loop and `parallel_fused`, the loops just outside it (innermost first), are
//    fused into one parallel loop named parallel_loop_name(): "p_a_b_f" for p fused with a, b.
//  - Reduction loops (RVars and their levels) can be tiled (tail auto or guard_with_if),
//    reordered (keeping their relative order, which Halide requires) and unrolled; never
//    vectorized or parallelized (Halide rejects both as races).
//  - Unrolled loops need a constant extent of at most 64: a non-outermost tiling level, a
//    reduction loop, or any pure loop of a compute_at Func (its per-iteration region, constant
//    when the consumer's tiles are: Halide rejects the unroll at compile time otherwise).
//  - A Func stored outside its compute loop (store_root / store_at) must not be computed inside
//    a parallel loop below the storage (a race) or an unrolled one (Halide's sliding window),
//    and no Func is computed inside a vectorized loop.
//
//  - Beyond those decisions (what the default rule's kernels need): `steps`, loop directives in
//    Halide's terms replayed after the structured fields; `prefetches`; `task_prefetches`; and
//    two that make Funcs, applied before every other decision: `rfactor` on an update (the
//    intermediate Func is then scheduled by its own entries) and `staged_for` (a staging copy
//    per consumer, Func::in). validate() checks a schedule that makes Funcs on a deep copy of
//    the pipeline, restructured.
//
// What validate() does not know: the extent a compute_at Func realizes per iteration of its
// consumer loop. Splits are checked against the Func's whole extent only, so a
// shift_inwards / round_up / auto split, or a guarded tile, wider than a compute_at Func's
// per-iteration region can make the pipeline compute past its inputs: Halide then reports an
// out-of-bounds input access when the pipeline runs (an error, not a crash). Halide 14 on
// AVX-512 has also been seen to fault in a guarded vector loop over a realization smaller than
// one vector. Measure candidates in an isolated worker.
#include <Halide.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedule/input_layout.h"
#include "schedule/schedule_fn.h"
#include "schedule/task_prefetch.h"

namespace ts {

// A Func's name without the "$N" suffix Halide appends to a name reused in one process: the
// name schedules use.
std::string func_base_name(const std::string& halide_name);

// Where a Func is computed.
enum class Placement { Inline, Root, ComputeAt };

// How a split treats an extent its factor does not divide (Halide's TailStrategy).
enum class Tail { Auto, GuardWithIf, ShiftInwards, RoundUp };

// One original loop split into 2 or 3 levels.
struct LoopTiling {
  std::string loop;              // the loop tiled: a Var or RVar of the definition
  std::vector<int64_t> factors;  // extents of the inner levels, innermost first: 1 (2 levels) or 2 values (3 levels)
  Tail tail = Tail::Auto;        // tail strategy of the outermost split (inner splits are exact)

  std::vector<std::string> level_names() const;  // innermost first: {L_i, L_o} or {L_i, L_m, L_o}
  std::string middle_name() const;               // 3 levels: L_mi, the loop split into L_m and L_i
  bool operator==(const LoopTiling&) const = default;
};

// A loop of a consumer definition's loop nest. Halide 14 binds compute_at(consumer, loop) to
// the consumer's stage that uses the Func; validate() requires that to be `definition`.
struct ConsumerLoop {
  std::string func;    // the consumer Func
  int definition = 0;  // its definition whose nest holds `loop` (0 = pure, k = update k-1)
  std::string loop;    // a loop of that nest as scheduled (after tiling and fusion)
  bool operator==(const ConsumerLoop&) const = default;
};

// One loop directive in Halide's own terms, replayed in order after a stage's structured loop
// fields (tiling, order, vectorize, unroll, parallel), like Ansor's transform steps: what the
// default rule's micro-kernels and the Winograd plans say that those fields cannot (splits of
// split or fused loops, their own loop names, several vectorized loops, fusion in any order, a
// parallel loop split into tasks). Loops are named as Halide names them: a split's outer and
// inner names, a fuse's fused name; the outer name of a split may reuse the old one.
enum class StepKind { Split, Fuse, Reorder, Vectorize, Unroll, Parallel };
struct LoopStep {
  StepKind kind = StepKind::Split;  // the Halide directive
  std::vector<std::string> loops;   // Split {old, outer, inner}; Fuse {inner, outer, fused}; Reorder: loops innermost first; else {loop}
  int64_t factor = 0;               // Split: the inner loop's extent; Vectorize / Unroll: split off this many lanes first (0 = the whole loop)
  Tail tail = Tail::Auto;           // Split, and Vectorize / Unroll with a factor
  bool operator==(const LoopStep&) const = default;
};

// How a prefetch treats a region past its buffer's bounds (Halide's PrefetchBoundStrategy).
enum class PrefetchBound { Clamp, GuardWithIf, NonFaulting };

// Halide's prefetch directive: at each iteration of loop `at`, prefetch what the iteration
// `offset` ahead of loop `from` reads of an input buffer.
struct PrefetchDirective {
  std::string buffer;   // the input buffer (an ImageParam's name)
  std::string at;       // the loop whose iterations issue the prefetch
  std::string from;     // the loop stepped ahead: `at` or a loop outside it
  int64_t offset = 1;   // iterations of `from` ahead
  PrefetchBound bound = PrefetchBound::GuardWithIf;  // what happens past the buffer's bounds
  bool operator==(const PrefetchDirective&) const = default;
};

// rfactor of an update: reduction loop `rvar` becomes pure loop `var` of a new Func named
// rfactor_func_name(func), which computes partial results; the update then reduces over them.
struct RFactorPair {
  std::string rvar;  // an RVar of the update
  std::string var;   // the pure Var it becomes in the intermediate Func
  bool operator==(const RFactorPair&) const = default;
};

// The Func rfactor makes of `func`'s update ("<func>_intm", as Halide 14 names it).
std::string rfactor_func_name(const std::string& func);
// The staging copy Func::in makes of `func` for consumer `consumer` ("<func>_in_<consumer>").
std::string staged_copy_name(const std::string& func, const std::string& consumer);

// The decisions for one stage (one definition of one Func).
struct StageSchedule {
  std::string func;                          // Func name
  int definition = 0;                        // 0 = pure definition, k = update k-1
  Placement placement = Placement::Inline;   // where the Func is computed (definition 0 only)
  ConsumerLoop compute_at;                   // the consumer loop it is computed in (placement ComputeAt only)
  bool store_root = false;                   // ComputeAt only: storage allocated at root
  std::string store_at;                      // ComputeAt only: storage at this loop of compute_at's nest, at or outside it ("" = at the compute loop)
  std::vector<std::string> storage_order;    // reorder_storage: the Func's args, innermost first (definition 0; empty = arg order)
  std::string memory;                        // store_in: "heap", "stack" or "register" (definition 0; "" = Halide's choice)
  std::vector<LoopTiling> tiling;            // splits, at most one per original loop
  std::vector<std::string> order;            // every loop after tiling, innermost first (empty = default nest)
  std::string vectorize;                     // the vectorized loop ("" = none)
  int vector_width = 0;                      // its lanes: a power of two in [2, 64]
  std::string parallel;                      // the loop run in parallel ("" = none)
  std::vector<std::string> parallel_fused;   // loops fused into `parallel`, each just outside the previous (innermost first)
  std::vector<std::string> unroll;           // loops fully unrolled
  std::vector<LoopStep> steps;               // loop directives in Halide's terms, after the fields above (see LoopStep)
  std::vector<PrefetchDirective> prefetches; // Halide prefetch directives, over the loops as scheduled
  std::vector<RFactorPair> rfactor;          // update only: the RVars factored out into rfactor_func_name(func), applied before any loop decision
  std::vector<std::string> staged_for;       // definition 0 only: consumers that read the Func through a staging copy (Func::in), named staged_copy_name(func, consumer)
  std::vector<TaskPrefetch> task_prefetches; // definition 0 only: the next parallel task's slice of a buffer prefetched (schedule/task_prefetch.h)

  std::string name() const;                  // "f" (definition 0) or "f.update(definition - 1)"
  std::string parallel_loop_name() const;    // the parallel loop after fusion ("" = none)
  bool decides_loops() const;                // any of tiling, order, vectorize, parallel, unroll, steps, prefetches, rfactor is set
  bool restructures() const;                 // rfactor or staged_for is set: the entry makes a Func
  // Extent of a non-outermost tiling level (its factor); 0 for any other loop.
  int64_t level_extent(const std::string& loop) const;
  bool operator==(const StageSchedule&) const = default;
};

// "The schedule Halide's autoscheduler `name` produces with `params`" (see
// schedule/autoscheduler.h for the names, the parameters and what each maps to). It replays:
// the autoschedulers are deterministic given the pipeline, the target, the machine parameters
// and their own parameters (the random-dropout seed included). Machine parameters a recipe does
// not set are this machine's (cores, cache size): set them to replay on other machines.
struct AutoschedulerRecipe {
  std::string name;                           // "Adams2019", "Li2018" or "Mullapudi2016"
  std::map<std::string, std::string> params;  // e.g. beam_size, random_dropout, random_dropout_seed, parallelism
  bool operator==(const AutoschedulerRecipe&) const = default;
};

// Which generator made a schedule, and with what parameters, so that it can make the same
// schedule for another workload: "rule" is the default rule (schedule/default_schedule.h), its
// params the knobs (DefaultKnobs::params(); none: the rule itself); an autoscheduler's name
// (Adams2019, Li2018, Mullapudi2016) with its recipe's parameters is the choice it made, read as
// stage schedules. Kept in the JSON, so a record tells the default of its workload and reuse
// across workload classes carries the rule's knobs, not its stages; not a decision, so hash()
// and == ignore it (the same decisions are the same code). Whatever changes a made schedule
// (mutation, refitting) drops it.
struct ScheduleOrigin {
  std::string generator;                      // "rule"
  std::map<std::string, std::string> params;  // the generator's parameters
  bool operator==(const ScheduleOrigin&) const = default;
};

// A (possibly partial) schedule of a pipeline: decided stages, or an autoscheduler recipe that
// decides every stage.
struct Schedule {
  static constexpr int kFormatVersion = 1;   // JSON format written by to_json()
  int format = kFormatVersion;               // format version
  std::vector<StageSchedule> stages;         // decided stages (set() keeps them sorted by func, definition)
  std::optional<AutoschedulerRecipe> autoscheduler;  // set: Halide's autoscheduler decides the whole pipeline (no stages)
  std::vector<InputLayout> layouts;          // blocked layouts of pipeline inputs, packed once at load (schedule/input_layout.h; sorted by input)
  bool bound_outputs = true;                 // stage schedules: apply() bounds the outputs to their estimates (false: as read from an autoscheduler's choice)
  std::optional<ScheduleOrigin> origin;      // the generator that made the stages (unset: a search, a person, a reader)

  const StageSchedule* find(const std::string& func, int definition = 0) const;  // null when undecided
  StageSchedule* find(const std::string& func, int definition = 0);
  StageSchedule& set(StageSchedule s);       // adds or replaces the entry of (s.func, s.definition)
  // Every named stage ("f" = definition 0, "f.update(k)" = definition k+1) has an entry, or
  // the schedule is an autoscheduler recipe.
  bool is_complete(const std::vector<std::string>& stage_names) const;
  // Stages sorted by (func, definition), tiling by loop, unroll by name: what JSON and hash see.
  Schedule canonical() const;
  bool operator==(const Schedule& o) const;  // equal canonical forms (the origin aside)

  // Canonical JSON (sorted keys, default fields omitted); indent < 0 is one line.
  std::string to_json(int indent = -1) const;
  // Parses to_json() output; throws Error naming the bad field and stage.
  static Schedule from_json(const std::string& text);
  // FNV-1a 64 of the one-line canonical JSON without the origin: 16 hex digits, the same on
  // every machine.
  std::string hash() const;
  // The Halide C++ schedule it stands for, one statement per decided stage. Identifiers are the
  // Func and loop names with characters other than letters, digits and '_' made '_'. A recipe
  // is one comment line naming the autoscheduler and its parameters.
  std::string to_halide_source() const;
  // Why the schedule cannot be applied to the unscheduled pipeline computing `outputs`, or
  // nullopt when it can. Layouts must name an input of the pipeline (lowered with or without
  // them) and, where the input carries estimates, divide the blocked extent. Reads Halide's IR only; calls no scheduling method. A recipe is checked
  // for its name, parameters, plugin file and the estimates the autoschedulers need.
  std::optional<std::string> validate(const std::vector<Halide::Func>& outputs) const;
};

// Validates, then issues the Halide scheduling calls on the pipeline's Funcs (found from the
// outputs): the Funcs rfactor and staging copies make first, then every stage's decisions; the
// outputs of stage schedules are bounded to their estimates (constant extents, so tiles live on
// the stack). Undecided stages keep Halide's default (see above). Throws Error with the reason
// when the schedule is invalid (nothing is scheduled then) or Halide rejects a call. A recipe
// runs its autoscheduler for `target`, which schedules the Funcs themselves; stage schedules do
// not consult `target` yet (vector widths are the schedule's own).
void apply(const Schedule& s, const std::vector<Halide::Func>& outputs, const Halide::Target& target);

// apply(s, ...) as a ScheduleFn for compile_workload (use s.hash() as its schedule hash).
ScheduleFn schedule_fn(const Schedule& s);

}  // namespace ts
