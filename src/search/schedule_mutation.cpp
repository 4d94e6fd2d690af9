#include "search/schedule_mutation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "graph/error.h"
#include "schedule/rule_sketch.h"

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
  // Decision i and every later one computed inside a redrawn Func, or beside one (at a loop of
  // the Func a redrawn consumer was computed in).
  std::set<std::string> redrawn = {space.schedule_name(i)};
  std::set<std::string> redrawn_sites;  // the Funcs redrawn Funcs were computed in, as s places them
  auto note_site = [&](const std::string& func) {
    if (const StageSchedule* e = s.find(func, 0); e && e->placement == Placement::ComputeAt) redrawn_sites.insert(e->compute_at.func);
  };
  note_site(space.schedule_name(i));
  std::vector<bool> redraw(n, false);
  redraw[i] = true;
  for (size_t j = i + 1; j < n; j++) {
    const StageSchedule* e = s.find(space.schedule_name(j), 0);
    if (!e || e->placement != Placement::ComputeAt) continue;
    const bool beside = redrawn_sites.count(e->compute_at.func) > 0;
    if (redrawn.count(e->compute_at.func) || beside) {
      redraw[j] = true;
      redrawn.insert(space.schedule_name(j));
      note_site(space.schedule_name(j));
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
  if (const RuleSketch* rule = space.rule_sketch())
    if (const std::optional<DefaultKnobs> k = rule_knobs(s)) return rule->schedule(rule->mutate(*k, rng));
  if (space.options().sampling == Sampling::Sketch && space.sketch())
    if (auto k = space.sketch()->knobs_of(space, s)) return space.sketch()->build(space, space.sketch()->mutate(*k, rng));
  // Counting each decision's candidates first would cost more than the mutation: try the
  // decisions in a random order, moving on while one had a single candidate (input wrappers,
  // outputs without loops to split) and so changed nothing; at most 8 redraws.
  const size_t n = space.decisions().size();
  if (n == 0) return s;
  std::vector<size_t> order(n);
  for (size_t k = 0; k < n; k++) order[k] = k;
  std::shuffle(order.begin(), order.end(), rng);
  const std::string h = s.hash();
  Schedule out = s;
  for (size_t k = 0; k < std::min<size_t>(n, 8); k++) {
    try {
      out = mutate_decision(space, s, order[k], rng);
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

size_t sketch_share(size_t n, double share, std::mt19937_64& rng) {
  const double want = n * share;
  size_t k = static_cast<size_t>(std::floor(want));
  if (std::uniform_real_distribution<double>(0, 1)(rng) < want - k) k++;
  return std::min(k, n);
}

std::vector<Schedule> draw_rule_points(const ScheduleSpace& space, size_t n, std::set<std::string>& skip,
                                       const std::function<bool(const std::string&)>& measured, const Schedule* around,
                                       std::mt19937_64& rng) {
  std::vector<Schedule> out;
  if (!space.rule_sketch()) return out;
  // A small knob space is exhausted after a few draws that only repeat.
  for (size_t tries = 0; out.size() < n && tries < 20 * n + 20; tries++) {
    Schedule s = around && (rng() & 1) ? mutate(space, *around, rng) : *space.sample_rule(rng);
    const std::string h = s.hash();
    if (skip.count(h) || (measured && measured(h))) continue;
    skip.insert(h);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ts
