#include "schedule/default_schedule.h"

#include <map>
#include <set>

namespace ts {

namespace {

using Halide::Internal::Function;

constexpr int64_t kMinParallelTasks = 8;  // fuse outer loops until there are this many tasks

// True when f's value is g(args...) with f's own arguments: a rename that costs nothing inline.
bool is_rename(const Function& f) {
  if (f.has_update_definition() || f.values().size() != 1) return false;
  const auto* call = f.values()[0].as<Halide::Internal::Call>();
  if (!call || call->args.size() != f.args().size()) return false;
  for (size_t i = 0; i < call->args.size(); i++) {
    const auto* v = call->args[i].as<Halide::Internal::Variable>();
    if (!v || v->name != f.args()[i]) return false;
  }
  return true;
}

// Extent of each pure argument (innermost first) from the Func's estimates; 0 when unknown.
std::vector<int64_t> extents(const Function& f) {
  std::vector<int64_t> e(f.args().size(), 0);
  for (const auto& b : f.schedule().estimates())
    for (size_t i = 0; i < f.args().size(); i++)
      if (f.args()[i] == b.var) {
        if (const int64_t* v = Halide::Internal::as_const_int(b.extent)) e[i] = *v;
      }
  return e;
}

template <typename StageT>
void vectorize_and_parallelize(StageT s, const std::vector<Halide::Var>& args, const std::vector<int64_t>& ext,
                               int width, bool vectorize_inner) {
  const int n = static_cast<int>(args.size());
  if (n == 0) return;
  if (vectorize_inner) s.vectorize(args[0], width, Halide::TailStrategy::GuardWithIf);
  // Outer loops (all but the innermost, unless it is the only one), fused outermost-first.
  int lo = n - 1;
  int64_t tasks = std::max<int64_t>(ext[n - 1], 1);
  while (tasks < kMinParallelTasks && lo > 1) tasks *= std::max<int64_t>(ext[--lo], 1);
  if (tasks < 2) return;
  Halide::VarOrRVar outer = args[n - 1];
  for (int k = n - 2; k >= lo; k--) {
    Halide::Var fused(args[n - 1].name() + "_" + args[k].name() + "_f");
    s.fuse(outer, args[k], fused);
    outer = fused;
  }
  s.parallel(outer);
}

void schedule_root(Halide::Func f, const Halide::Target& target) {
  const Function& fn = f.function();
  const std::vector<int64_t> ext = extents(fn);
  const std::vector<Halide::Var> args = f.args();
  const int width = target.natural_vector_size(f.output_types()[0]);
  const bool vec = !args.empty() && ext[0] * 2 >= width;
  f.compute_root();
  vectorize_and_parallelize(f, args, ext, width, vec);
  for (int u = 0; u < f.num_update_definitions(); u++) {
    Halide::Stage st = f.update(u);
    // Loop order, innermost first: vector loop, reduction loops, other pure loops.
    std::vector<Halide::VarOrRVar> order;
    if (!args.empty()) order.push_back(args[0]);
    for (const auto& rv : fn.update(u).schedule().rvars()) order.push_back(Halide::RVar(rv.var));
    for (size_t k = 1; k < args.size(); k++) order.push_back(args[k]);
    if (order.size() > 1) st.reorder(order);
    vectorize_and_parallelize(st, args, ext, width, vec);
  }
}

}  // namespace

void apply_default_schedule(const std::vector<Halide::Func>& outputs, const Halide::Target& target) {
  std::map<std::string, Function> env;
  for (const auto& o : outputs) {
    env[o.name()] = o.function();
    for (auto& [name, fn] : Halide::Internal::find_transitive_calls(o.function())) env[name] = fn;
  }
  // Which stages are read by a reduction (their values would be recomputed in its loops).
  std::set<std::string> read_by_reduction;
  for (auto& [name, fn] : env)
    if (fn.has_update_definition())
      for (auto& [callee, cfn] : Halide::Internal::find_direct_calls(fn)) read_by_reduction.insert(callee);
  std::set<std::string> output_names;
  for (const auto& o : outputs) output_names.insert(o.name());
  for (auto& [name, fn] : env) {
    const bool root = output_names.count(name) || fn.has_update_definition() ||
                      (read_by_reduction.count(name) && !is_rename(fn));
    if (root) schedule_root(Halide::Func(fn), target);
  }
}

}  // namespace ts
