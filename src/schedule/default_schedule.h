#pragma once
// tensorsched's untuned baseline schedule, applied to any Halide pipeline whose Funcs carry
// estimates of their extents (define_tensor sets them from the fixed shapes), as Schedule data
// (its origin "rule" with the knobs it was made with):
//  1. A pure stage that only renames another Func's value (input wrappers) stays inline.
//  2. Reduction stages (with update definitions) and pure stages read by a reduction (padded
//     inputs) are computed at root; other pure stages (elementwise followers) are inlined into
//     the output, i.e. computed inside its tiles.
//  3. Every root stage vectorizes its innermost pure loop by the native vector width (with a
//     guarded tail) when that loop is at least half a vector long, and runs in parallel over
//     its outermost pure loops, fused until there are enough tasks for the cores, when it has
//     enough work (points x reduction iterations >= 2^18) to pay for waking the thread pool.
//  4. Update definitions keep the vectorized pure loop innermost, the reduction loops next, and
//     the remaining pure loops (parallel) outside.
//  5. Exception to 2-4: an output whose value is elementwise in one reduction over the same
//     domain (conv/matmul + bias + activation) is tiled: vectors of the innermost loop times
//     several iterations (unrolled) of the loop whose loads the vectors reuse (a conv's output
//     channel, a matmul's row: 2 vectors x 8 rows, 12 where B exceeds L2), with the reduction
//     computed inside each tile so that its accumulators live in registers. Over channel-blocked
//     tensors (graph/layout_plan.h) the tile is the NCHWc micro-kernel: the lane vector x 5-8
//     columns (a divisor of the width, else the count that computes the fewest extra columns)
//     x 2 output-channel blocks, the innermost reduction loops unrolled; where no load
//     is reused (depthwise, pooling) the padded input is read in place instead of copied; where
//     the weights exceed L2 the tile's rows run inside the input-channel blocks and the next
//     block's weights are prefetched (default_tile.cpp plan_streaming).
//  Rule 5's tile has knobs (DefaultKnobs, the parameters of Schedule::origin "rule"): unset,
//  each is the rule's own choice; set, the tuner's search over them (schedule/rule_sketch.h)
//  finds the variant of the micro-kernel a workload runs fastest with.
#include <Halide.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/pipeline_view.h"
#include "schedule/schedule.h"

namespace ts {

// Knobs of rule 5's register tile. Unset = the rule's choice; a value outside what a workload
// allows is clamped to it (RuleSketch::canonical drops knobs that change nothing).
struct DefaultKnobs {
  std::optional<int> columns;        // "columns": tile extent of the reuse loop (a blocked conv's columns, a matmul's rows), 1-16
  std::optional<int> blocks;         // "blocks": output-channel blocks per tile (blocked), 1-4; half-vector blocks: 1 unpaired, 2 one pair, 4 two pairs
  std::optional<int> vectors;        // "vectors": vectors of the innermost loop per tile (plain, dense loads), 1-4
  std::optional<int> columns_outer;  // "columns_outer": 1 = a plain matmul's column tiles outside its row tiles, 0 = inside
  std::optional<int> outermost;      // "outermost": the rule's outer loop k (1 = innermost) moved outermost, 1-8
  std::optional<int> tasks;          // "tasks": outer loops are fused until this many parallel tasks, 1-256 (1 = serial)
  std::optional<int> grain;          // "grain": consecutive parallel iterations per task, 1-256
  std::optional<int> unroll;         // "unroll": innermost reduction loops unrolled, 0-4
  std::optional<int> stream;         // "stream": 1 = the reduction's outermost loop outside the tile's rows, the weights' next slice prefetched
  std::optional<int> chunk;          // "chunk": a blocked tile's outermost reduction loop in chunks of this many, column tiles inside (0 = whole), 0-64
  std::optional<int> prefetch;       // "prefetch": 1 = each parallel task prefetches the next one's weights into L2 (tasks over output blocks), 2 = and walks the pages of the slice three tasks ahead, 0 = neither
  std::optional<int> row_group;      // "row_group": a tile whose rows run outermost runs them in groups of this many inside its block loop (0 = one group of each row), 0-64
  bool operator==(const DefaultKnobs&) const = default;
  auto operator<=>(const DefaultKnobs&) const = default;  // any strict order, for sets of knobs

  // The knobs as parameters (set knobs only, as decimal strings): Schedule::origin's.
  std::map<std::string, std::string> params() const;
  // Parses parameters; throws Error naming an unknown parameter or a bad value.
  static DefaultKnobs from_params(const std::map<std::string, std::string>& params);
  // Parses a JSON object of parameters (strings or numbers, e.g. '{"chunk":"8"}'; empty text: no
  // knobs); throws Error quoting the text when it is not such an object or a parameter is bad.
  static DefaultKnobs from_json(const std::string& text);
};

// Why `params` are not valid knobs of the rule, or nullopt.
std::optional<std::string> check_default_params(const std::map<std::string, std::string>& params);

// The rule's schedule of the pipeline computing `outputs` (every stage it decides; the rest stay
// at Halide's default), with `knobs` (unset: the rule's own choices), as data for apply().
Schedule default_schedule(const std::vector<Halide::Func>& outputs, const Halide::Target& target, const DefaultKnobs& knobs = {});
// The same from the pipeline's view (analysis/pipeline_view.h), which the rule reads; `outputs`
// name the loops.
Schedule default_schedule(const PipelineView& view, const std::vector<Halide::Func>& outputs, const Halide::Target& target,
                          const DefaultKnobs& knobs = {});

// The generator name of the rule's schedules (Schedule::origin).
inline constexpr const char* kRuleGenerator = "rule";

// The knobs a schedule of the rule was made with (its origin), or nullopt for any other schedule.
// Also reads the recipe "TensorschedDefault" that records made before the rule emitted data hold:
// apply() converts that recipe to the rule's schedule with its knobs.
std::optional<DefaultKnobs> rule_knobs(const Schedule& s);
// The rule itself (no knob set), either form.
bool is_rule_default(const Schedule& s);

// The rule (every knob unset).
void apply_default_schedule(const std::vector<Halide::Func>& outputs, const Halide::Target& target);
// The rule with `knobs`: apply(default_schedule(outputs, target, knobs)).
void apply_default_variant(const std::vector<Halide::Func>& outputs, const Halide::Target& target,
                           const DefaultKnobs& knobs);


}  // namespace ts
