#include "search/schedule_mutation.h"

#include <fmt/format.h>

#include <set>

#include "graph/error.h"

namespace ts {

namespace {

// The Schedule without the entries of the given Funcs (schedule names).
Schedule without(const Schedule& s, const std::set<std::string>& funcs) {
  Schedule out;
  out.format = s.format;
  for (const auto& st : s.stages)
    if (!funcs.count(st.func)) out.stages.push_back(st);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
  return out;
}

}  // namespace

Schedule mutate_decision(const ScheduleSpace& space, const Schedule& s, size_t i, std::mt19937_64& rng) {
  const size_t n = space.decisions().size();
  // Decision i and every later one computed inside a redrawn Func.
  std::set<std::string> redrawn = {space.schedule_name(i)};
  std::vector<bool> redraw(n, false);
  redraw[i] = true;
  for (size_t j = i + 1; j < n; j++) {
    const StageSchedule* e = s.find(space.schedule_name(j), 0);
    if (e && e->placement == Placement::ComputeAt && redrawn.count(e->compute_at.func)) {
      redraw[j] = true;
      redrawn.insert(space.schedule_name(j));
    }
  }
  // Decisions are made in order, each seeing the ones before it: keep or redraw in turn.
  Schedule out = without(s, redrawn);
  try {
    for (size_t j = i; j < n; j++)
      if (redraw[j]) space.sample_decision(out, j, rng);
    return out;
  } catch (const Error&) {
    // A kept decision lost its place: a Func computed at a loop of a consumer it read through
    // decision i while i was inlined, now placed elsewhere. Redraw i and everything after it.
  }
  std::set<std::string> after;
  for (size_t j = i; j < n; j++) after.insert(space.schedule_name(j));
  out = without(s, after);
  for (size_t j = i; j < n; j++) space.sample_decision(out, j, rng);
  return out;
}

Schedule mutate(const ScheduleSpace& space, const Schedule& s, std::mt19937_64& rng) {
  // A sketch point moves among sketch points: one knob changed.
  if (space.options().sampling == Sampling::Sketch && space.sketch())
    if (auto k = space.sketch()->knobs_of(space, s)) return space.sketch()->build(space, space.sketch()->mutate(*k, rng));
  // Counting each decision's candidates first would cost more than the mutation: draw a
  // decision, and draw again when it had a single candidate (input wrappers, outputs without
  // loops to split) and so changed nothing.
  const size_t n = space.decisions().size();
  if (n == 0) return s;
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  const std::string h = s.hash();
  Schedule out = s;
  for (int tries = 0; tries < 8; tries++) {
    try {
      out = mutate_decision(space, s, pick(rng), rng);
    } catch (const Error&) {
      continue;  // s places a Func where the space no longer offers it (a schedule of another chain's making)
    }
    if (out.hash() != h) break;
  }
  return out;
}

std::vector<std::string> schedule_components(const Schedule& s) {
  std::vector<std::string> out;
  for (const auto& st : s.canonical().stages) {
    const std::string p = st.name() + ":";
    const char* kinds[] = {"inline", "root", "at"};
    out.push_back(p + "place=" + kinds[static_cast<int>(st.placement)] + " " + st.compute_at.func + "." +
                  st.compute_at.loop);
    std::string tiles;
    for (const auto& t : st.tiling) {
      tiles += t.loop + "/";
      for (auto f : t.factors) tiles += std::to_string(f) + "/";
    }
    out.push_back(p + "tile=" + tiles);
    out.push_back(p + "order=" + join(st.order));
    out.push_back(p + fmt::format("vec={}x{}", st.vectorize, st.vector_width));
    out.push_back(p + "par=" + st.parallel + "+" + join(st.parallel_fused));
    out.push_back(p + "unroll=" + join(st.unroll));
    if (!st.storage_order.empty()) out.push_back(p + "store=" + join(st.storage_order));
  }
  return out;
}

}  // namespace ts
