#pragma once
// Moves through a ScheduleSpace one decision at a time: the neighbourhood of simulated annealing
// and of evolutionary search.
//
// A mutation redraws one decision (one Func: its placement and every definition's loops) of a
// complete schedule uniformly among its candidates. Decisions made after it (producers) that
// depend on it are redrawn as well: a producer computed at a loop of a redrawn Func (directly or
// through other compute_at producers) has its placement and region changed, so its own decision
// may no longer be a candidate. Every other decision is kept. The result is a complete schedule
// of the space: it validates whenever sampled schedules do.
#include <random>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/schedule_space.h"

namespace ts {

// A neighbour of complete schedule `s` (drawn from `space`): decision `i` and its dependants
// redrawn. May equal `s` when decision i has one candidate.
Schedule mutate_decision(const ScheduleSpace& space, const Schedule& s, size_t i, std::mt19937_64& rng);
// mutate_decision at a decision drawn uniformly, drawn again (a few times) while the result
// equals `s`. With Sampling::Sketch, a point of the space's sketch gets one knob changed instead
// (Sketch::mutate), so it stays a sketch point.
Schedule mutate(const ScheduleSpace& space, const Schedule& s, std::mt19937_64& rng);

// The components of a schedule for diversity (AutoTVM eq. 3): per decided stage, one string per
// kind of decision (placement, tiling, order, vectorize, parallel, unroll), prefixed by the
// stage, so that the same choice at two stages counts twice.
std::vector<std::string> schedule_components(const Schedule& s);

}  // namespace ts
