#pragma once
// RuleSketch: the default rule's micro-kernel sketch, one of the sketches of the ScheduleSpace
// (ScheduleSpace::rule_sketch()): its parameters are the rule's knobs (DefaultKnobs), each point
// is the rule's Schedule data for its knobs.
//
// Why: the space's decisions and its loop-nest sketch (schedule/sketch.h) rarely meet the
// default's channel-blocked micro-kernels (paired half blocks, streamed inputs, grouped parallel
// tasks), so the rule's kernels are a sketch of their own. A Winograd conv workload
// (schedule/winograd_schedule.h) has three knobs instead: columns, blocks and stream. The knobs
// (columns and blocks per tile, vectors, loop order, parallel tasks and grain, reduction
// unrolling) span a small space around a kernel that is already good; measuring its points finds
// the one a workload's shapes and this machine's caches prefer. A point is Schedule data whose
// origin keeps the knobs, so it has stage decisions and features like any schedule, a search
// moves among points by mutating knobs (search/schedule_mutation.h), and knobs carry to
// workloads of other classes (clamped to their shapes).
//
// Two knob sets that give the same tile plan give the same code: canonical() keeps only knobs
// that change the plan, at the values the plan uses, so a point has one hash.
#include <Halide.h>

#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/pipeline_view.h"
#include "schedule/default_schedule.h"
#include "schedule/default_tile.h"
#include "schedule/schedule.h"
#include "schedule/winograd_schedule.h"

namespace ts {

// Every knob's parameter name ("columns", "blocks", ...), in the order of DefaultKnobs.
std::vector<std::string> default_knob_names();

class RuleSketch {
 public:
  // Reads the pipeline computing `outputs` through its view (both kept, unscheduled: schedule()
  // reads them again).
  RuleSketch(PipelineView view, const std::vector<Halide::Func>& outputs, const Halide::Target& target);
  // The same, building the view of `outputs`.
  RuleSketch(const std::vector<Halide::Func>& outputs, const Halide::Target& target);

  // No tiled output: every knob set is the default itself.
  bool empty() const { return tiles_.empty() && !winograd_; }
  // The knobs that change the plan of some tile, at the values the plan uses (see top).
  DefaultKnobs canonical(const DefaultKnobs& k) const;
  // Random knobs, canonical: each knob left to the rule or drawn uniformly in its range (as the
  // first tile allows), with even odds.
  DefaultKnobs draw(std::mt19937_64& rng) const;
  // `k` with one knob redrawn, canonical; `k` when ten tries changed nothing.
  DefaultKnobs mutate(const DefaultKnobs& k, std::mt19937_64& rng) const;
  // The rule's schedule of the pipeline with canonical(k) (default_schedule); kept per
  // canonical knobs (a search revisits points; the recent few thousand).
  Schedule schedule(const DefaultKnobs& k) const;
  // One line: the tiles' facts and the rule's plan.
  std::string describe() const;
  // The rule with knobs whose effect a workload measured alone cannot show, canonical, or nullopt:
  // today prefetch=2 where the rule prefetches the next task's weights and the walk ahead is all
  // that changes. Its page walks pay only where the network around the workload left the
  // page-table entries cold (task_prefetch.h), so only a run of the whole model decides it
  // (tune/network_refine.h).
  std::optional<DefaultKnobs> network_variant() const;
  // Bytes of weights the tiles read (TileFacts::weight_bytes, summed): what a page walk covers.
  int64_t weight_bytes() const;

 private:
  std::vector<TilePlan> plans(const DefaultKnobs& k) const;
  DefaultKnobs draw_one(int knob, DefaultKnobs k, std::mt19937_64& rng) const;  // knob `knob` redrawn in its range

  WinogradTile winograd_plan(const DefaultKnobs& k) const;       // a Winograd workload's tile under k
  DefaultKnobs canonical_winograd(const DefaultKnobs& k) const;  // canonical() of a Winograd workload

  PipelineView view_;                          // the pipeline as the rule reads it
  std::vector<Halide::Func> outputs_;          // the pipeline's outputs
  Halide::Target target_;                      // the target the rule plans for
  std::vector<TileFacts> tiles_;               // the tiled outputs' facts
  std::optional<WinogradFacts> winograd_;      // set: a Winograd conv workload (columns and blocks are its knobs)
  mutable std::mutex built_mutex_;             // guards built_
  mutable std::map<DefaultKnobs, Schedule> built_;  // schedule() by canonical knobs, at most kBuiltEntries
  static constexpr size_t kBuiltEntries = 4096;     // a long annealing run visits more points: dropped past it
};

}  // namespace ts
