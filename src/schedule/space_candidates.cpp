// ScheduleSpace::candidates(): a decision's candidates listed for a search that scores each (the
// value-learning paper's greedy search, Algorithm 1). See schedule_space.h, "DecisionCandidate listing".
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "graph/error.h"
#include "schedule/schedule_space.h"
#include "schedule/schedule_space_internal.h"

namespace ts {

namespace {

// The entries of Func `func` in s, definition order.
std::vector<StageSchedule> entries_of(const Schedule& s, const std::string& func) {
  std::vector<StageSchedule> out;
  for (const auto& e : s.stages)
    if (e.func == func) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.definition < b.definition; });
  return out;
}

// A hash of what the space decides of a candidate (equal candidates hash alike; the directives
// only a source sets are left to the comparison).
size_t hash_of(const DecisionCandidate& c) {
  size_t h = c.layout ? static_cast<size_t>(c.layout->dim * 131 + c.layout->block) : 0;
  auto mix = [&h](size_t x) { h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  const std::hash<std::string> hs;
  for (const auto& e : c.entries) {
    mix(static_cast<size_t>(e.definition) * 4 + static_cast<size_t>(e.placement));
    mix(hs(e.compute_at.loop));
    for (const auto& t : e.tiling)
      for (int64_t f : t.factors) mix(static_cast<size_t>(f));
    for (const auto& l : e.order) mix(hs(l));
    for (const auto& l : e.storage_order) mix(hs(l));
    for (const auto& l : e.unroll) mix(hs(l));
    mix(hs(e.vectorize) + static_cast<size_t>(e.vector_width));
    mix(hs(e.parallel) + e.parallel_fused.size());
  }
  return h;
}

bool same_candidate(const DecisionCandidate& a, const DecisionCandidate& b) {
  return a.entries == b.entries && a.layout == b.layout;
}

}  // namespace

void ScheduleSpace::class_members(size_t i, const Placement_& p, const DecisionCandidateOptions& o, std::vector<DecisionCandidate>& out) const {
  const Stage& st = *view_.stage(order_[i]);
  std::mt19937_64 rng(o.seed ^ (0x9e3779b97f4a7c15ull * (i + 1)));
  std::vector<const DefSpace*> defs;
  for (size_t d = 0; d < st.definitions.size(); d++) {
    defs.push_back(&def_space(i, static_cast<int>(d), p));
    if (defs.back()->total <= 0) return;  // a definition with no candidate here: the placement has none
  }
  // Per definition and class, members with that definition in the class and the others drawn
  // (stratified): a list as long as the classes of all definitions together, not their product.
  for (size_t d = 0; d < defs.size(); d++)
    for (const DefClass& cls : def_classes(*defs[d]))
      for (int m = 0; m < o.per_class; m++) {
        DecisionCandidate c;
        c.source = "space";
        for (size_t k = 0; k < defs.size(); k++) {
          StageSchedule ss;
          ss.func = names_[i];
          ss.definition = static_cast<int>(k);
          if (k == 0) {
            ss.placement = p.placement;
            if (p.placement == Placement::ComputeAt) ss.compute_at = p.at;
          }
          sample_definition(*defs[k], true, ss, rng, k == d ? cls : DefClass{});
          c.entries.push_back(std::move(ss));
        }
        out.push_back(std::move(c));
      }
}

std::vector<DecisionCandidate> ScheduleSpace::candidates(const Schedule& partial, size_t i, const DecisionCandidateOptions& o) const {
  if (i >= order_.size()) throw Error(fmt::format("schedule space: no decision {} (it has {})", i, order_.size()));
  if (o.per_class < 1) throw Error("schedule space: candidates need at least one member per class");
  trim_memo();
  std::vector<DecisionCandidate> all;
  for (const auto& p : placements(partial, i)) {
    if (p.placement != Placement::Inline) {
      class_members(i, p, o, all);
      continue;
    }
    StageSchedule s0;
    s0.func = names_[i];
    for (const auto& l : layouts(i)) all.push_back({{s0}, l, "space"});
  }
  // Schedules that decide the Func another way (the sketch's, the rule's): their entries, where
  // the consumers the Func is computed in are decided as they decide them.
  std::vector<std::pair<const Schedule*, std::string>> sources;
  Schedule sketch_point;
  if (sketch_) {
    sketch_point = sketch_->build(*this, sketch_->default_knobs());
    sources.push_back({&sketch_point, "sketch"});
  }
  const std::optional<Schedule> rule = rule_schedule();
  if (rule) sources.push_back({&*rule, "rule"});
  for (const Schedule* s : o.sources)
    if (s) sources.push_back({s, s->origin ? s->origin->generator : "schedule"});
  for (const auto& [s, label] : sources) {
    DecisionCandidate c{entries_of(*s, names_[i]), std::nullopt, label};
    if (c.entries.empty()) continue;
    bool fits = true;
    for (const auto& e : c.entries)
      if (e.definition == 0 && e.placement == Placement::ComputeAt)
        fits = fits && entries_of(partial, e.compute_at.func) == entries_of(*s, e.compute_at.func);
    if (!fits) continue;
    const std::string& input = view_.stage(order_[i])->rename_of;
    for (const auto& l : s->layouts)
      if (!input.empty() && l.input == input) c.layout = l;
    all.push_back(std::move(c));
  }
  // Distinct, in first-seen order; a source's decision the space lists too is named by its source.
  std::vector<DecisionCandidate> out;
  std::unordered_map<size_t, std::vector<size_t>> seen;  // hash -> indices into out
  for (auto& c : all) {
    std::vector<size_t>& same_hash = seen[hash_of(c)];
    auto it = std::find_if(same_hash.begin(), same_hash.end(), [&](size_t k) { return same_candidate(out[k], c); });
    if (it == same_hash.end()) {
      same_hash.push_back(out.size());
      out.push_back(std::move(c));
    } else if (c.source != "space") {
      out[*it].source = c.source;
    }
  }
  return out;
}

void ScheduleSpace::take(Schedule& partial, size_t i, const DecisionCandidate& c) const {
  const std::string& input = view_.stage(order_[i])->rename_of;
  std::erase_if(partial.stages, [&](const StageSchedule& e) { return e.func == names_[i]; });
  for (const auto& e : c.entries) partial.set(e);
  if (!input.empty()) std::erase_if(partial.layouts, [&](const InputLayout& l) { return l.input == input; });
  if (c.layout) partial.layouts.push_back(*c.layout);
}

}  // namespace ts
