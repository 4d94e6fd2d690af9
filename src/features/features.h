#pragma once
// Features of a (possibly partial) schedule, computed by an analytical model of the loop nest the
// schedule produces: no compile needed. See docs/design.md (src/features/) and the
// value-learning paper, section 5.1, and AutoTVM (Chen et al.), section 4 (context-relation
// features).
//
// Reading guide
//  - Per definition of every stage (the pure one and each update), one StageFeatures row in a
//    fixed layout (stage_feature_names()):
//     * intrinsic, schedule-invariant: op counts by kind, loads / stores, up to 3 producers with
//       their access patterns (strides, transposes, broadcasts), extents, points;
//     * acquired, from the schedule: vector and scalar ops, loop extents after splitting, per loop
//       level bytes read / written, unique cache lines, bytes reused and reuse distance,
//       recomputation from inlining / compute_at, parallel tasks and core utilization,
//       allocations (heap vs stack, bytes), page faults, false sharing; the directives beyond
//       loops: prefetches (count, iterations ahead, lines one prefetch brings), next-task
//       prefetches, rfactor'd reduction loops, staging copies made of the Func;
//     * the Funcs a schedule makes (rfactor's intermediate, Func::in staging copies) have rows
//       of their own, under the names the schedule gives them (rfactor_func_name,
//       staged_copy_name): such a schedule is featurized on its restructured pipeline;
//     * derived: arithmetic intensity and the value-learning paper's ratios.
//    Names say which: "i_" intrinsic, "a_" acquired, "d_" derived; levels "L0".."L5" are the
//    whole of the 6 innermost loops of the scheduled nest (innermost first; a shorter nest
//    repeats its outermost), "root" every execution of the nest. Counts are log2(1 + x).
//    An undecided stage of a partial schedule has decided == false, its intrinsic values
//    (the first stage_intrinsic_features() values: the value-learning paper keeps them so a
//    value function sees what remains) and zeros for the rest.
//    An inline Func is folded into its consumers (their rows count its ops and read its
//    producers); its own row has its intrinsic values, a_inline, its evaluations
//    (a_points, a_recompute = evaluations / points) and the ops those evaluations cost.
//  - flat: one fixed-length vector per schedule for tree models (flat_feature_names()):
//    aggregates over stages plus AutoTVM's context-relation features (log2-spaced thresholds).
//    Its features are workload-invariant quantities (no configuration indices), so a model
//    trained on one workload's records transfers to another's: the rows of the anchor (the
//    definition with the most points, e.g. a conv's update) and of the output, sums over decided definitions,
//    and per anchor buffer (3 producers, the output) the touch count, unique bytes and reuse
//    of the largest loop level of at most 2^0, 2^2, ..., 2^30 points.
//  - kFeaturesVersion changes whenever a layout or a definition changes: records store the
//    version their features were computed with.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/schedule_space.h"

namespace ts {

inline constexpr int kFeaturesVersion = 4;  // 4: the Funcs rfactor and staging copies make have rows of their own

// Names of StageFeatures::values, in layout order.
const std::vector<std::string>& stage_feature_names();
// Names of ScheduleFeatures::flat, in layout order.
const std::vector<std::string>& flat_feature_names();
// StageFeatures::values before this index are intrinsic (schedule-invariant).
size_t stage_intrinsic_features();

// Features of one definition of one stage.
struct StageFeatures {
  std::string stage;           // the stage's schedule name (Func name without Halide's "$N")
  int definition = 0;          // 0 = pure definition, k = update k-1
  bool decided = false;        // the schedule decides this stage (else only intrinsic values are set)
  std::vector<float> values;   // stage_feature_names() order
};

// Features of one schedule of one pipeline.
struct ScheduleFeatures {
  std::vector<StageFeatures> stages;  // every definition of every stage, realization order
  std::vector<float> flat;            // flat_feature_names() order

  // {"version", "names": {"stage": [...], "flat": [...]},
  //  "stages": [{"stage", "definition", "decided", "values": {name: v}}], "flat": {name: v}}
  std::string to_json(int indent = -1) const;
};

// Extracts features of schedules of one pipeline. Construction precomputes what does not
// depend on the schedule; extract() is cheap (target: < 100 µs for a ResNet-50 conv workload).
// Thread-compatible: const methods may run concurrently.
class FeatureExtractor {
 public:
  explicit FeatureExtractor(const ScheduleSpace& space);  // keeps a reference: space must outlive it
  // Loop steps are modelled like the structured decisions (schedule/loop_nest.h), and a Func
  // computed at a loop of a consumer further out than its reader (a Winograd product at the
  // output's task loop) realizes what its readers computed inside that loop read. Throws Error
  // naming the stage and the reason for a schedule the space cannot place (e.g. a compute_at
  // loop the consumer's nest lacks, a compute_at Func with another consumer) and for an
  // autoscheduler recipe (its decisions are not data), and for Func-making directives Halide
  // refuses. Made Funcs have rows when the space was built from Funcs (ScheduleSpace::outputs());
  // over a view alone they are counted on their sources' rows only. Schedules are not
  // validated: run Schedule::validate() first on hand-written ones.
  ScheduleFeatures extract(const Schedule& s) const;
  // Only the flat vector (what tree models use).
  std::vector<float> flat(const Schedule& s) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ts
