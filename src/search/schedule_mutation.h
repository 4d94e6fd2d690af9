#pragma once
// Moves through a ScheduleSpace one decision at a time: the neighbourhood of simulated annealing
// and of evolutionary search.
//
// A mutation redraws one decision (one Func: its placement and every definition's loops) of a
// complete schedule uniformly among its candidates. Decisions made after it (producers) that
// depend on it are redrawn as well: a producer computed at a loop of a redrawn Func (directly or
// through other compute_at producers), or beside it (at a loop of the Func the redrawn one was
// computed in), has its placement and region changed, so its own decision may no longer be a candidate. Every other decision is kept. The result is a complete schedule
// of the space: it validates whenever sampled schedules do.
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/schedule_space.h"

namespace ts {

// A neighbour of complete schedule `s` (drawn from `space`): decision `i` and its dependants
// redrawn. May equal `s` when decision i has one candidate.
Schedule mutate_decision(const ScheduleSpace& space, const Schedule& s, size_t i, std::mt19937_64& rng);
// mutate_decision at a decision drawn uniformly, drawn again (a few times) while the result
// equals `s`. A point of the rule's micro-kernel sketch (its origin names the rule's knobs) gets
// one knob changed instead (RuleSketch::mutate), and with Sampling::Sketch a point of the
// loop-nest sketch likewise (Sketch::mutate): a sketch point stays a point of its sketch.
Schedule mutate(const ScheduleSpace& space, const Schedule& s, std::mt19937_64& rng);

// The components of a schedule for diversity (AutoTVM eq. 3): per decided stage, one string per
// kind of decision (placement, tiling, order, vectorize, parallel, unroll), prefixed by the
// stage, so that the same choice at two stages counts twice.
std::vector<std::string> schedule_components(const Schedule& s);

// How many of n proposals go to a sketch when a policy gives it `share` of its batches: the
// rounded share, with a coin deciding a fractional remainder (so a batch of 1 still gets some).
size_t sketch_share(size_t n, double share, std::mt19937_64& rng);

// Up to n distinct points of the space's rule sketch, neither in `skip` (hashes, added to) nor
// `measured` (may be empty): random knobs, or with even odds one knob of `around` changed
// (when given). None without a rule sketch.
std::vector<Schedule> draw_rule_points(const ScheduleSpace& space, size_t n, std::set<std::string>& skip,
                                       const std::function<bool(const std::string&)>& measured, const Schedule* around,
                                       std::mt19937_64& rng);

}  // namespace ts
