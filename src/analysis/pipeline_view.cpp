#include "analysis/pipeline_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

namespace ts {

namespace {

namespace HI = Halide::Internal;
using Halide::Expr;
using HI::Function;

std::string type_name(Halide::Type t) {
  if (t.is_bool()) return "bool";
  if (t.is_float()) return fmt::format("float{}", t.bits());
  if (t.is_uint()) return fmt::format("uint{}", t.bits());
  if (t.is_int()) return fmt::format("int{}", t.bits());
  return "handle";
}

// Constant value of e after simplification, if it has one.
std::optional<int64_t> const_value(const Expr& e) {
  if (!e.defined()) return std::nullopt;
  Expr s = HI::simplify(e);
  if (const int64_t* v = HI::as_const_int(s)) return *v;
  if (const uint64_t* u = HI::as_const_uint(s)) return static_cast<int64_t>(*u);
  return std::nullopt;
}

int64_t product(const std::vector<Loop>& loops) {
  int64_t p = 1;
  for (const auto& l : loops) p *= l.extent;  // an unknown (0) extent makes the product unknown
  return p;
}

// --- affine index extraction -------------------------------------------------------------

struct Linear {
  std::map<std::string, int64_t> coeffs;  // loop name -> coefficient
  int64_t constant = 0;
};

// e as an affine form of the loop variables: Add/Sub/Mul-by-constant/Variable/IntImm and
// integer casts. Anything else (min/max from clamps, select, div, loads) is not affine.
std::optional<Linear> linear(const Expr& e, const std::set<std::string>& loops) {
  if (const auto* i = e.as<HI::IntImm>()) return Linear{{}, i->value};
  if (const auto* u = e.as<HI::UIntImm>()) return Linear{{}, static_cast<int64_t>(u->value)};
  if (const auto* v = e.as<HI::Variable>()) {
    if (!loops.count(v->name)) return std::nullopt;  // a Param or let variable: unknown value
    return Linear{{{v->name, 1}}, 0};
  }
  if (const auto* c = e.as<HI::Cast>()) {
    if (!c->type.is_int_or_uint() || !c->value.type().is_int_or_uint()) return std::nullopt;
    return linear(c->value, loops);
  }
  auto combine = [&](const Expr& a, const Expr& b, int64_t sign) -> std::optional<Linear> {
    auto la = linear(a, loops), lb = linear(b, loops);
    if (!la || !lb) return std::nullopt;
    for (const auto& [n, k] : lb->coeffs) la->coeffs[n] += sign * k;
    la->constant += sign * lb->constant;
    return la;
  };
  if (const auto* a = e.as<HI::Add>()) return combine(a->a, a->b, 1);
  if (const auto* s = e.as<HI::Sub>()) return combine(s->a, s->b, -1);
  if (const auto* m = e.as<HI::Mul>()) {
    auto la = linear(m->a, loops), lb = linear(m->b, loops);
    if (!la || !lb) return std::nullopt;
    if (!la->coeffs.empty() && !lb->coeffs.empty()) return std::nullopt;  // product of loops
    const Linear& var = la->coeffs.empty() ? *lb : *la;
    const int64_t k = la->coeffs.empty() ? la->constant : lb->constant;
    Linear r{{}, var.constant * k};
    for (const auto& [n, c] : var.coeffs) r.coeffs[n] = c * k;
    return r;
  }
  return std::nullopt;
}

struct VarNames : HI::IRGraphVisitor {
  std::set<std::string> names;
  using IRGraphVisitor::visit;
  void visit(const HI::Variable* op) override { names.insert(op->name); }
};

// One producer index (or store index) over a definition's loops. Plain simplification first
// (the simplifier would fold a loop of extent 1 to 0); when that is not affine, again with the
// loop ranges known, so a clamp that never binds disappears.
AccessDim analyse_index(const Expr& e, const std::vector<Loop>& loops, const HI::Scope<HI::Interval>& scope) {
  std::set<std::string> names;
  for (const auto& l : loops) names.insert(l.name);
  Expr s = HI::simplify(e);
  std::optional<Linear> lin = linear(s, names);
  if (!lin) {
    s = HI::simplify(e, true, scope);
    lin = linear(s, names);
  }
  AccessDim d;
  std::ostringstream os;
  os << s;
  d.expr = os.str();
  VarNames vn;
  s.accept(&vn);
  for (size_t k = 0; k < loops.size(); k++)
    if (vn.names.count(loops[k].name)) d.depends_on.push_back(static_cast<int>(k));
  d.coeffs.assign(loops.size(), 0);
  // A panel index (x / c) reads as such before the loop ranges fold it (x / 16 over 16 lanes is 0).
  const Expr plain = HI::simplify(e);
  if (const auto* div = plain.as<HI::Div>()) {
    const auto* v = div->a.as<HI::Variable>();
    const int64_t* c = HI::as_const_int(div->b);
    for (size_t k = 0; v && c && *c > 1 && k < loops.size(); k++)
      if (loops[k].name == v->name) d.div_loop = static_cast<int>(k), d.divisor = *c;
  }
  if (lin) {
    d.affine = true;
    d.constant = lin->constant;
    for (size_t k = 0; k < loops.size(); k++) {
      auto it = lin->coeffs.find(loops[k].name);
      if (it != lin->coeffs.end()) d.coeffs[k] = it->second;
    }
  }
  return d;
}

// --- IR walks ----------------------------------------------------------------------------

bool is_load(const HI::Call* op) { return op->call_type == HI::Call::Halide || op->call_type == HI::Call::Image; }

// Every call to a Func or input in an expression (a tree walk: each call site).
struct CallSites : HI::IRVisitor {
  std::vector<Expr> calls;
  using IRVisitor::visit;
  void visit(const HI::Call* op) override {
    if (is_load(op)) calls.emplace_back(op);
    IRVisitor::visit(op);
  }
};

// Inputs (ImageParams, Buffers) read by an expression.
struct InputCalls : HI::IRGraphVisitor {
  std::map<std::string, const HI::Call*>* found = nullptr;
  using IRGraphVisitor::visit;
  void visit(const HI::Call* op) override {
    if (op->call_type == HI::Call::Image) found->emplace(op->name, op);
    IRGraphVisitor::visit(op);
  }
};

// Op histogram of one expression (after CSE, so each let value counts once).
struct OpCounter : HI::IRVisitor {
  OpHistogram* h = nullptr;
  std::string self;  // the stage's own name: its reads are accumulator loads
  using IRVisitor::visit;

  enum Kind { F, I, B };
  static Kind kind(Halide::Type t) { return t.is_bool() ? B : t.is_float() ? F : I; }
  using O = OpHistogram;
  void arith(Halide::Type t, int64_t O::*f, int64_t O::*i) {
    const Kind k = kind(t);
    (k == F ? h->*f : k == I ? h->*i : h->bool_ops)++;
  }
  template <typename Node>
  void count(const Node* op, Halide::Type t, int64_t O::*f, int64_t O::*i) {
    arith(t, f, i);
    IRVisitor::visit(op);
  }
  void visit(const HI::Add* op) override { count(op, op->type, &O::f_add, &O::i_add); }
  void visit(const HI::Sub* op) override { count(op, op->type, &O::f_sub, &O::i_add); }
  void visit(const HI::Mul* op) override { count(op, op->type, &O::f_mul, &O::i_mul); }
  void visit(const HI::Div* op) override { count(op, op->type, &O::f_div, &O::i_divmod); }
  void visit(const HI::Mod* op) override { count(op, op->type, &O::f_div, &O::i_divmod); }
  void visit(const HI::Min* op) override { count(op, op->type, &O::f_minmax, &O::i_minmax); }
  void visit(const HI::Max* op) override { count(op, op->type, &O::f_minmax, &O::i_minmax); }
  // Comparisons count by operand type (bool operands: bool ops); selects by value type.
  void visit(const HI::EQ* op) override { count(op, op->a.type(), &O::f_cmp, &O::i_cmp); }
  void visit(const HI::NE* op) override { count(op, op->a.type(), &O::f_cmp, &O::i_cmp); }
  void visit(const HI::LT* op) override { count(op, op->a.type(), &O::f_cmp, &O::i_cmp); }
  void visit(const HI::LE* op) override { count(op, op->a.type(), &O::f_cmp, &O::i_cmp); }
  void visit(const HI::GT* op) override { count(op, op->a.type(), &O::f_cmp, &O::i_cmp); }
  void visit(const HI::GE* op) override { count(op, op->a.type(), &O::f_cmp, &O::i_cmp); }
  void visit(const HI::Select* op) override { count(op, op->type, &O::f_select, &O::i_select); }
  void visit(const HI::And* op) override { h->bool_ops++; IRVisitor::visit(op); }
  void visit(const HI::Or* op) override { h->bool_ops++; IRVisitor::visit(op); }
  void visit(const HI::Not* op) override { h->bool_ops++; IRVisitor::visit(op); }
  void visit(const HI::Cast* op) override { h->casts++; IRVisitor::visit(op); }
  void visit(const HI::Call* op) override {
    using C = HI::Call;
    if (is_load(op)) {
      h->loads++;
      if (op->name == self) h->self_loads++;
    } else if (op->is_tag() || op->is_intrinsic({C::bundle, C::promise_clamped, C::unsafe_promise_clamped})) {
      // annotations: no work
    } else if (op->is_intrinsic({C::shift_left, C::shift_right})) {
      h->i_shift++;
    } else if (op->is_intrinsic({C::bitwise_and, C::bitwise_or, C::bitwise_xor, C::bitwise_not})) {
      (op->type.is_bool() ? h->bool_ops : h->i_bit)++;
    } else if (op->is_intrinsic({C::if_then_else, C::mux, C::select_mask})) {
      arith(op->type, &O::f_select, &O::i_select);
    } else if (op->is_intrinsic(C::reinterpret)) {
      h->casts++;
    } else if (op->is_intrinsic(C::abs) && !op->type.is_float() && !op->args.empty() &&
               !op->args[0].type().is_float()) {
      h->i_minmax++;
    } else {
      // exp/log/sqrt/pow/trig/floor/... (PureExtern) and other intrinsics
      const bool fl = op->type.is_float() || (!op->args.empty() && op->args[0].type().is_float());
      (fl ? h->f_math : h->i_other)++;
    }
    IRVisitor::visit(op);
  }
};

// ImageParam::operator() reads through an implicit wrapper Func "<param>_im" (a pure rename of
// the parameter). The view folds it into the input: consumers read the ImageParam directly.
using Wrappers = std::map<std::string, HI::Parameter>;  // wrapper Func name -> its ImageParam

struct FoldWrappers : HI::IRMutator {
  const Wrappers* wrappers = nullptr;
  using IRMutator::visit;
  Expr visit(const HI::Call* op) override {
    auto it = op->call_type == HI::Call::Halide ? wrappers->find(op->name) : wrappers->end();
    if (it == wrappers->end()) return IRMutator::visit(op);
    return HI::Call::make(it->second, mutate(op->args));
  }
};

// The ImageParam f wraps, when f is that implicit wrapper.
std::optional<HI::Parameter> wrapped_param(const Function& f) {
  if (!f.is_pure() || f.values().size() != 1) return std::nullopt;
  const auto* call = f.values()[0].as<HI::Call>();
  if (!call || call->call_type != HI::Call::Image || !call->param.defined()) return std::nullopt;
  if (f.name().rfind(call->param.name() + "_im", 0) != 0 || call->args.size() != f.args().size()) return std::nullopt;
  for (size_t i = 0; i < call->args.size(); i++) {
    const auto* v = call->args[i].as<HI::Variable>();
    if (!v || v->name != f.args()[i]) return std::nullopt;
  }
  return call->param;
}

// --- analysis state ----------------------------------------------------------------------

// Expressions of one definition, lets substituted (index analysis needs them inline).
struct DefExprs {
  std::vector<Expr> values;   // right-hand sides
  std::vector<Expr> args;     // left-hand side indices (updates only; pure args are loops)
  Expr predicate;             // RDom::where, undefined when none
  std::vector<HI::ReductionVariable> rvars;  // reduction domain
};

std::vector<DefExprs> definitions_of(const Function& f, const Wrappers& wrappers) {
  std::vector<DefExprs> out;
  if (f.has_extern_definition()) return out;
  FoldWrappers fold;
  fold.wrappers = &wrappers;
  auto prepare = [&](const Expr& e) { return fold.mutate(HI::substitute_in_all_lets(e)); };
  auto add = [&](const HI::Definition& d, bool update) {
    DefExprs e;
    for (const auto& v : d.values()) e.values.push_back(prepare(v));
    if (update)
      for (const auto& a : d.args()) e.args.push_back(prepare(a));
    if (d.predicate().defined() && !HI::is_const_one(d.predicate())) e.predicate = prepare(d.predicate());
    e.rvars = d.schedule().rvars();
    out.push_back(std::move(e));
  };
  add(f.definition(), false);
  for (const auto& u : f.updates()) add(u, true);
  return out;
}

std::vector<Expr> all_exprs(const DefExprs& d) {
  std::vector<Expr> all = d.values;
  all.insert(all.end(), d.args.begin(), d.args.end());
  if (d.predicate.defined()) all.push_back(d.predicate);
  return all;
}

// Func's pure args with their estimates (extent 0 where there is none).
std::vector<Loop> estimated_dims(const Function& f, bool& all_known) {
  std::vector<Loop> dims;
  all_known = true;
  for (const auto& a : f.args()) {
    Loop l{a, 0, 0, false};
    for (const auto& b : f.schedule().estimates())
      if (b.var == a) {
        l.min = const_value(b.min).value_or(0);
        l.extent = const_value(b.extent).value_or(0);
      }
    all_known &= l.extent > 0;
    dims.push_back(l);
  }
  return dims;
}

// What a Func renames: its only value (wrappers folded) is a call at exactly its own args.
std::string rename_target(const Function& f, const std::vector<DefExprs>& defs) {
  if (!f.is_pure() || defs.size() != 1 || defs[0].values.size() != 1) return "";
  const auto* call = defs[0].values[0].as<HI::Call>();
  if (!call || !is_load(call) || call->args.size() != f.args().size()) return "";
  for (size_t i = 0; i < call->args.size(); i++) {
    const auto* v = call->args[i].as<HI::Variable>();
    if (!v || v->name != f.args()[i]) return "";
  }
  return call->name;
}

// What a Func copies: its only value (wrappers folded) is one load, at any index.
std::string copy_target(const Function& f, const std::vector<DefExprs>& defs) {
  if (!f.is_pure() || defs.size() != 1 || defs[0].values.size() != 1) return "";
  const auto* call = defs[0].values[0].as<HI::Call>();
  return call && is_load(call) ? call->name : "";
}

// Union of ranges per dimension (extent 0 = nothing yet).
void include_range(std::vector<Range>& acc, size_t dim, int64_t lo, int64_t hi) {
  if (acc.size() <= dim) acc.resize(dim + 1);
  Range& r = acc[dim];
  if (r.extent == 0) {
    r = {lo, hi - lo + 1};
  } else {
    const int64_t nlo = std::min(r.min, lo), nhi = std::max(r.min + r.extent - 1, hi);
    r = {nlo, nhi - nlo + 1};
  }
}

constexpr int64_t kHugeExtent = int64_t{1} << 30;

// Constant [lo, hi] of a footprint interval. A data-dependent index is bounded by its type at
// best: a huge interval counts as unbounded.
bool constant_bounds(const HI::Interval& b, int64_t& lo, int64_t& hi) {
  if (!b.is_bounded()) return false;
  const std::optional<int64_t> l = const_value(b.min), h = const_value(b.max);
  if (!l.has_value() || !h.has_value()) return false;
  lo = l.value();
  hi = h.value();
  return hi >= lo && hi - lo < kHugeExtent;
}

// Producer dims known so far (stages processed later in the reverse walk keep their estimates).
using DimsOf = std::map<std::string, const std::vector<Loop>*>;

// Analyses one definition of stage `st`: loops, store, ops, call sites into `edges` (by
// producer), footprints.
void analyse_definition(Stage& st, int index, const DefExprs& de, const DimsOf& dims_of,
                        std::map<std::string, Edge>& edges) {
  Definition def;
  def.index = index;
  // Pure loops: every arg of the pure definition; for updates the args that are the pure var
  // itself at its own position (Halide's rule for pure vars in updates).
  for (size_t k = 0; k < st.dims.size(); k++) {
    bool used = index == 0;
    if (!used) {
      const auto* v = de.args[k].as<HI::Variable>();
      used = v && v->name == st.dims[k].name;
    }
    if (used) def.loops.push_back(st.dims[k]);
  }
  for (const auto& rv : de.rvars)
    def.loops.push_back(Loop{rv.var, const_value(rv.min).value_or(0), const_value(rv.extent).value_or(0), true});
  def.points = product(def.loops);
  def.has_predicate = de.predicate.defined();

  HI::Scope<HI::Interval> scope;
  for (const auto& l : def.loops)
    if (l.extent > 0)
      scope.push(l.name, HI::Interval(Expr(static_cast<int>(l.min)), Expr(static_cast<int>(l.min + l.extent - 1))));

  for (size_t k = 0; k < st.dims.size(); k++) {
    if (index == 0) {
      AccessDim d;
      d.affine = true;
      d.coeffs.assign(def.loops.size(), 0);
      d.coeffs[k] = 1;
      d.depends_on = {static_cast<int>(k)};
      d.expr = st.dims[k].name;
      def.store.push_back(d);
    } else {
      def.store.push_back(analyse_index(de.args[k], def.loops, scope));
    }
  }

  const std::vector<Expr> exprs = all_exprs(de);
  // Op histogram of what the generated code computes: simplified (x * 1, true && c are free),
  // common subexpressions once.
  OpCounter oc;
  oc.h = &def.ops;
  oc.self = st.name;
  // One bundle, so an index shared by the store and the value (a scatter) counts once.
  std::vector<Expr> simplified;
  for (const auto& e : exprs) simplified.push_back(HI::simplify(e));
  Expr bundle = HI::Call::make(Halide::Int(32), HI::Call::bundle, simplified, HI::Call::PureIntrinsic);
  HI::common_subexpression_elimination(bundle).accept(&oc);
  def.ops.stores = static_cast<int64_t>(de.values.size());

  // Distinct call sites per producer, ordered by index text for determinism.
  std::map<std::string, std::map<std::string, Access>> sites;
  CallSites cs;
  for (const auto& e : exprs) e.accept(&cs);
  for (const auto& c : cs.calls) {
    const auto* call = c.as<HI::Call>();
    Access a;
    a.definition = index;
    std::string key;
    for (const auto& arg : call->args) {
      a.dims.push_back(analyse_index(arg, def.loops, scope));
      key += a.dims.back().expr + ";";
    }
    sites[call->name].emplace(key, std::move(a));
  }
  for (auto& [producer, by_key] : sites) {
    if (producer == st.name) {
      for (auto& [k, a] : by_key) def.self_accesses.push_back(std::move(a));
      continue;
    }
    Edge& e = edges[producer];
    for (auto& [k, a] : by_key) {
      e.accesses.push_back(std::move(a));
      e.loads += def.points;
    }
  }

  // Footprints: the box of each producer over the loop ranges, per expression, as numbers.
  for (const auto& ex : exprs)
    for (const auto& [producer, box] : HI::boxes_required(ex, scope)) {
      auto it = edges.find(producer);
      if (producer == st.name || it == edges.end()) continue;
      Edge& e = it->second;
      auto dims = dims_of.find(producer);
      for (size_t k = 0; k < box.bounds.size(); k++) {
        int64_t lo = 0, hi = -1;
        if (constant_bounds(box.bounds[k], lo, hi)) {
          include_range(e.footprint, k, lo, hi);
          continue;
        }
        e.footprint_exact = false;  // data-dependent or unknown loop range: the whole producer
        if (dims != dims_of.end() && k < dims->second->size() && (*dims->second)[k].extent > 0) {
          const Loop& l = (*dims->second)[k];
          include_range(e.footprint, k, l.min, l.min + l.extent - 1);
        } else if (e.footprint.size() <= k) {
          e.footprint.resize(k + 1);
        }
      }
    }
  st.definitions.push_back(std::move(def));
}

// Fills unknown extents of `dims` from the footprints of the edges reading `name`.
bool fill_from_consumers(std::vector<Loop>& dims, const std::string& name, const std::vector<Edge>& edges) {
  bool filled = false;
  for (size_t k = 0; k < dims.size(); k++) {
    if (dims[k].extent > 0) continue;
    std::vector<Range> u;
    for (const auto& e : edges)
      if (e.producer == name && k < e.footprint.size() && e.footprint[k].extent > 0)
        include_range(u, 0, e.footprint[k].min, e.footprint[k].min + e.footprint[k].extent - 1);
    if (!u.empty()) {
      dims[k].min = u[0].min;
      dims[k].extent = u[0].extent;
      filled = true;
    }
  }
  return filled;
}

}  // namespace

// JSON of every struct, field names as keys (nlohmann sorts keys: deterministic).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Loop, name, min, extent, reduction)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AccessDim, affine, coeffs, constant, depends_on, expr, div_loop, divisor)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Access, definition, dims)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Range, min, extent)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Edge, producer, consumer, producer_is_input, accesses, footprint, footprint_elements,
                                   footprint_exact, loads)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OpHistogram, f_add, f_sub, f_mul, f_div, f_minmax, f_cmp, f_select, f_math, i_add,
                                   i_mul, i_divmod, i_minmax, i_cmp, i_select, i_shift, i_bit, i_other, bool_ops, casts,
                                   loads, self_loads, stores)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Definition, index, loops, points, has_predicate, store, self_accesses, ops)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Stage, name, is_output, is_rename, rename_of, copy_of, is_extern, dtype, bytes, num_values,
                                   dims, dims_estimated, definitions, elements, points, producers, consumers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(InputTensor, name, is_param, wrapper, dtype, bytes, dims, dims_estimated,
                                   extent_constraints, stride_constraints, elements, consumers)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PipelineView, outputs, stages, inputs, edges)

// Summary text: loops as name:extent (r = reduction), non-zero op counters.
static std::string loops_text(const std::vector<Loop>& ls) {
  std::string s;
  for (const auto& l : ls)
    s += fmt::format("{}{}:{}{}", s.empty() ? "" : " ", l.name, l.extent, l.reduction ? "r" : "");
  return "[" + s + "]";
}
static std::string ops_text(const OpHistogram& h) {
  std::string s;
  const nlohmann::json j = h;
  for (const auto& [name, count] : j.items())
    if (count != 0) s += fmt::format("{}{}={}", s.empty() ? "" : " ", name, count.get<int64_t>());
  return "{" + s + "}";
}

int64_t OpHistogram::float_ops() const {
  return f_add + f_sub + f_mul + f_div + f_minmax + f_cmp + f_select + f_math;
}
int64_t OpHistogram::int_ops() const {
  return i_add + i_mul + i_divmod + i_minmax + i_cmp + i_select + i_shift + i_bit + i_other;
}

// Func names with every producer before its users (Kahn's algorithm); the ready set is ordered
// by name so ties break deterministically.
static std::vector<std::string> producers_first(const std::map<std::string, Function>& env,
                                                std::map<std::string, std::set<std::string>>& deps,
                                                std::map<std::string, std::set<std::string>>& users) {
  std::vector<std::string> order;
  std::map<std::string, size_t> pending;
  std::set<std::string> ready;
  for (auto& [name, fn] : env) {
    pending[name] = deps[name].size();
    if (deps[name].empty()) ready.insert(name);
  }
  while (!ready.empty()) {
    std::string n = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(n);
    for (const auto& u : users[n])
      if (--pending[u] == 0) ready.insert(u);
  }
  return order;
}

// An input read by `call` (a Param's estimates or a Buffer's extents), folded `wrapper` if any.
static InputTensor input_tensor(const std::string& name, const HI::Call& call, const std::string& wrapper) {
  InputTensor in;
  in.name = name;
  in.is_param = call.param.defined();
  in.wrapper = wrapper;
  in.dtype = type_name(call.type);
  in.bytes = call.type.bytes();
  for (size_t k = 0; k < call.args.size(); k++) {
    Loop l{fmt::format("{}.{}", name, k), 0, 0, false};
    const int d = static_cast<int>(k);
    int64_t extent = 0, stride = 0;
    if (in.is_param) {
      l.min = const_value(call.param.min_constraint_estimate(d)).value_or(0);
      l.extent = const_value(call.param.extent_constraint_estimate(d)).value_or(0);
      extent = const_value(call.param.extent_constraint(d)).value_or(0);
      stride = const_value(call.param.stride_constraint(d)).value_or(0);
    } else if (call.image.defined() && d < call.image.dimensions()) {
      l.min = call.image.dim(d).min();
      l.extent = extent = call.image.dim(d).extent();
      stride = call.image.dim(d).stride();
    }
    in.extent_constraints.push_back(extent);
    in.stride_constraints.push_back(stride);
    in.dims_estimated &= l.extent > 0;
    in.dims.push_back(l);
  }
  return in;
}

// Every stage's and input's consumers, sorted, from the view's edges.
static void list_consumers(PipelineView& view) {
  std::map<std::string, std::vector<std::string>*> consumers_of;
  for (auto& s : view.stages) consumers_of[s.name] = &s.consumers;
  for (auto& in : view.inputs) consumers_of[in.name] = &in.consumers;
  for (const auto& e : view.edges)
    if (auto it = consumers_of.find(e.producer); it != consumers_of.end()) it->second->push_back(e.consumer);
  for (auto& s : view.stages) std::sort(s.consumers.begin(), s.consumers.end());
  for (auto& in : view.inputs) std::sort(in.consumers.begin(), in.consumers.end());
}

PipelineView build_pipeline_view(const std::vector<Halide::Func>& outputs) {
  PipelineView view;
  std::map<std::string, Function> env;
  for (const auto& o : outputs) {
    view.outputs.push_back(o.name());
    env.emplace(o.name(), o.function());
    for (auto& [name, fn] : HI::find_transitive_calls(o.function())) env.emplace(name, fn);
  }
  // ImageParam wrappers (not asked for as outputs) are folded into their inputs.
  Wrappers wrappers;
  std::map<std::string, std::string> wrapper_of;  // input name -> wrapper Func name
  for (auto it = env.begin(); it != env.end();) {
    auto param = std::find(view.outputs.begin(), view.outputs.end(), it->first) == view.outputs.end()
                     ? wrapped_param(it->second)
                     : std::nullopt;
    if (!param) {
      ++it;
      continue;
    }
    wrappers.emplace(it->first, *param);
    wrapper_of[param->name()] = it->first;
    it = env.erase(it);
  }
  // Func producers of every Func (an update's read of itself is no dependency).
  std::map<std::string, std::set<std::string>> deps, users;
  for (auto& [name, fn] : env)
    for (auto& [callee, cfn] : HI::find_direct_calls(fn))
      if (callee != name && !wrappers.count(callee)) deps[name].insert(callee), users[callee].insert(name);

  const std::vector<std::string> order = producers_first(env, deps, users);

  // Stages with their estimated dims; expressions per definition; inputs read.
  std::vector<std::vector<DefExprs>> defs;
  std::map<std::string, const HI::Call*> input_calls;
  InputCalls ic;
  ic.found = &input_calls;
  std::set<std::string> output_names(view.outputs.begin(), view.outputs.end());
  for (const auto& name : order) {
    const Function& fn = env.at(name);
    Stage st;
    st.name = name;
    st.is_output = output_names.count(name) > 0;
    defs.push_back(definitions_of(fn, wrappers));
    st.rename_of = rename_target(fn, defs.back());
    st.is_rename = !st.rename_of.empty();
    st.copy_of = copy_target(fn, defs.back());
    st.is_extern = fn.has_extern_definition();
    const Halide::Type t = fn.output_types().empty() ? Halide::Float(32) : fn.output_types()[0];
    st.dtype = type_name(t);
    st.bytes = t.bytes();
    st.num_values = static_cast<int>(fn.output_types().size());
    st.dims = estimated_dims(fn, st.dims_estimated);
    for (const auto& d : defs.back())
      for (const auto& e : all_exprs(d)) e.accept(&ic);
    view.stages.push_back(std::move(st));
  }
  for (const auto& [name, call] : input_calls) {
    auto w = wrapper_of.find(name);
    view.inputs.push_back(input_tensor(name, *call, w == wrapper_of.end() ? "" : w->second));
  }

  // Consumers before producers: a stage's extents may come from what its consumers read.
  DimsOf dims_of;
  for (const auto& s : view.stages) dims_of[s.name] = &s.dims;
  for (const auto& in : view.inputs) dims_of[in.name] = &in.dims;
  std::set<std::string> input_names;
  for (const auto& in : view.inputs) input_names.insert(in.name);
  std::vector<std::vector<Edge>> edges_of(view.stages.size());
  std::vector<Edge> done;  // edges of processed consumers
  for (size_t i = view.stages.size(); i-- > 0;) {
    Stage& st = view.stages[i];
    if (fill_from_consumers(st.dims, st.name, done)) st.dims_estimated = false;
    st.elements = product(st.dims);
    std::map<std::string, Edge> edges;
    for (size_t d = 0; d < defs[i].size(); d++) analyse_definition(st, static_cast<int>(d), defs[i][d], dims_of, edges);
    // Extern stages have no analysable definitions: edges without accesses, whole producers.
    for (const auto& p : deps[st.name])
      if (!edges.count(p)) edges[p].footprint_exact = false;
    for (auto& [producer, e] : edges) {
      e.producer = producer;
      e.consumer = st.name;
      e.producer_is_input = input_names.count(producer) > 0;
      if (e.accesses.empty() && e.footprint.empty() && dims_of.count(producer))
        for (const auto& l : *dims_of.at(producer)) e.footprint.push_back({l.min, l.extent});
      e.footprint_elements = 1;
      for (const auto& r : e.footprint) e.footprint_elements *= r.extent;
      st.producers.push_back(producer);
      done.push_back(e);
      edges_of[i].push_back(std::move(e));
    }
    st.points = 0;
    for (const auto& d : st.definitions) st.points += d.points;
  }
  for (auto& in : view.inputs) {
    if (fill_from_consumers(in.dims, in.name, done)) in.dims_estimated = false;
    in.elements = product(in.dims);
  }
  for (auto& es : edges_of)
    for (auto& e : es) view.edges.push_back(std::move(e));
  list_consumers(view);
  return view;
}

int PipelineView::stage_index(const std::string& name) const {
  for (size_t i = 0; i < stages.size(); i++)
    if (stages[i].name == name) return static_cast<int>(i);
  return -1;
}

const Stage* PipelineView::stage(const std::string& name) const {
  const int i = stage_index(name);
  return i < 0 ? nullptr : &stages[i];
}

const InputTensor* PipelineView::input(const std::string& name) const {
  for (const auto& in : inputs)
    if (in.name == name) return &in;
  return nullptr;
}

const Edge* PipelineView::edge(const std::string& producer, const std::string& consumer) const {
  for (const auto& e : edges)
    if (e.producer == producer && e.consumer == consumer) return &e;
  return nullptr;
}

std::vector<const Edge*> PipelineView::edges_into(const std::string& consumer) const {
  std::vector<const Edge*> r;
  for (const auto& e : edges)
    if (e.consumer == consumer) r.push_back(&e);
  return r;
}

std::vector<const Edge*> PipelineView::edges_from(const std::string& producer) const {
  std::vector<const Edge*> r;
  for (const auto& e : edges)
    if (e.producer == producer) r.push_back(&e);
  return r;
}

void PipelineView::rename_stages(const std::map<std::string, std::string>& names) {
  auto rename = [&](std::string& n) {
    if (auto it = names.find(n); it != names.end()) n = it->second;
  };
  auto rename_all = [&](std::vector<std::string>& ns) {
    for (auto& n : ns) rename(n);
    std::sort(ns.begin(), ns.end());
  };
  for (auto& o : outputs) rename(o);
  for (auto& st : stages) {
    rename(st.name);
    rename(st.rename_of);
    rename(st.copy_of);
    rename_all(st.producers);
    rename_all(st.consumers);
  }
  for (auto& in : inputs) rename_all(in.consumers);
  for (auto& e : edges) rename(e.producer), rename(e.consumer);
  // Edges stay by consumer (stage order), then producer name.
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < stages.size(); i++) order[stages[i].name] = i;
  std::stable_sort(edges.begin(), edges.end(), [&](const Edge& a, const Edge& b) {
    const size_t ca = order[a.consumer], cb = order[b.consumer];
    return ca != cb ? ca < cb : a.producer < b.producer;
  });
}

int64_t PipelineView::total_points() const {
  int64_t p = 0;
  for (const auto& s : stages) p += s.points;
  return p;
}

std::string PipelineView::to_json(int indent) const {
  const nlohmann::json j = *this;
  return j.dump(indent);
}

std::string PipelineView::summary() const {
  std::string s = fmt::format("pipeline: {} stages, {} inputs, {} edges, {} points\n", stages.size(), inputs.size(),
                              edges.size(), total_points());
  for (const auto& in : inputs) s += fmt::format("  input {} {} {}\n", in.name, in.dtype, loops_text(in.dims));
  for (const auto& st : stages) {
    std::string producers;
    for (const auto& p : st.producers) producers += (producers.empty() ? "" : ", ") + p;
    s += fmt::format("  {}{}{} {} {} points={} <- {}\n", st.name, st.is_output ? " (output)" : "",
                     st.is_rename ? " (rename of " + st.rename_of + ")" : "", st.dtype, loops_text(st.dims),
                     st.points, producers.empty() ? "-" : producers);
    for (const auto& d : st.definitions)
      s += fmt::format("    {} {} points={} ops={}\n", d.index == 0 ? "pure" : fmt::format("update{}", d.index - 1),
                       loops_text(d.loops), d.points, ops_text(d.ops));
  }
  return s;
}

}  // namespace ts
