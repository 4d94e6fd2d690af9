#include "schedule/restructure.h"

#include <fmt/format.h>

#include <algorithm>

namespace ts {

using Halide::Internal::Function;

std::map<std::string, Function> pipeline_funcs(const std::vector<Halide::Func>& outputs) {
  std::map<std::string, Function> env;
  for (const auto& o : outputs) {
    env.emplace(o.name(), o.function());
    for (auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) env.emplace(name, fn);
  }
  return env;
}

std::map<std::string, Halide::Internal::Parameter> pipeline_buffers(const std::map<std::string, Function>& env) {
  struct Buffers : Halide::Internal::IRGraphVisitor {
    std::map<std::string, Halide::Internal::Parameter> found;
    using IRGraphVisitor::visit;
    void visit(const Halide::Internal::Call* op) override {
      if (op->param.defined() && op->param.is_buffer()) found.emplace(op->param.name(), op->param);
      IRGraphVisitor::visit(op);
    }
  } buffers;
  for (const auto& [name, fn] : env) fn.accept(&buffers);
  return buffers.found;
}

std::vector<Halide::Func> copy_pipeline(const std::vector<Halide::Func>& outputs) {
  std::vector<Function> outs;
  for (const auto& o : outputs) outs.push_back(o.function());
  const auto copied = Halide::Internal::deep_copy(outs, pipeline_funcs(outputs));
  std::vector<Halide::Func> out;
  for (const auto& f : copied.first) out.emplace_back(f);
  return out;
}

namespace {

// The Func of the pipeline the schedule names `base`, or nullopt.
std::optional<Function> find_func(const std::vector<Halide::Func>& outputs, const std::string& base, const Restructured& done) {
  for (const auto& [name, fn] : pipeline_funcs(outputs)) {
    const auto made = done.names.find(name);
    if ((made != done.names.end() ? made->second : func_base_name(name)) == base) return fn;
  }
  return std::nullopt;
}

bool calls(const Function& consumer, const std::string& callee) {
  for (const auto& [name, fn] : Halide::Internal::find_direct_calls(consumer))
    if (name == callee) return true;
  return false;
}

}  // namespace

std::optional<std::string> restructure(const Schedule& s, const std::vector<Halide::Func>& outputs, Restructured& done) {
  for (const auto& ss : s.canonical().stages) {
    if (!ss.restructures()) continue;
    const auto fn = find_func(outputs, ss.func, done);
    if (!fn) return fmt::format("stage '{}': no Func '{}' in the pipeline", ss.name(), ss.func);
    Halide::Func f(*fn);
    try {
      if (!ss.rfactor.empty()) {
        if (ss.definition < 1 || ss.definition > f.num_update_definitions())
          return fmt::format("stage '{}': rfactor applies to an update definition of '{}'", ss.name(), ss.func);
        std::vector<std::pair<Halide::RVar, Halide::Var>> pairs;
        for (const auto& p : ss.rfactor) pairs.emplace_back(Halide::RVar(p.rvar), Halide::Var(p.var));
        const Halide::Func made = f.update(ss.definition - 1).rfactor(pairs);
        done.changed.insert(ss.func);
        done.changed.insert(rfactor_func_name(ss.func));
        done.names[made.name()] = rfactor_func_name(ss.func);
      }
      for (const auto& c : ss.staged_for) {
        const auto consumer = find_func(outputs, c, done);
        if (!consumer || !calls(*consumer, fn->name()))
          return fmt::format("stage '{}': a staging copy for '{}', which does not read '{}'", ss.name(), c, ss.func);
        done.names[f.in(Halide::Func(*consumer)).name()] = staged_copy_name(ss.func, c);
      }
    } catch (const Halide::Error& e) {
      std::string m = e.what();
      std::replace(m.begin(), m.end(), '\n', ' ');
      return fmt::format("stage '{}': Halide rejected {}: {}", ss.name(), ss.rfactor.empty() ? "the staging copy" : "rfactor", m);
    }
  }
  return std::nullopt;
}

void call_staged_copies(const std::vector<Halide::Func>& outputs) {
  Halide::Internal::wrap_func_calls(pipeline_funcs(outputs));  // rewrites the Functions' definitions in place
}

}  // namespace ts
