#include "schedule/rule_sketch.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "graph/error.h"
#include "schedule/autoscheduler.h"

namespace ts {

namespace {

// One knob: its parameter name, its field and its valid range.
struct KnobSpec {
  const char* name;
  std::optional<int> DefaultKnobs::*field;
  int lo, hi;         // valid values
  int draw_hi;        // largest value draw() picks (a workload's own limits may lower it)
  bool power_of_two;  // drawn among the powers of two of [lo, draw_hi] (tasks, grain)
};

const std::vector<KnobSpec>& knob_specs() {
  static const std::vector<KnobSpec> specs = {
      {"columns", &DefaultKnobs::columns, 1, 16, 16, false},
      {"blocks", &DefaultKnobs::blocks, 1, 4, 4, false},
      {"vectors", &DefaultKnobs::vectors, 1, 4, 4, false},
      {"columns_outer", &DefaultKnobs::columns_outer, 0, 1, 1, false},
      {"outermost", &DefaultKnobs::outermost, 1, 8, 8, false},
      {"tasks", &DefaultKnobs::tasks, 1, 256, 64, true},
      {"grain", &DefaultKnobs::grain, 1, 256, 32, true},
      {"unroll", &DefaultKnobs::unroll, 0, 4, 4, false},
      {"stream", &DefaultKnobs::stream, 0, 1, 1, false},
      {"chunk", &DefaultKnobs::chunk, 0, 64, 16, false},
      {"prefetch", &DefaultKnobs::prefetch, 0, 2, 2, false},
      {"row_group", &DefaultKnobs::row_group, 0, 64, 16, false},
  };
  return specs;
}

std::string describe_prefetch(const TilePlan& p) {
  if (!p.prefetch_next_task) return "";
  return p.walk_pages_ahead ? ", the next task's weights prefetched (pages walked three tasks ahead)"
                            : ", the next task's weights prefetched";
}

std::optional<int> parse_int(const std::string& s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return static_cast<int>(v);
}

// describe()'s words for a tile's streamed loop, empty when it has none.
std::string describe_streaming(const TileFacts& f, const TilePlan& p) {
  if (p.streamed < 0) return "";
  if (p.k_block == 0) return fmt::format(", outer loop {} streamed", p.streamed);
  if (!f.blocked) return fmt::format(", row tiles inside blocks of {} of K", p.k_block);
  return fmt::format(", column tiles inside chunks of {} of the outer reduction loop", p.k_block);
}

}  // namespace

std::vector<std::string> default_knob_names() {
  std::vector<std::string> names;
  for (const auto& spec : knob_specs()) names.push_back(spec.name);
  return names;
}

std::map<std::string, std::string> DefaultKnobs::params() const {
  std::map<std::string, std::string> out;
  for (const auto& spec : knob_specs())
    if (const auto& v = this->*spec.field) out[spec.name] = std::to_string(*v);
  return out;
}

std::optional<std::string> check_default_params(const std::map<std::string, std::string>& params) {
  for (const auto& [key, value] : params) {
    const auto& specs = knob_specs();
    auto it = std::find_if(specs.begin(), specs.end(), [&](const KnobSpec& s) { return key == s.name; });
    if (it == specs.end()) {
      std::vector<std::string> known;
      for (const auto& s : specs) known.push_back(s.name);
      return fmt::format("the default rule has no knob '{}' (its knobs: {})", key, fmt::join(known, ", "));
    }
    const auto v = parse_int(value);
    if (!v || *v < it->lo || *v > it->hi)
      return fmt::format("the default rule's knob {} must be an integer in [{}, {}], not '{}'", key, it->lo,
                         it->hi, value);
  }
  return std::nullopt;
}

DefaultKnobs DefaultKnobs::from_params(const std::map<std::string, std::string>& params) {
  if (auto why = check_default_params(params)) throw Error(*why);
  DefaultKnobs k;
  for (const auto& spec : knob_specs()) {
    auto it = params.find(spec.name);
    if (it != params.end()) k.*spec.field = *parse_int(it->second);
  }
  return k;
}

DefaultKnobs DefaultKnobs::from_json(const std::string& text) {
  if (text.empty()) return {};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("knobs '{}': not JSON ({})", text, e.what()));
  }
  if (!j.is_object()) throw Error(fmt::format("knobs '{}': expected an object such as {{\"columns\":\"7\"}}", text));
  std::map<std::string, std::string> params;
  for (auto& [k, v] : j.items()) params[k] = v.is_string() ? v.get<std::string>() : v.dump();
  if (const auto why = check_default_params(params)) throw Error(fmt::format("knobs '{}': {}", text, *why));
  return from_params(params);
}

RuleSketch::RuleSketch(PipelineView view, const std::vector<Halide::Func>& outputs, const Halide::Target& target)
    : view_(std::move(view)), outputs_(outputs), target_(target), winograd_(winograd_facts(outputs)) {
  if (winograd_) return;  // the Winograd schedule replaces rule 5 (default_schedule.cpp)
  for (const auto& t : default_structure(view_, outputs, target).tiles) tiles_.push_back(t.facts);
}

RuleSketch::RuleSketch(const std::vector<Halide::Func>& outputs, const Halide::Target& target)
    : RuleSketch(build_pipeline_view(outputs), outputs, target) {}

WinogradTile RuleSketch::winograd_plan(const DefaultKnobs& k) const {
  return plan_winograd_tile(*winograd_, k, host_cores());
}

DefaultKnobs RuleSketch::canonical_winograd(const DefaultKnobs& k) const {
  // Columns, blocks and stream are searched. Stream (the weights streamed once, tasks over
  // output-channel blocks, or once per tile row) ranks alone as in the network because the
  // measurer evicts the weights before every run (warm, per row looked faster alone than it ran
  // in the network). Its best value depends on the threads (per row, each task's input transform
  // stays on its core), so the tuner confirms a winner per thread count.
  const WinogradTile target = winograd_plan(k);
  DefaultKnobs c;
  if (k.columns) c.columns = target.columns;
  if (k.blocks) c.blocks = target.blocks;
  if (k.stream) c.stream = target.weights_once ? 1 : 0;
  for (auto field : {&DefaultKnobs::columns, &DefaultKnobs::blocks, &DefaultKnobs::stream}) {
    DefaultKnobs d = c;
    (d.*field).reset();
    if (winograd_plan(d) == target) c = d;
  }
  return c;
}

std::vector<TilePlan> RuleSketch::plans(const DefaultKnobs& k) const {
  std::vector<TilePlan> out;
  for (const auto& f : tiles_) out.push_back(plan_tile(f, k));
  return out;
}

DefaultKnobs RuleSketch::canonical(const DefaultKnobs& k) const {
  if (winograd_) return canonical_winograd(k);
  if (tiles_.empty()) return {};
  const std::vector<TilePlan> target = plans(k);
  // The values the (first) plan uses: knobs out of range or past a cap read as what they do.
  const TilePlan& p = target[0];
  DefaultKnobs c = k;
  if (c.columns) c.columns = p.U;
  if (c.blocks) c.blocks = p.Vt;
  if (c.vectors) c.vectors = p.X;
  if (c.columns_outer) c.columns_outer = p.columns_outer ? 1 : 0;
  if (c.tasks) c.tasks = p.fused > 0 ? static_cast<int>(std::min<int64_t>(p.tasks, 256)) : 1;
  if (c.grain) c.grain = static_cast<int>(std::min<int64_t>(p.grain, 256));
  if (c.unroll) c.unroll = p.unrolled_rvars;
  if (c.stream) c.stream = p.streamed >= 0 ? 1 : 0;
  if (c.chunk) c.chunk = p.k_block;
  if (c.prefetch) c.prefetch = p.prefetch_next_task ? (p.walk_pages_ahead ? 2 : 1) : 0;
  if (c.row_group) c.row_group = row_group_of(p);
  if (plans(c) != target) c = k;  // the tiles disagree on what the values mean: keep them as given
  // Drop every knob the plan does not need, until none can go: dropping one may free another
  // (stream=1 makes a blocks knob matter; a chunk makes stream's own loop order moot).
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (const auto& spec : knob_specs()) {
      if (!(c.*spec.field)) continue;
      DefaultKnobs d = c;
      (d.*spec.field).reset();
      if (plans(d) == target) c = d, dropped = true;
    }
  }
  return c;
}

DefaultKnobs RuleSketch::draw_one(int knob, DefaultKnobs k, std::mt19937_64& rng) const {
  const KnobSpec& spec = knob_specs()[knob];
  int lo = spec.lo, hi = spec.draw_hi;
  if (winograd_) {
    if (spec.field == &DefaultKnobs::columns) hi = static_cast<int>(std::min<int64_t>(hi, winograd_->tiles_wide));
    if (spec.field == &DefaultKnobs::blocks) hi = static_cast<int>(std::min<int64_t>(hi, winograd_->blocks));
    k.*spec.field = std::uniform_int_distribution<int>(lo, std::max(lo, hi))(rng);
    return k;
  }
  const TileFacts& f = tiles_[0];
  // Ranges the first tile can use (others clamp).
  if (spec.field == &DefaultKnobs::columns && f.u >= 0) hi = static_cast<int>(std::min<int64_t>(hi, f.ext[f.u]));
  if (spec.field == &DefaultKnobs::outermost)
    hi = std::max(1, std::min(hi, static_cast<int>(plan_tile(f, k).outer.size()) - 2));
  if (spec.field == &DefaultKnobs::unroll) hi = std::min(hi, static_cast<int>(f.rvar_ext.size()));
  if (spec.field == &DefaultKnobs::chunk && !f.rvar_ext.empty())
    hi = static_cast<int>(std::clamp<int64_t>(f.rvar_ext.back() / 2, lo, hi));
  int v;
  if (spec.power_of_two) {
    int bits = 0;
    while ((2 << bits) <= hi) bits++;
    v = 1 << std::uniform_int_distribution<int>(0, bits)(rng);
  } else {
    v = std::uniform_int_distribution<int>(lo, std::max(lo, hi))(rng);
  }
  k.*spec.field = v;
  return k;
}

DefaultKnobs RuleSketch::draw(std::mt19937_64& rng) const {
  if (empty()) return {};
  DefaultKnobs k;
  for (int i = 0; i < static_cast<int>(knob_specs().size()); i++)
    if (rng() & 1) k = draw_one(i, k, rng);
  return canonical(k);
}

DefaultKnobs RuleSketch::mutate(const DefaultKnobs& k, std::mt19937_64& rng) const {
  if (empty()) return k;
  const int n = static_cast<int>(knob_specs().size());
  for (int tries = 0; tries < 10; tries++) {
    DefaultKnobs m = canonical(draw_one(std::uniform_int_distribution<int>(0, n - 1)(rng), k, rng));
    if (!(m == k)) return m;
  }
  return k;
}

Schedule RuleSketch::schedule(const DefaultKnobs& k) const {
  const DefaultKnobs c = canonical(k);
  {
    std::lock_guard<std::mutex> lock(built_mutex_);
    if (auto it = built_.find(c); it != built_.end()) return it->second;
  }
  Schedule s = default_schedule(view_, outputs_, target_, c);
  std::lock_guard<std::mutex> lock(built_mutex_);
  if (built_.size() >= kBuiltEntries) built_.clear();
  built_.emplace(c, s);
  return s;
}

std::optional<DefaultKnobs> RuleSketch::network_variant() const {
  if (winograd_ || tiles_.empty()) return std::nullopt;
  DefaultKnobs walk;
  walk.prefetch = 2;
  const std::vector<TilePlan> rule = plans({}), walked = plans(walk);
  bool any = false;
  for (size_t i = 0; i < rule.size(); i++) {
    TilePlan expected = rule[i];
    expected.walk_pages_ahead = expected.prefetch_next_task;  // a tile the rule does not prefetch must stay so
    if (!(walked[i] == expected)) return std::nullopt;
    any = any || expected.walk_pages_ahead;
  }
  if (!any) return std::nullopt;
  return canonical(walk);
}

int64_t RuleSketch::weight_bytes() const {
  int64_t bytes = 0;
  for (const auto& f : tiles_) bytes += f.weight_bytes;
  return bytes;
}

std::string RuleSketch::describe() const {
  if (winograd_) {
    const WinogradTile t = winograd_plan({});
    return fmt::format("Winograd F(4x4,3x3): {} tiles a row, {} output blocks, {:.2f} MB of weights: {} columns x {} blocks, "
                       "weights streamed {}",
                       winograd_->tiles_wide, winograd_->blocks, winograd_->weight_bytes / 1e6, t.columns, t.blocks,
                       t.weights_once ? "once" : "per tile row");
  }
  if (tiles_.empty()) return "no register tile (the default rule has no knobs here)";
  std::string out;
  for (const auto& f : tiles_) {
    const TilePlan p = plan_tile(f, {});
    out += fmt::format("{}tile over [{}] ({}, {} lanes): {} columns x {} blocks{} x {} vectors, {} outer loops, "
                       "{} fused parallel ({} tasks, grain {}), {} reduction loops unrolled{}{}{}",
                       out.empty() ? "" : "; ", fmt::join(f.ext, ", "), f.blocked ? "blocked" : "plain", f.V, p.U, p.Vt,
                       p.pair_blocks ? " (paired)" : "", p.X, p.outer.size(), p.fused, p.tasks, p.grain, p.unrolled_rvars,
                       describe_streaming(f, p), describe_prefetch(p),
                       row_group_of(p) ? fmt::format(", rows in groups of {} inside the block loop", row_group_of(p)) : "");
  }
  return out;
}

}  // namespace ts
