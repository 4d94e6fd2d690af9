// Schedule as data: names, canonical form, JSON, hash and Halide C++ source.
// Validation and application to Halide Funcs are in apply.cpp.
#include "schedule/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "graph/error.h"
#include "graph/workload.h"  // fnv1a_hex

namespace ts {

using nlohmann::json;

namespace {

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::Inline: return "inline";
    case Placement::Root: return "root";
    case Placement::ComputeAt: return "compute_at";
  }
  return "?";
}

const char* tail_name(Tail t) {
  switch (t) {
    case Tail::Auto: return "auto";
    case Tail::GuardWithIf: return "guard_with_if";
    case Tail::ShiftInwards: return "shift_inwards";
    case Tail::RoundUp: return "round_up";
  }
  return "?";
}

const char* tail_source(Tail t) {
  switch (t) {
    case Tail::Auto: return "TailStrategy::Auto";
    case Tail::GuardWithIf: return "TailStrategy::GuardWithIf";
    case Tail::ShiftInwards: return "TailStrategy::ShiftInwards";
    case Tail::RoundUp: return "TailStrategy::RoundUp";
  }
  return "?";
}

const char* step_name(StepKind k) {
  switch (k) {
    case StepKind::Split: return "split";
    case StepKind::Fuse: return "fuse";
    case StepKind::Reorder: return "reorder";
    case StepKind::Vectorize: return "vectorize";
    case StepKind::Unroll: return "unroll";
    case StepKind::Parallel: return "parallel";
  }
  return "?";
}

const char* bound_name(PrefetchBound b) {
  switch (b) {
    case PrefetchBound::Clamp: return "clamp";
    case PrefetchBound::GuardWithIf: return "guard_with_if";
    case PrefetchBound::NonFaulting: return "non_faulting";
  }
  return "?";
}

const char* bound_source(PrefetchBound b) {
  switch (b) {
    case PrefetchBound::Clamp: return "PrefetchBoundStrategy::Clamp";
    case PrefetchBound::GuardWithIf: return "PrefetchBoundStrategy::GuardWithIf";
    case PrefetchBound::NonFaulting: return "PrefetchBoundStrategy::NonFaulting";
  }
  return "?";
}

bool stage_less(const StageSchedule& a, const StageSchedule& b) {
  return std::tie(a.func, a.definition) < std::tie(b.func, b.definition);
}

// ---- JSON ----

json stage_to_json(const StageSchedule& s) {
  json j;
  j["func"] = s.func;
  j["definition"] = s.definition;
  if (s.definition == 0) {
    j["placement"] = placement_name(s.placement);
    if (s.placement == Placement::ComputeAt)
      j["compute_at"] = {{"func", s.compute_at.func}, {"definition", s.compute_at.definition}, {"loop", s.compute_at.loop}};
    if (s.store_root) j["store_root"] = true;
    if (!s.store_at.empty()) j["store_at"] = s.store_at;
    if (!s.storage_order.empty()) j["storage_order"] = s.storage_order;
    if (!s.memory.empty()) j["memory"] = s.memory;
  }
  if (!s.tiling.empty()) {
    json t = json::array();
    for (const auto& l : s.tiling) t.push_back({{"loop", l.loop}, {"factors", l.factors}, {"tail", tail_name(l.tail)}});
    j["tiling"] = t;
  }
  if (!s.order.empty()) j["order"] = s.order;
  if (!s.vectorize.empty() || s.vector_width != 0) j["vectorize"] = {{"loop", s.vectorize}, {"width", s.vector_width}};
  if (!s.parallel.empty() || !s.parallel_fused.empty()) {
    j["parallel"] = {{"loop", s.parallel}};
    if (!s.parallel_fused.empty()) j["parallel"]["fused"] = s.parallel_fused;
  }
  if (!s.unroll.empty()) j["unroll"] = s.unroll;
  if (!s.steps.empty()) {
    json steps = json::array();
    for (const auto& st : s.steps) {
      json o;
      if (st.kind == StepKind::Split || st.kind == StepKind::Fuse || st.kind == StepKind::Reorder) o[step_name(st.kind)] = st.loops;
      else o[step_name(st.kind)] = st.loops.empty() ? "" : st.loops[0];
      if (st.factor != 0) o["factor"] = st.factor;
      if (st.tail != Tail::Auto) o["tail"] = tail_name(st.tail);
      steps.push_back(o);
    }
    j["steps"] = steps;
  }
  if (!s.prefetches.empty()) {
    json p = json::array();
    for (const auto& d : s.prefetches)
      p.push_back({{"buffer", d.buffer}, {"at", d.at}, {"from", d.from}, {"offset", d.offset}, {"bound", bound_name(d.bound)}});
    j["prefetch"] = p;
  }
  if (!s.rfactor.empty()) {
    json r = json::array();
    for (const auto& f : s.rfactor) r.push_back({{"rvar", f.rvar}, {"var", f.var}});
    j["rfactor"] = r;
  }
  if (!s.staged_for.empty()) j["in"] = s.staged_for;
  if (!s.task_prefetches.empty()) {
    json t = json::array();
    for (const auto& q : s.task_prefetches)
      t.push_back({{"task_loop", q.task_loop}, {"spread_stage", q.spread_stage}, {"buffer", q.buffer},
                   {"task_bytes", q.task_bytes}, {"buffer_bytes", q.buffer_bytes}, {"locality", q.locality},
                   {"walk_ahead_tasks", q.walk_ahead_tasks}});
    j["task_prefetch"] = t;
  }
  return j;
}

// Reads JSON objects with errors that name the stage and the field.
struct Reader {
  std::string where;  // "schedule" or "schedule stage 3 ('acc.update(0)')"

  [[noreturn]] void fail(const std::string& what) const { throw Error(fmt::format("{}: {}", where, what)); }

  void only_keys(const json& j, const std::set<std::string>& allowed) const {
    if (!j.is_object()) fail("expected an object");
    for (const auto& [k, v] : j.items())
      if (!allowed.count(k)) fail(fmt::format("unknown field '{}'", k));
  }
  const json& need(const json& j, const char* key) const {
    auto it = j.find(key);
    if (it == j.end()) fail(fmt::format("missing field '{}'", key));
    return *it;
  }
  std::string str(const json& j, const char* key) const {
    const json& v = need(j, key);
    if (!v.is_string()) fail(fmt::format("field '{}' must be a string", key));
    return v.get<std::string>();
  }
  int64_t integer(const json& j, const char* key) const {
    const json& v = need(j, key);
    if (!v.is_number_integer()) fail(fmt::format("field '{}' must be an integer", key));
    return v.get<int64_t>();
  }
  int small_int(const json& j, const char* key) const {
    int64_t v = integer(j, key);
    if (v < -(1LL << 30) || v > (1LL << 30)) fail(fmt::format("field '{}' is out of range: {}", key, v));
    return static_cast<int>(v);
  }
  std::vector<std::string> strings(const json& j, const char* key) const {
    const json& v = need(j, key);
    if (!v.is_array()) fail(fmt::format("field '{}' must be an array of strings", key));
    std::vector<std::string> out;
    for (const auto& e : v) {
      if (!e.is_string()) fail(fmt::format("field '{}' must be an array of strings", key));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
};

Placement parse_placement(const Reader& r, const std::string& s) {
  for (Placement p : {Placement::Inline, Placement::Root, Placement::ComputeAt})
    if (s == placement_name(p)) return p;
  r.fail(fmt::format("unknown placement '{}' (inline, root, compute_at)", s));
}

Tail parse_tail(const Reader& r, const std::string& s) {
  for (Tail t : {Tail::Auto, Tail::GuardWithIf, Tail::ShiftInwards, Tail::RoundUp})
    if (s == tail_name(t)) return t;
  r.fail(fmt::format("unknown tail '{}' (auto, guard_with_if, shift_inwards, round_up)", s));
}

PrefetchBound parse_bound(const Reader& r, const std::string& s) {
  for (PrefetchBound b : {PrefetchBound::Clamp, PrefetchBound::GuardWithIf, PrefetchBound::NonFaulting})
    if (s == bound_name(b)) return b;
  r.fail(fmt::format("unknown prefetch bound '{}' (clamp, guard_with_if, non_faulting)", s));
}

// One object of "steps": exactly one directive key, with "factor" and "tail" where they apply.
LoopStep step_from_json(const json& j, const Reader& outer, size_t index) {
  Reader r{fmt::format("{} step {}", outer.where, index)};
  r.only_keys(j, {"split", "fuse", "reorder", "vectorize", "unroll", "parallel", "factor", "tail"});
  LoopStep st;
  int kinds = 0;
  for (StepKind k : {StepKind::Split, StepKind::Fuse, StepKind::Reorder, StepKind::Vectorize, StepKind::Unroll, StepKind::Parallel}) {
    if (!j.contains(step_name(k))) continue;
    kinds++;
    st.kind = k;
    if (k == StepKind::Split || k == StepKind::Fuse || k == StepKind::Reorder) st.loops = r.strings(j, step_name(k));
    else st.loops = {r.str(j, step_name(k))};
  }
  if (kinds != 1) r.fail("names one directive (split, fuse, reorder, vectorize, unroll or parallel)");
  if ((st.kind == StepKind::Split || st.kind == StepKind::Fuse) && st.loops.size() != 3)
    r.fail(fmt::format("{} names {} loops (3: {})", step_name(st.kind), st.loops.size(),
                       st.kind == StepKind::Split ? "old, outer, inner" : "inner, outer, fused"));
  if (j.contains("factor")) st.factor = r.integer(j, "factor");
  if (j.contains("tail")) st.tail = parse_tail(r, r.str(j, "tail"));
  return st;
}

void extras_from_json(const json& j, const Reader& r, StageSchedule& s) {
  if (j.contains("steps")) {
    if (!j["steps"].is_array()) r.fail("field 'steps' must be an array");
    for (size_t i = 0; i < j["steps"].size(); i++) s.steps.push_back(step_from_json(j["steps"][i], r, i));
  }
  if (j.contains("prefetch")) {
    if (!j["prefetch"].is_array()) r.fail("field 'prefetch' must be an array");
    for (const auto& p : j["prefetch"]) {
      Reader rp{r.where + " prefetch"};
      rp.only_keys(p, {"buffer", "at", "from", "offset", "bound"});
      PrefetchDirective d{rp.str(p, "buffer"), rp.str(p, "at"), rp.str(p, "from")};
      if (p.contains("offset")) d.offset = rp.integer(p, "offset");
      if (p.contains("bound")) d.bound = parse_bound(rp, rp.str(p, "bound"));
      s.prefetches.push_back(d);
    }
  }
  if (j.contains("rfactor")) {
    if (!j["rfactor"].is_array()) r.fail("field 'rfactor' must be an array");
    for (const auto& p : j["rfactor"]) {
      Reader rr{r.where + " rfactor"};
      rr.only_keys(p, {"rvar", "var"});
      s.rfactor.push_back({rr.str(p, "rvar"), rr.str(p, "var")});
    }
  }
  if (j.contains("in")) s.staged_for = r.strings(j, "in");
  if (j.contains("task_prefetch")) {
    if (!j["task_prefetch"].is_array()) r.fail("field 'task_prefetch' must be an array");
    for (const auto& p : j["task_prefetch"]) {
      Reader rt{r.where + " task_prefetch"};
      rt.only_keys(p, {"task_loop", "spread_stage", "buffer", "task_bytes", "buffer_bytes", "locality", "walk_ahead_tasks"});
      TaskPrefetch q;
      q.task_func = s.func;
      q.task_loop = rt.str(p, "task_loop");
      q.spread_stage = rt.str(p, "spread_stage");
      q.buffer = rt.str(p, "buffer");
      q.task_bytes = rt.integer(p, "task_bytes");
      q.buffer_bytes = rt.integer(p, "buffer_bytes");
      q.locality = rt.small_int(p, "locality");
      q.walk_ahead_tasks = rt.small_int(p, "walk_ahead_tasks");
      s.task_prefetches.push_back(q);
    }
  }
}

StageSchedule stage_from_json(const json& j, size_t index) {
  Reader r{fmt::format("schedule stage {}", index)};
  r.only_keys(j, {"func", "definition", "placement", "compute_at", "store_root", "store_at", "storage_order", "tiling",
                  "order", "vectorize", "parallel", "unroll", "steps", "prefetch", "rfactor", "in", "task_prefetch", "memory"});
  StageSchedule s;
  s.func = r.str(j, "func");
  if (j.contains("definition")) s.definition = r.small_int(j, "definition");
  if (s.definition < 0) r.fail(fmt::format("definition {} is negative", s.definition));
  r.where = fmt::format("schedule stage {} ('{}')", index, s.name());
  if (s.definition > 0) {
    for (const char* k : {"placement", "compute_at", "store_root", "store_at", "storage_order", "in", "task_prefetch", "memory"})
      if (j.contains(k)) r.fail(fmt::format("field '{}' belongs to the pure definition (definition 0)", k));
  } else {
    s.placement = parse_placement(r, r.str(j, "placement"));
    if (j.contains("compute_at")) {
      const json& c = j["compute_at"];
      Reader rc{r.where + " compute_at"};
      rc.only_keys(c, {"func", "definition", "loop"});
      s.compute_at.func = rc.str(c, "func");
      if (c.contains("definition")) s.compute_at.definition = rc.small_int(c, "definition");
      s.compute_at.loop = rc.str(c, "loop");
    } else if (s.placement == Placement::ComputeAt) {
      r.fail("placement compute_at needs field 'compute_at'");
    }
    if (j.contains("store_root")) {
      if (!j["store_root"].is_boolean()) r.fail("field 'store_root' must be a boolean");
      s.store_root = j["store_root"].get<bool>();
    }
    if (j.contains("store_at")) s.store_at = r.str(j, "store_at");
    if (j.contains("storage_order")) s.storage_order = r.strings(j, "storage_order");
    if (j.contains("memory")) {
      s.memory = r.str(j, "memory");
      if (s.memory != "heap" && s.memory != "stack" && s.memory != "register")
        r.fail(fmt::format("unknown memory '{}' (heap, stack, register)", s.memory));
    }
  }
  if (j.contains("tiling")) {
    if (!j["tiling"].is_array()) r.fail("field 'tiling' must be an array");
    for (const auto& t : j["tiling"]) {
      Reader rt{r.where + " tiling"};
      rt.only_keys(t, {"loop", "factors", "tail"});
      LoopTiling lt;
      lt.loop = rt.str(t, "loop");
      rt.where = fmt::format("{} tiling of loop '{}'", r.where, lt.loop);
      const json& f = rt.need(t, "factors");
      if (!f.is_array()) rt.fail("field 'factors' must be an array of integers");
      for (const auto& v : f) {
        if (!v.is_number_integer()) rt.fail("field 'factors' must be an array of integers");
        lt.factors.push_back(v.get<int64_t>());
      }
      if (t.contains("tail")) lt.tail = parse_tail(rt, rt.str(t, "tail"));
      s.tiling.push_back(lt);
    }
  }
  if (j.contains("order")) s.order = r.strings(j, "order");
  if (j.contains("vectorize")) {
    const json& v = j["vectorize"];
    Reader rv{r.where + " vectorize"};
    rv.only_keys(v, {"loop", "width"});
    s.vectorize = rv.str(v, "loop");
    s.vector_width = rv.small_int(v, "width");
  }
  if (j.contains("parallel")) {
    const json& p = j["parallel"];
    Reader rp{r.where + " parallel"};
    rp.only_keys(p, {"loop", "fused"});
    s.parallel = rp.str(p, "loop");
    if (p.contains("fused")) s.parallel_fused = rp.strings(p, "fused");
  }
  if (j.contains("unroll")) s.unroll = r.strings(j, "unroll");
  if (s.definition == 0 && j.contains("rfactor")) r.fail("field 'rfactor' belongs to an update definition");
  extras_from_json(j, r, s);
  return s;
}

// A name and its string parameters: an autoscheduler recipe's or an origin's.
std::pair<std::string, std::map<std::string, std::string>> named_params_from_json(const json& j, const char* what,
                                                                                const char* name_key) {
  Reader r{what};
  r.only_keys(j, {name_key, "params"});
  std::pair<std::string, std::map<std::string, std::string>> out{r.str(j, name_key), {}};
  if (j.contains("params")) {
    const json& p = j["params"];
    if (!p.is_object()) r.fail("field 'params' must be an object of strings");
    for (const auto& [k, v] : p.items()) {
      if (!v.is_string()) r.fail(fmt::format("parameter '{}' must be a string", k));
      out.second[k] = v.get<std::string>();
    }
  }
  return out;
}

AutoschedulerRecipe recipe_from_json(const json& j) {
  auto [name, params] = named_params_from_json(j, "schedule autoscheduler", "name");
  return {name, params};
}

ScheduleOrigin origin_from_json(const json& j) {
  auto [generator, params] = named_params_from_json(j, "schedule origin", "generator");
  return {generator, params};
}

// ---- Halide C++ source ----

std::string ident(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

std::string ident_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + ident(n);
  return out;
}

// The stage's steps and prefetches as chained Halide calls.
std::string steps_source(const StageSchedule& s) {
  std::string out;
  for (const auto& st : s.steps) {
    const std::string tail = st.tail == Tail::Auto ? "" : std::string(", ") + tail_source(st.tail);
    const std::string loop = st.loops.empty() ? "" : ident(st.loops[0]);
    switch (st.kind) {
      case StepKind::Split: out += fmt::format(".split({}, {}{})", ident_list(st.loops), st.factor, tail); break;
      case StepKind::Fuse: out += fmt::format(".fuse({})", ident_list(st.loops)); break;
      case StepKind::Reorder: out += fmt::format(".reorder({})", ident_list(st.loops)); break;
      case StepKind::Vectorize:
      case StepKind::Unroll:
        out += fmt::format(".{}({}{})", step_name(st.kind), loop, st.factor > 0 ? fmt::format(", {}{}", st.factor, tail) : "");
        break;
      case StepKind::Parallel: out += fmt::format(".parallel({})", loop); break;
    }
  }
  for (const auto& p : s.prefetches)
    out += fmt::format(".prefetch({}, {}, {}, {}, {})", ident(p.buffer), ident(p.at), ident(p.from), p.offset, bound_source(p.bound));
  return out;
}

std::string stage_source(const StageSchedule& s) {
  std::string out = ident(s.func);
  if (s.definition > 0) out += fmt::format(".update({})", s.definition - 1);
  const size_t head = out.size();
  if (s.definition == 0) {
    switch (s.placement) {
      case Placement::Inline: out += ".compute_inline()"; break;
      case Placement::Root: out += ".compute_root()"; break;
      case Placement::ComputeAt:
        // Halide's (Func, Var) LoopLevel matches the loop in the stage of the consumer that
        // uses this Func; validate() requires every use to be in compute_at.definition.
        out += fmt::format(".compute_at({}, {})", ident(s.compute_at.func), ident(s.compute_at.loop));
        break;
    }
    if (s.store_root) out += ".store_root()";
    if (!s.store_at.empty()) out += fmt::format(".store_at({}, {})", ident(s.compute_at.func), ident(s.store_at));
    if (!s.storage_order.empty()) out += fmt::format(".reorder_storage({})", ident_list(s.storage_order));
    if (!s.memory.empty())
      out += fmt::format(".store_in(MemoryType::{})", s.memory == "heap" ? "Heap" : s.memory == "stack" ? "Stack" : "Register");
  }
  for (const auto& t : s.tiling) {
    if (t.factors.empty()) continue;
    const auto lv = t.level_names();
    const std::string tail = t.tail == Tail::Auto ? "" : std::string(", ") + tail_source(t.tail);
    if (t.factors.size() == 1) {
      out += fmt::format(".split({}, {}, {}, {}{})", ident(t.loop), ident(lv[1]), ident(lv[0]), t.factors[0], tail);
    } else {
      out += fmt::format(".split({}, {}, {}, {}{})", ident(t.loop), ident(lv[2]), ident(t.middle_name()),
                         t.factors[0] * t.factors[1], tail);
      out += fmt::format(".split({}, {}, {}, {})", ident(t.middle_name()), ident(lv[1]), ident(lv[0]), t.factors[0]);
    }
  }
  if (!s.order.empty()) out += fmt::format(".reorder({})", ident_list(s.order));
  if (!s.vectorize.empty()) {
    if (s.level_extent(s.vectorize) == s.vector_width) out += fmt::format(".vectorize({})", ident(s.vectorize));
    else out += fmt::format(".vectorize({}, {}, TailStrategy::GuardWithIf)", ident(s.vectorize), s.vector_width);
  }
  for (const auto& u : s.unroll) out += fmt::format(".unroll({})", ident(u));
  if (!s.parallel.empty()) {
    std::string cur = s.parallel, name = s.parallel;
    for (const auto& f : s.parallel_fused) {
      name += "_" + f;
      out += fmt::format(".fuse({}, {}, {})", ident(cur), ident(f), ident(name + "_f"));
      cur = name + "_f";
    }
    out += fmt::format(".parallel({})", ident(cur));
  }
  out += steps_source(s);
  std::string pre;  // the Funcs the entry makes come first
  if (!s.rfactor.empty()) {
    std::string pairs;
    for (const auto& p : s.rfactor) pairs += fmt::format("{}{{{}, {}}}", pairs.empty() ? "" : ", ", ident(p.rvar), ident(p.var));
    pre += fmt::format("Func {} = {}.update({}).rfactor({{{}}});\n", ident(rfactor_func_name(s.func)), ident(s.func),
                       s.definition - 1, pairs);
  }
  for (const auto& c : s.staged_for)
    pre += fmt::format("Func {} = {}.in({});\n", ident(staged_copy_name(s.func, c)), ident(s.func), ident(c));
  for (const auto& q : s.task_prefetches)
    pre += fmt::format("// {}: each task of parallel loop {} prefetches the next task's {} bytes of {} (locality {}, pages walked {} tasks ahead), spread over {}\n",
                       s.func, q.task_loop, q.task_bytes, q.buffer, q.locality, q.walk_ahead_tasks, q.spread_stage);
  if (out.size() == head) return pre;  // an update entry that keeps the default nest
  return pre + out + ";\n";
}

}  // namespace

// ---- names ----

std::vector<std::string> LoopTiling::level_names() const {
  if (factors.size() >= 2) return {loop + "_i", loop + "_m", loop + "_o"};
  return {loop + "_i", loop + "_o"};
}

std::string LoopTiling::middle_name() const { return loop + "_mi"; }

std::string StageSchedule::name() const {
  return definition == 0 ? func : fmt::format("{}.update({})", func, definition - 1);
}

std::string StageSchedule::parallel_loop_name() const {
  if (parallel.empty() || parallel_fused.empty()) return parallel;
  std::string n = parallel;
  for (const auto& f : parallel_fused) n += "_" + f;
  return n + "_f";
}

bool StageSchedule::decides_loops() const {
  return !tiling.empty() || !order.empty() || !vectorize.empty() || vector_width != 0 || !parallel.empty() ||
         !parallel_fused.empty() || !unroll.empty() || !steps.empty() || !prefetches.empty() || !rfactor.empty();
}

bool StageSchedule::restructures() const { return !rfactor.empty() || !staged_for.empty(); }

std::string rfactor_func_name(const std::string& func) { return func + "_intm"; }

std::string staged_copy_name(const std::string& func, const std::string& consumer) { return func + "_in_" + consumer; }

int64_t StageSchedule::level_extent(const std::string& l) const {
  for (const auto& t : tiling) {
    const auto lv = t.level_names();
    for (size_t k = 0; k + 1 < lv.size() && k < t.factors.size(); k++)
      if (lv[k] == l) return t.factors[k];
  }
  return 0;
}

// ---- Schedule ----

const StageSchedule* Schedule::find(const std::string& func, int definition) const {
  for (const auto& s : stages)
    if (s.func == func && s.definition == definition) return &s;
  return nullptr;
}

StageSchedule* Schedule::find(const std::string& func, int definition) {
  for (auto& s : stages)
    if (s.func == func && s.definition == definition) return &s;
  return nullptr;
}

StageSchedule& Schedule::set(StageSchedule s) {
  if (StageSchedule* e = find(s.func, s.definition)) {
    *e = std::move(s);
    return *e;
  }
  auto it = std::upper_bound(stages.begin(), stages.end(), s, stage_less);
  return *stages.insert(it, std::move(s));
}

bool Schedule::is_complete(const std::vector<std::string>& stage_names) const {
  if (autoscheduler) return true;
  for (const auto& n : stage_names) {
    std::string func = n;
    int definition = 0;
    const size_t p = n.rfind(".update(");
    if (p != std::string::npos && n.back() == ')') {
      const std::string k = n.substr(p + 8, n.size() - p - 9);
      if (!k.empty() && std::all_of(k.begin(), k.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        func = n.substr(0, p);
        definition = std::stoi(k) + 1;
      }
    }
    if (!find(func, definition)) return false;
  }
  return true;
}

Schedule Schedule::canonical() const {
  Schedule c = *this;
  std::stable_sort(c.stages.begin(), c.stages.end(), stage_less);
  for (auto& s : c.stages) {
    std::stable_sort(s.tiling.begin(), s.tiling.end(),
                     [](const LoopTiling& a, const LoopTiling& b) { return a.loop < b.loop; });
    std::sort(s.unroll.begin(), s.unroll.end());
  }
  std::stable_sort(c.layouts.begin(), c.layouts.end());
  return c;
}

bool Schedule::operator==(const Schedule& o) const {
  const Schedule a = canonical(), b = o.canonical();
  return format == o.format && autoscheduler == o.autoscheduler && a.stages == b.stages && a.layouts == b.layouts &&
         bound_outputs == o.bound_outputs;
}

std::string Schedule::to_json(int indent) const {
  json j;
  j["format"] = format;
  j["stages"] = json::array();
  for (const auto& s : canonical().stages) j["stages"].push_back(stage_to_json(s));
  // Only when set: schedules without a recipe keep their JSON and hash.
  if (autoscheduler) j["autoscheduler"] = {{"name", autoscheduler->name}, {"params", autoscheduler->params}};
  if (!bound_outputs) j["bound_outputs"] = false;  // only when off: other schedules keep their hash
  if (origin) j["origin"] = {{"generator", origin->generator}, {"params", origin->params}};
  if (!layouts.empty()) {
    j["layouts"] = json::array();
    for (const auto& l : canonical().layouts) j["layouts"].push_back({{"input", l.input}, {"dim", l.dim}, {"block", l.block}});
  }
  return j.dump(indent);
}

Schedule Schedule::from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(fmt::format("schedule: not JSON: {}", e.what()));
  }
  Reader r{"schedule"};
  r.only_keys(j, {"format", "stages", "autoscheduler", "layouts", "bound_outputs", "origin"});
  Schedule s;
  s.format = r.small_int(j, "format");
  if (s.format != kFormatVersion)
    r.fail(fmt::format("format {} is not supported (this tensorsched reads format {})", s.format, kFormatVersion));
  const json& st = r.need(j, "stages");
  if (!st.is_array()) r.fail("field 'stages' must be an array");
  for (size_t i = 0; i < st.size(); i++) {
    StageSchedule ss = stage_from_json(st[i], i);
    if (s.find(ss.func, ss.definition)) r.fail(fmt::format("stage '{}' appears twice", ss.name()));
    s.set(std::move(ss));
  }
  if (j.contains("autoscheduler")) s.autoscheduler = recipe_from_json(j["autoscheduler"]);
  if (j.contains("origin")) s.origin = origin_from_json(j["origin"]);
  if (j.contains("bound_outputs")) {
    if (!j["bound_outputs"].is_boolean()) r.fail("field 'bound_outputs' must be a boolean");
    s.bound_outputs = j["bound_outputs"].get<bool>();
  }
  if (j.contains("layouts")) {
    const json& ls = j["layouts"];
    if (!ls.is_array()) r.fail("field 'layouts' must be an array");
    for (size_t i = 0; i < ls.size(); i++) {
      Reader rl{fmt::format("schedule layout {}", i)};
      rl.only_keys(ls[i], {"input", "dim", "block"});
      InputLayout l{rl.str(ls[i], "input"), rl.small_int(ls[i], "dim"), rl.small_int(ls[i], "block")};
      if (find_layout(s.layouts, l.input)) r.fail(fmt::format("input '{}' has two layouts", l.input));
      s.layouts.push_back(l);
    }
  }
  return s.canonical();
}

std::string Schedule::hash() const {
  if (!origin) return fnv1a_hex(to_json());
  Schedule decisions = *this;
  decisions.origin.reset();
  return fnv1a_hex(decisions.to_json());
}

std::string Schedule::to_halide_source() const {
  std::string out;
  auto joined = [](const std::map<std::string, std::string>& params) {
    std::string p;
    for (const auto& [k, v] : params) p += fmt::format("{}{}={}", p.empty() ? "" : ", ", k, v);
    return p;
  };
  if (autoscheduler) {
    const std::string params = joined(autoscheduler->params);
    out += fmt::format("// autoscheduler {} ({})\n", autoscheduler->name, params.empty() ? "default parameters" : params);
  }
  if (origin) {
    const std::string params = joined(origin->params);
    out += fmt::format("// made by {} ({})\n", origin->generator, params.empty() ? "no parameters" : params);
  }
  for (const auto& s : canonical().stages) out += stage_source(s);
  // A layout changes the calling convention, not a Func: the input is packed at load and its
  // wrapper reads the packed buffer.
  for (const auto& l : canonical().layouts)
    out += fmt::format("// {} packed at load: Halide dim {} split by {}, the block innermost; reads become {}(x{} % {}, ..., x{} / {}, ...)\n",
                       l.input, l.dim, l.block, ident(l.input), l.dim, l.block, l.dim, l.block);
  return out;
}

}  // namespace ts
