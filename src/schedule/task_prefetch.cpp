#include "schedule/task_prefetch.h"

#include <spdlog/spdlog.h>

#include <map>
#include <nlohmann/json.hpp>

namespace ts {

namespace {

using namespace Halide::Internal;
using Halide::Expr;

constexpr const char* kTagPrefix = "tensorsched.task_prefetch ";
constexpr int64_t kLineBytes = 64;

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Inserts one request's prefetches (see task_prefetch.h). The loops inside the parallel loop
// are tracked from it down; the first loop of the spread stage whose chunk is small enough gets
// the prefetches at the top of its body, and no loop inside it does.
class TaskPrefetchInserter : public IRMutator {
 public:
  explicit TaskPrefetchInserter(TaskPrefetch req) : req_(std::move(req)) {}
  int sites = 0;  // loops that received prefetches

 private:
  using IRMutator::visit;

  struct Loop {
    std::string name;  // its variable
    Expr min;          // its first value
    int64_t extent;    // its iterations (0: not a constant)
  };

  TaskPrefetch req_;
  std::optional<Loop> task_;  // the parallel loop, while inside it
  std::vector<Loop> loops_;   // the loops inside it, outermost first, down to the current one
  bool placed_ = false;       // an enclosing loop has the prefetches

  bool is_task_loop(const For* op) const {
    return starts_with(op->name, req_.task_func + ".s0.") && ends_with(op->name, "." + req_.task_loop);
  }

  // Iterations of loops_ in all, 0 when one is not a constant.
  int64_t chunks() const {
    int64_t n = 1;
    for (const Loop& l : loops_) n = l.extent > 0 ? n * l.extent : 0;
    return n;
  }

  // One llvm.prefetch of the byte `offset` of the buffer (read, the request's locality; an extern
  // call Halide's code generator binds to the LLVM intrinsic, inlined).
  Stmt prefetch_at(const Expr& base, const Expr& offset) const {
    const Expr address = Call::make(Halide::Handle(), Call::reinterpret, {base + Halide::cast<uint64_t>(offset)}, Call::PureIntrinsic);
    return Evaluate::make(Call::make(Halide::Int(32), "llvm.prefetch.p0i8", {address, 0, req_.locality, 1}, Call::Extern));
  }

  // The prefetches of chunk c of n of the next task's slice, c the current iteration's position
  // among all iterations of loops_ (outermost slowest): one per cache line, none for a chunk that
  // starts past the slice; with walk_ahead_tasks, one more at the same place of the slice that
  // many tasks past the next one, where that place is among a page's first `chunk` bytes (once a
  // page).
  Stmt prefetches(int64_t n) const {
    const int64_t chunk = ((req_.task_bytes + n - 1) / n + kLineBytes - 1) / kLineBytes * kLineBytes;
    Expr c = Halide::cast<int64_t>(0);
    for (const Loop& l : loops_)
      c = c * Expr(l.extent) + Halide::cast<int64_t>(Variable::make(Halide::Int(32), l.name) - l.min);
    const Expr next = Halide::cast<int64_t>(Variable::make(Halide::Int(32), task_->name) - task_->min) + 1;
    const Expr begin = simplify(next * Expr(req_.task_bytes) + c * Expr(chunk));
    const Expr limit = simplify(Halide::min((next + 1) * Expr(req_.task_bytes), Expr(req_.buffer_bytes)));
    const Expr base = Call::make(Halide::UInt(64), Call::reinterpret, {Variable::make(Halide::Handle(), req_.buffer)},
                                 Call::PureIntrinsic);
    std::vector<Stmt> lines;
    // Lines past the slice's end (less than a chunk) are left in: a prefetch never faults.
    for (int64_t off = 0; off < chunk; off += kLineBytes) lines.push_back(prefetch_at(base, begin + Expr(off)));
    Stmt s = IfThenElse::make(begin < limit, Block::make(lines));
    if (req_.walk_ahead_tasks <= 0) return s;
    const Expr far = simplify(begin + Expr(int64_t{req_.walk_ahead_tasks} * req_.task_bytes));
    const Expr in_page = (base + Halide::cast<uint64_t>(far)) % Expr(uint64_t{kPageBytes});
    return Block::make(s, IfThenElse::make(far < Expr(req_.buffer_bytes) && in_page < Expr(uint64_t(chunk)), prefetch_at(base, far)));
  }

  Stmt visit(const For* op) override {
    if (!task_) {
      if (!is_task_loop(op)) return IRMutator::visit(op);
      task_ = Loop{op->name, op->min, 0};
      Stmt s = IRMutator::visit(op);
      task_.reset();
      return s;
    }
    const int64_t* extent = as_const_int(simplify(op->extent));
    loops_.push_back({op->name, op->min, extent ? *extent : 0});
    const int64_t n = chunks();
    const bool here = !placed_ && starts_with(op->name, req_.spread_stage + ".") && n > 0 &&
                      (req_.task_bytes + n - 1) / n <= kMaxPrefetchChunkBytes;
    const bool was_placed = placed_;
    placed_ = placed_ || here;
    Stmt body = mutate(op->body);
    placed_ = was_placed;
    if (here) {
      body = Block::make(prefetches(n), body);
      sites++;
    }
    loops_.pop_back();
    return For::make(op->name, op->min, op->extent, op->for_type, op->device_api, body);
  }
};

// Whether s loads from the buffer `name` (its host pointer is then bound in the lowered code).
bool loads_from(const Stmt& s, const std::string& name) {
  struct Finder : IRGraphVisitor {
    std::string name;
    bool found = false;
    using IRGraphVisitor::visit;
    void visit(const Load* op) override {
      found = found || op->name == name;
      IRGraphVisitor::visit(op);
    }
  } f;
  f.name = name;
  s.accept(&f);
  return f.found;
}

// The pass as Halide runs it; logs when it found nowhere to insert (the code is then the same as
// without the request).
class TaskPrefetchPass : public IRMutator {
 public:
  explicit TaskPrefetchPass(TaskPrefetch req) : req_(std::move(req)) {}
  using IRMutator::mutate;
  Stmt mutate(const Stmt& s) override {
    int sites = 0;
    Stmt out = insert_task_prefetch(s, req_, &sites);
    if (sites == 0)
      spdlog::debug("task prefetch: no loop of {} inside {}'s parallel loop {} takes chunks of the next task's {} bytes of {}",
                    req_.spread_stage, req_.task_func, req_.task_loop, req_.task_bytes, req_.buffer);
    return out;
  }

 private:
  TaskPrefetch req_;
};

}  // namespace

std::string TaskPrefetch::to_tag() const {
  const nlohmann::json j = {{"task_loop", task_loop}, {"task_func", task_func},   {"spread_stage", spread_stage},
                            {"buffer", buffer},       {"task_bytes", task_bytes}, {"buffer_bytes", buffer_bytes},
                            {"locality", locality},   {"walk_ahead_tasks", walk_ahead_tasks}};
  return kTagPrefix + j.dump();
}

std::optional<TaskPrefetch> TaskPrefetch::from_tag(const std::string& tag) {
  if (!starts_with(tag, kTagPrefix)) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(tag.substr(std::string(kTagPrefix).size()), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  TaskPrefetch r;
  try {
    r.task_loop = j.at("task_loop").get<std::string>();
    r.task_func = j.at("task_func").get<std::string>();
    r.spread_stage = j.at("spread_stage").get<std::string>();
    r.buffer = j.at("buffer").get<std::string>();
    r.task_bytes = j.at("task_bytes").get<int64_t>();
    r.buffer_bytes = j.at("buffer_bytes").get<int64_t>();
    r.locality = j.at("locality").get<int>();
    r.walk_ahead_tasks = j.at("walk_ahead_tasks").get<int>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  if (r.task_bytes <= 0 || r.buffer_bytes <= 0 || r.walk_ahead_tasks < 0) return std::nullopt;
  return r;
}

void request_task_prefetch(Halide::Func f, const TaskPrefetch& req) { f.add_trace_tag(req.to_tag()); }

std::vector<TaskPrefetch> task_prefetch_requests(const std::vector<Halide::Func>& outputs) {
  std::map<std::string, Function> env;
  for (const auto& o : outputs) {
    env.emplace(o.name(), o.function());
    for (auto& [name, f] : find_transitive_calls(o.function())) env.emplace(name, f);
  }
  std::vector<TaskPrefetch> out;
  for (auto& [name, f] : env)
    for (const auto& tag : f.get_trace_tags())
      if (auto r = TaskPrefetch::from_tag(tag)) out.push_back(*r);
  return out;
}

int add_task_prefetch_passes(Halide::Pipeline& p, const std::vector<Halide::Func>& outputs) {
  const std::vector<TaskPrefetch> reqs = task_prefetch_requests(outputs);
  for (const auto& r : reqs) p.add_custom_lowering_pass(new TaskPrefetchPass(r));
  return static_cast<int>(reqs.size());
}

Stmt insert_task_prefetch(const Stmt& s, const TaskPrefetch& req, int* sites) {
  if (sites) *sites = 0;
  if (!loads_from(s, req.buffer)) return s;
  TaskPrefetchInserter pass(req);
  Stmt out = pass.mutate(s);
  if (sites) *sites = pass.sites;
  return out;
}

}  // namespace ts
