#pragma once
// The checker behind Schedule::validate() and apply(): the schedule against the pipeline's
// Halide IR (Funcs, definitions, RVars, who reads whom). It models each definition's loop nest
// as the schedule leaves it (tiling, order, vector/unroll/parallel marks, fusion, then the loop
// steps), so every loop a decision names is checked before the first Halide call, and apply()
// replays the decisions over the nests it planned.
#include <Halide.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schedule/restructure.h"
#include "schedule/schedule.h"

namespace ts::checker {

using Halide::Internal::Function;

constexpr int64_t kMaxUnroll = 64;  // the largest extent of an unrolled loop
constexpr int kMaxDepth = 64;       // bound on placement chains (compute_at of compute_at ...)

enum class LoopKind { Serial, Vectorized, Unrolled, Parallel };
struct LoopInfo;
int find_loop(const std::vector<LoopInfo>& loops, const std::string& n);

struct LoopInfo {
  std::string name;                   // loop name
  bool rvar = false;                  // a reduction loop (an RVar or one of its levels)
  int64_t extent = 0;                 // constant extent known from the schedule; 0 = unknown
  LoopKind kind = LoopKind::Serial;   // how it runs
  bool hidden = false;                // the vector lanes split off by vectorize(L, width): not nameable
};

// One definition's loop nest as the schedule leaves it.
struct Nest {
  std::vector<LoopInfo> loops;        // innermost first, a fused parallel loop in place of its parts
  std::set<std::string> rvars;        // every reduction loop name made on the way (incl. fused-away)

  int index(const std::string& n) const {
    return find_loop(loops, n);
  }
};


// Helpers the checker and apply() share.
const char* step_name_of(StepKind k);
std::string names_of(const std::vector<LoopInfo>& loops);
int find_loop(const std::vector<LoopInfo>& loops, const std::string& n);
std::string stage_name(const std::string& func, int definition);
// Halide's default nest of definition d: args for d = 0; RVars then the pure args an update uses.
std::vector<LoopInfo> original_loops(const Function& f, int d);
// The loops of definition d as its schedule lists them now (innermost first): the nest of a
// Func rfactor made or changed, whose dims differ from the default nest original_loops() gives.
std::vector<LoopInfo> current_loops(const Function& f, int d);
// Names (schedule names) of the Funcs a definition calls (values, args, predicate, RDom bounds);
// `made` names the Funcs restructure() made.
std::set<std::string> definition_calls(const Halide::Internal::Definition& d, const std::map<std::string, std::string>& made);

// Where a Func is computed once the schedule is applied.
enum class Where { Inline, Root, At, Innermost /* undecided Func with updates */ };

class Checker {
 public:
  // `done`: what restructure() did to the pipeline of `outputs` (nothing by default).
  Checker(const Schedule& s, const std::vector<Halide::Func>& outputs, Restructured done = {})
      : sched_(s), restructured_(std::move(done.changed)) {
    std::map<std::string, std::string> full;  // base name -> Halide name
    auto add = [&](const Function& fn) {
      const auto made = done.names.find(fn.name());
      const std::string b = made != done.names.end() ? made->second : func_base_name(fn.name());
      auto [it, fresh] = full.emplace(b, fn.name());
      if (!fresh && it->second != fn.name()) ambiguous_.insert(b);
      env.emplace(b, fn);
    };
    for (const auto& o : outputs) {
      add(o.function());
      output_names.insert(func_base_name(o.name()));
      for (auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) add(fn);
    }
    // Staging copies (Func::in): Halide substitutes them for the wrapped Func in their consumer's
    // definitions when it lowers; here they are Funcs the consumer calls instead.
    std::vector<std::pair<std::string, std::string>> staged;  // (wrapped, consumer) base names
    for (const auto& [name, fn] : std::map<std::string, Function>(env))
      for (const auto& [consumer, ptr] : fn.wrappers()) {
        if (consumer.empty()) continue;
        const Function w(ptr);
        add(w);
        const auto made = done.names.find(w.name());
        const auto consumer_made = done.names.find(consumer);
        staged.emplace_back(name, consumer_made != done.names.end() ? consumer_made->second : func_base_name(consumer));
        wrapper_of_[made != done.names.end() ? made->second : func_base_name(w.name())] = name;
      }
    for (auto& [name, fn] : env) {
      calls_[{name, 0}] = definition_calls(fn.definition(), done.names);
      for (size_t u = 0; u < fn.updates().size(); u++)
        calls_[{name, static_cast<int>(u) + 1}] = definition_calls(fn.update(u), done.names);
    }
    for (const auto& [wrapped, consumer] : staged)
      for (auto& [key, callees] : calls_)
        if (key.first == consumer && callees.erase(wrapped)) callees.insert(staged_copy_name(wrapped, consumer));
    buffers = pipeline_buffers(env);
  }

  std::optional<std::string> run();

  // The nest of (func, definition): as planned when decided, else Halide's default.
  const Nest& nest(const std::string& func, int d) {
    auto key = std::make_pair(func, d);
    auto it = nests_.find(key);
    if (it != nests_.end()) return it->second;
    Nest n;
    n.loops = loops_of(func, d);
    for (const auto& l : n.loops)
      if (l.rvar) n.rvars.insert(l.name);
    return nests_[key] = n;
  }

  std::map<std::string, Function> env;      // every Func of the pipeline, staging copies included
  std::set<std::string> output_names;       // the outputs
  std::map<std::string, Halide::Internal::Parameter> buffers;  // input buffers by name

  // The loops a definition starts from: Halide's default nest, or the nest rfactor left.
  std::vector<LoopInfo> loops_of(const std::string& func, int d) const {
    return restructured_.count(func) ? current_loops(env.at(func), d) : original_loops(env.at(func), d);
  }

 private:
  std::optional<std::string> check_entry(const StageSchedule& ss);
  std::optional<std::string> plan(const StageSchedule& ss, Nest& out);
  std::optional<std::string> check_placement(const StageSchedule& ss);
  std::optional<std::string> check_compute_at(const StageSchedule& ss);

  Where where(const std::string& f) const {
    if (output_names.count(f)) return Where::Root;
    if (const StageSchedule* s = sched_.find(f, 0))
      return s->placement == Placement::Inline ? Where::Inline : s->placement == Placement::Root ? Where::Root : Where::At;
    return env.at(f).has_update_definition() ? Where::Innermost : Where::Inline;
  }

  // Stages (func, definition) that read f, looking through inlined Funcs.
  std::set<std::pair<std::string, int>> use_sites(const std::string& f) const {
    std::set<std::pair<std::string, int>> out;
    std::set<std::string> visited;
    std::function<void(const std::string&)> visit = [&](const std::string& g) {
      for (const auto& [key, callees] : calls_) {
        if (key.first == g || !callees.count(g)) continue;
        if (where(key.first) != Where::Inline) out.insert(key);
        else if (visited.insert(key.first).second) visit(key.first);
      }
    };
    visit(f);
    return out;
  }

  // Whether every loop of Func g (its compute level) is inside loop `at`.
  bool func_inside(const std::string& g, const ConsumerLoop& at, int depth) {
    if (depth > kMaxDepth) return false;
    switch (where(g)) {
      case Where::Inline:
      case Where::Root: return false;
      case Where::At: {
        const ConsumerLoop& c = sched_.find(g, 0)->compute_at;
        if (!env.count(c.func)) return false;
        if (c.func != at.func) return func_inside(c.func, at, depth + 1);
        if (c.definition != at.definition) return false;
        const Nest& n = nest(c.func, c.definition);
        const int i = n.index(c.loop), j = n.index(at.loop);
        return i >= 0 && j >= 0 && i <= j;
      }
      case Where::Innermost: {
        auto uses = use_sites(g);
        for (const auto& u : uses)
          if (!stage_inside(u, at, depth + 1)) return false;
        return !uses.empty();
      }
    }
    return false;
  }

  // Whether the body of stage u runs inside loop `at`.
  bool stage_inside(const std::pair<std::string, int>& u, const ConsumerLoop& at, int depth) {
    if (u.first == at.func) return u.second == at.definition;
    return func_inside(u.first, at, depth);
  }

  const Schedule& sched_;
  std::set<std::string> restructured_;  // Funcs rfactor made or changed (see the constructor)
  std::map<std::string, std::string> wrapper_of_;  // staging copy -> the Func it copies
  std::set<std::string> ambiguous_;  // base names shared by several Funcs
  std::map<std::pair<std::string, int>, std::set<std::string>> calls_;  // Funcs each definition calls
  std::map<std::pair<std::string, int>, Nest> nests_;                   // planned or default nests
};

}  // namespace ts::checker
