#pragma once
// ScheduleSpace: the candidate decisions for each stage of a pipeline, as in section 4 of the
// value-learning paper (C0 split every loop into up to 3 levels, C1 reorder, C2 vectorize,
// C3 compute/store granularity, C4 parallelize), plus unrolling. Stages are decided one Func
// at a time in reverse realization order (consumers first): a Func's placement candidates are
// the loops its consumer's nest has once the consumer is decided.
//
// Reading guide
//  - A decision fixes every definition of one Func (the pure one and its updates): placement
//    (inline / root / compute_at a loop of its single consumer, storage at the compute level),
//    and per definition its tiling, loop order, vectorized loop, parallel loop and unroll.
//  - Candidates are counted: per definition the choices factor into per-loop
//    options (tiling factors, whether the loop's outermost level joins the parallel group,
//    which of its levels is unrolled) and the interleavings of the loops' levels, counted by a
//    small dynamic program over (levels in the free part of the order, parallel group size,
//    unrolled loops). branching() is the exact number of candidates of a decision; sample_*()
//    draws one of them uniformly from the same tables.
//  - Candidate listing (candidates()): a decision's exact count is often 10^5 or more (tilings
//    times interleavings), too many to score one by one, so a listing keeps every placement and,
//    per placement, a few members of every structural class (the classes Stratified sampling
//    draws evenly: vector loop and width, parallel group size, unrolled or not), plus the
//    sketch's decision, the default rule's decision and the decisions of given schedules (the
//    rule's variants, say) where they fit.
//  - Sketches: beside the per-decision candidates, the space holds two sketches whose points
//    are complete schedules drawn from a few parameters: the loop-nest sketch (schedule/sketch.h,
//    Sampling::Sketch) and the default rule's micro-kernel sketch (schedule/rule_sketch.h,
//    sample_rule(); built when the space is built from the pipeline's Funcs), whose parameters
//    are the rule's knobs. A search mutates a sketch point by its parameters, so it stays one.
//  - Pruning, so that every candidate applies, compiles and computes the right values:
//     * split factors (a few divisors, powers of two and non-divisors) multiply to at most the
//       extent of a root Func's loop in the region its consumers need (needed_extents in
//       schedule/loop_nest.h: a sliced transpose computes only the rows read), and to at most
//       half the loop's extent in the region a compute_at Func computes per iteration of its
//       compute loop, so a shift-inwards split never reaches outside the producer's inputs;
//       loops of update definitions (and reduction loops) only take divisors of the region (at
//       root: also of the Func's extent), since their auto tail rounds up;
//     * the levels of one loop keep their nesting (outer level outside inner), reduction loops
//       keep their relative order (Halide requires it);
//     * the vectorized loop is innermost: a pure loop's innermost level whose extent is a
//       multiple of the width, or an untiled pure loop at least one vector long (a guarded
//       tail: only along a pure definition's innermost storage dim, see DefSpace::options); widths are
//       the native vector, half and a quarter of it;
//     * compute_at only inside a Func's single consumer, read from one definition through
//       affine accesses, at a loop that is not the vector lanes nor a guarded vector loop
//       (whose last iteration realizes less than a vector); storage at the compute level; an
//       inlined consumer with a single consumer is looked through (a conv's accumulator is
//       computed at a loop of the output its bias and ReLU are inlined into); and, when the
//       consumer is itself computed at a loop, beside it: at that loop or one outside it, in
//       its Func or further out along the chain of compute Funcs (a Winograd product and input
//       transform computed per output task, the inverse transform per tile inside it);
//     * parallel: the 1-3 outermost loops of a root stage, each the outermost level of a
//       pure loop, fused;
//     * unroll: at most one level per loop, of constant extent <= max_unroll: inner tiling
//       levels, reduction loops, and in a compute_at region every pure level (the serial loop
//       just outside a vector's lanes included); the unrolled extents multiply to at most
//       2^kMaxUnrollBits (each costs ceil(log2(extent)) bits), which bounds the code size and
//       leaves room for register tiles such as 2 vectors x 8 channels;
//     * a Func that only renames another (input wrappers) is inlined; outputs are at root;
//     * storage in argument order: reordered storage is not drawn. Halide 14 computed wrong
//       values for sampled schedules that reordered the storage of Funcs whose consumers read
//       them in vectors along another argument (4 of the data set's random-network workloads;
//       the same schedules with their storage in argument order compute the right values,
//       tests/measure/sampled_schedule_regression_test.cpp). Schedules still hold storage
//       orders (the rule's sketch and Halide's autoschedulers choose them);
//     * the layout of a packable input (SpaceOptions::packable_inputs, e.g. a conv's weights),
//       decided with the Func that renames it: its own, or one non-innermost dim blocked by
//       a vector width dividing it (schedule/input_layout.h), packed once at load;
//  - Uniformity is per decision: sample() draws each decision uniformly among the candidates
//    that the earlier (consumer) decisions leave, like the paper's random rollouts. Uniform
//    draws are dominated by the many tilings and orders of unvectorized, serial nests (a conv
//    output is vectorized in a few percent of them); Sampling::Stratified first draws the
//    structural class uniformly (placement kind, vector choice, parallel group size, unroll),
//    then uniformly within it, so search starts from vectorized, parallel nests as often as not.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/pipeline_view.h"
#include "graph/workload.h"
#include "schedule/schedule.h"
#include "schedule/sketch.h"

namespace ts {

class RuleSketch;  // schedule/rule_sketch.h

// How sample() draws among a decision's candidates.
enum class Sampling {
  Uniform,     // every candidate equally likely (the paper's random rollouts)
  Stratified,  // each structural class equally likely, then uniform within it: placement kind
               // (inline / root / compute_at), vector choice (none or a loop and width), number of
               // fused parallel loops, and whether a loop is unrolled
  Sketch,      // sample(): random knobs of the pipeline's sketch (schedule/sketch.h) when one
               // applies; per decision and where none applies, as Stratified
};

// Unroll budget of one definition: the sum of ceil(log2(extent)) over its unrolled loops.
constexpr int kMaxUnrollBits = 6;
// What unrolling a loop of `extent` iterations spends of that budget: ceil(log2(extent)).
int unroll_bits(int64_t extent);

struct SpaceOptions {
  int vector_bytes = 64;        // bytes of a native vector register (64 for AVX-512)
  int max_unroll = 16;          // largest extent of an unrolled loop
  int max_parallel_loops = 3;   // outermost loops fused into the parallel loop
  int max_factors = 10;         // split factors considered per loop and level
  Sampling sampling = Sampling::Uniform;  // how sample_decision() draws
  std::set<std::string> packable_inputs;  // inputs whose layout a schedule may choose (constants packed at load; see space_options_for)
};

// `base` with the packable inputs of w (its constant inputs, the weights).
SpaceOptions space_options_for(const Workload& w, SpaceOptions base = {});

// Vector register size of a Halide target: 64 with AVX-512, 32 with AVX2/AVX, else 16.
int native_vector_bytes(const Halide::Target& t);

// Statistics of a space, estimated from random rollouts (cf. Table 2 of the value-learning paper).
struct SpaceStats {
  int stages = 0;                 // Funcs of the pipeline
  int decisions = 0;              // decisions per complete schedule (= stages)
  double avg_branching = 0;       // mean candidates per decision over the rollouts
  double log10_size = 0;          // log10 of the estimated number of complete schedules (mean of products of branching factors)
  int rollouts = 0;               // random schedules drawn
};

// One candidate of a decision: the stage entries it adds (every definition of the Func; one
// entry when inlined) and the layout it gives the input the Func renames.
struct DecisionCandidate {
  std::vector<StageSchedule> entries;   // the Func's entries, definition order
  std::optional<InputLayout> layout;    // a packable input's layout (inline renames only)
  std::string source;                   // "space", or "rule" / "sketch": taken from such a schedule
};

// What ScheduleSpace::candidates() lists besides the space's structural classes.
struct DecisionCandidateOptions {
  int per_class = 2;                      // distinct members listed per structural class (>= 1)
  uint64_t seed = 0;                      // the members are draws from this seed: the same list every call
  std::vector<const Schedule*> sources;   // complete schedules (the rule's, its variants) whose entries for the Func are listed too
};

class ScheduleSpace {
 public:
  // Without the rule's micro-kernel sketch (rule_sketch() is null).
  explicit ScheduleSpace(PipelineView view, SpaceOptions opts = {});
  // The space of the unscheduled pipeline computing `outputs`, with the rule's micro-kernel
  // sketch for `target`.
  ScheduleSpace(const std::vector<Halide::Func>& outputs, const Halide::Target& target, SpaceOptions opts = {});

  const PipelineView& view() const { return view_; }
  const SpaceOptions& options() const { return opts_; }
  // The unscheduled Funcs the space was built from (empty for a space built from a view).
  const std::vector<Halide::Func>& outputs() const { return outputs_; }
  // Funcs in decision order (reverse realization order: outputs first), Halide names.
  const std::vector<std::string>& decisions() const { return order_; }
  // The Schedule name of decision i's Func (without Halide's "$N" suffix).
  const std::string& schedule_name(size_t i) const { return names_[i]; }

  // Number of candidates of decision i given `partial`, which decides every earlier decision.
  double branching(const Schedule& partial, size_t i) const;
  // Draws one of them (as options().sampling says) and adds its stage entries to `partial`.
  void sample_decision(Schedule& partial, size_t i, std::mt19937_64& rng) const;
  // Lists candidates of decision i given `partial` (see top: Candidate listing): per placement
  // (inline with each layout, root, each compute_at loop offered) and per structural class of a
  // definition (vector choice, parallel group size, unrolled or not: Sampling::Stratified's
  // classes) up to o.per_class distinct members; the sketch's decision when the partial is the
  // sketch's so far; the rule's (rule_schedule()) and each source's entries for the Func where
  // they fit the partial (the consumers it is computed in are decided as in that source).
  // Distinct, in that order, the sources last: a greedy search (value-learning paper,
  // Algorithm 1) scores each.
  std::vector<DecisionCandidate> candidates(const Schedule& partial, size_t i, const DecisionCandidateOptions& o = {}) const;
  // Adds a candidate of decision i to `partial` (its entries, its layout in place of the old).
  void take(Schedule& partial, size_t i, const DecisionCandidate& c) const;
  // Per pure arg of decided Func i (Stage::dims order), the extent it realizes per iteration of
  // its compute loop (root: what its consumers need, needed_extents). Throws Error when Func i is undecided or its
  // placement is not one of the space's candidates.
  std::vector<int64_t> region(const Schedule& partial, size_t i) const;
  // A complete schedule: the sketch's random knobs with Sampling::Sketch (when the pipeline has
  // one), else each decision drawn in turn.
  Schedule sample(std::mt19937_64& rng) const;
  // Layouts decided with Func i: none (nullopt) and, when it renames a packable input, that
  // input with one dim blocked by b, a vector width (or a half or quarter of it)
  // dividing the extent, for every dim but the innermost.
  std::vector<std::optional<InputLayout>> layouts(size_t i) const;
  // The pipeline's sketch (schedule/sketch.h), null when its rule does not apply.
  const Sketch* sketch() const { return sketch_.get(); }
  // The default rule's micro-kernel sketch (schedule/rule_sketch.h): null when the space was
  // built from a view alone or the pipeline has no tiled output (RuleSketch::empty()).
  const RuleSketch* rule_sketch() const;
  // The rule's own schedule (default_schedule); nullopt when the space was built from a view.
  std::optional<Schedule> rule_schedule() const;
  // A point of the rule's sketch with random knobs (RuleSketch::draw); nullopt without one.
  std::optional<Schedule> sample_rule(std::mt19937_64& rng) const;
  // Random rollouts (uniform whatever options().sampling says): average branching factor and
  // log10 of the space size.
  SpaceStats estimate(int rollouts, uint64_t seed) const;

 private:
  struct Placement_;   // one placement candidate of a Func
  void sample_decision_as(Schedule& partial, size_t i, std::mt19937_64& rng, Sampling how) const;
  // Candidates of one placement: its structural classes' members (drawn as Stratified draws them).
  void class_members(size_t i, const Placement_& p, const DecisionCandidateOptions& o, std::vector<DecisionCandidate>& out) const;
  struct DefSpace;     // counting tables of one definition in one region
  // A structural class of a definition (Stratified sampling's): vector choice (index into its
  // vector choices), parallel group size, unrolled or not; -1: any.
  struct DefClass {
    int vec = -1, group = -1, unrolled = -1;
  };
  // The classes of a definition that have candidates.
  std::vector<DefClass> def_classes(const DefSpace& ds) const;
  // Draws one definition's loop decisions from its counting tables into ss, within class `cls`
  // (which must have candidates; DefClass{}: any).
  void sample_definition(const DefSpace& ds, bool stratified, StageSchedule& ss, std::mt19937_64& rng,
                         const DefClass& cls) const;
  std::vector<Placement_> placements(const Schedule& partial, size_t i) const;
  Placement_ placement_of(const Schedule& partial, size_t i) const;  // decided Func i's candidate (throws when none)
  const DefSpace& def_space(size_t i, int def, const Placement_& p) const;

  PipelineView view_;
  std::vector<Halide::Func> outputs_;            // see outputs()
  SpaceOptions opts_;
  std::vector<std::string> order_;               // decision order (Halide names)
  std::vector<std::string> names_;               // base names, same order
  std::map<std::string, size_t> index_of_;       // Halide name -> decision index
  std::map<std::string, std::vector<int64_t>> needed_;  // Halide name -> extents a root placement computes (needed_extents)
  std::shared_ptr<const Sketch> sketch_;         // see sketch()
  std::shared_ptr<const RuleSketch> rule_sketch_;  // the rule's knob space (also when empty); see rule_sketch()
  mutable std::map<std::string, std::shared_ptr<DefSpace>> memo_;  // (func, def, root, constant, region) -> tables
  // Bound on memo_ (each entry keeps its loop options, up to a few hundred KB): cleared past it
  // at the start of a public call, whose references into it live only during the call.
  static constexpr size_t kMemoEntries = 512;
  void trim_memo() const {
    if (memo_.size() > kMemoEntries) memo_.clear();
  }
};

}  // namespace ts
