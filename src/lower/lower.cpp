#include "lower/lower.h"

#include <fmt/format.h>

#include <cstring>
#include <optional>

namespace ts {

using Halide::Expr;
using Halide::Func;
using Halide::Var;

Halide::Type halide_type(DType t) {
  switch (t) {
    case DType::Float32: return Halide::Float(32);
    case DType::Float64: return Halide::Float(64);
    case DType::Int8: return Halide::Int(8);
    case DType::UInt8: return Halide::UInt(8);
    case DType::Int16: return Halide::Int(16);
    case DType::UInt16: return Halide::UInt(16);
    case DType::Int32: return Halide::Int(32);
    case DType::UInt32: return Halide::UInt(32);
    case DType::Int64: return Halide::Int(64);
    case DType::UInt64: return Halide::UInt(64);
    case DType::Bool: return Halide::Bool();
  }
  return Halide::Float(32);
}

static std::vector<Expr> reversed(const std::vector<Expr>& idx) { return {idx.rbegin(), idx.rend()}; }

namespace {

thread_local std::map<std::string, int64_t> lane_rvars;  // LaneBounds alive on this thread

}  // namespace

LaneBound::LaneBound(std::string name, int64_t extent) : name_(std::move(name)) { lane_rvars[name_] = extent; }
LaneBound::~LaneBound() { lane_rvars.erase(name_); }

std::pair<Expr, Expr> split_blocked(Expr e, int64_t b) {
  Halide::Internal::Scope<Halide::Internal::Interval> lanes;
  for (int64_t w = 2; w <= 64; w *= 2)
    lanes.push(fmt::format("dl{}", w), Halide::Internal::Interval(0, static_cast<int>(w - 1)));
  for (const auto& [name, extent] : lane_rvars) lanes.push(name, Halide::Internal::Interval(0, static_cast<int>(extent - 1)));
  const int bi = static_cast<int>(b);
  return {Halide::Internal::simplify(e / bi, true, lanes), Halide::Internal::simplify(e % bi, true, lanes)};
}

Expr LTensor::at(const std::vector<Expr>& idx) const {
  if (static_cast<int>(idx.size()) != rank())
    throw Error(fmt::format("internal: {} indexed with {} indices, rank {}", func.name(), idx.size(), rank()));
  if (!layout.blocked()) return func(reversed(idx));
  auto [q, r] = split_blocked(idx[layout.axis], layout.block);
  return at_split(idx, q, r);
}

Expr LTensor::at_split(const std::vector<Expr>& idx, Expr q, Expr r) const {
  if (!layout.blocked()) throw Error(fmt::format("internal: {} is not blocked", func.name()));
  std::vector<Expr> phys = idx;
  phys[layout.axis] = q;
  phys.push_back(r);
  return func(reversed(phys));
}

Expr LTensor::at_broadcast(const std::vector<Expr>& out_idx) const {
  std::vector<Expr> idx(rank());
  const int off = static_cast<int>(out_idx.size()) - rank();
  for (int d = 0; d < rank(); d++) idx[d] = shape[d] == 1 ? Expr(0) : out_idx[off + d];
  return at(idx);
}

Expr LTensor::at_or(const std::vector<Expr>& idx, Expr outside) const {
  // A blocked index that splits into (block, lane) exactly is checked and clamped by block:
  // clamping the logical index would leave a division in every access.
  const size_t a = layout.blocked() ? static_cast<size_t>(layout.axis) : idx.size();
  std::optional<std::pair<Expr, Expr>> split;
  if (layout.blocked()) {
    auto qr = split_blocked(idx[a], layout.block);
    if (qr.second.as<Halide::Internal::Variable>() || Halide::Internal::is_const(qr.second)) split = qr;
  }
  Expr inside = Halide::Internal::const_true();
  std::vector<Expr> clamped(idx.size());
  for (size_t d = 0; d < idx.size(); d++) {
    const bool by_block = split && d == a;
    Expr i = by_block ? split->first : idx[d];
    Expr hi = static_cast<int>(by_block ? shape[d] / layout.block : shape[d]) - 1;
    inside = inside && i >= 0 && i <= hi;
    clamped[d] = Halide::clamp(i, 0, hi);
  }
  Expr value = split ? at_split(clamped, clamped[a], split->second) : at(clamped);
  return Halide::select(inside, value, Halide::cast(type(), outside));
}

Expr typed_const(Halide::Type t, double v) { return Halide::Internal::make_const(t, v); }
Expr typed_const(Halide::Type t, int64_t v) { return Halide::Internal::make_const(t, v); }

std::string sanitize_name(const std::string& s) {
  std::string r;
  for (char c : s) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (r.empty() || std::isdigit(static_cast<unsigned char>(r[0]))) r = "t" + r;
  return r;
}

void set_shape_estimates(Func f, const Shape& shape) {
  const std::vector<Var> args = f.args();
  const int r = static_cast<int>(shape.size());
  for (int k = 0; k < r; k++) f.set_estimate(args[k], 0, static_cast<int>(shape[r - 1 - k]));
}

TensorArgs tensor_args(const Shape& shape, const Layout& layout, bool by_position) {
  const int r = static_cast<int>(shape.size());
  TensorArgs t;
  if (layout.blocked()) t.args.emplace_back(fmt::format("dl{}", layout.block));
  for (int k = 0; k < r; k++) t.args.emplace_back(fmt::format("d{}", by_position ? k : r - 1 - k));
  const int off = layout.blocked() ? 1 : 0;
  for (int d = 0; d < r; d++) t.logical.push_back(t.args[off + r - 1 - d]);
  if (layout.blocked()) t.logical[layout.axis] = t.args[off + r - 1 - layout.axis] * static_cast<int>(layout.block) + t.args[0];
  return t;
}

LTensor define_tensor(const std::string& name, const Shape& shape, DType dtype,
                      const std::function<Expr(const std::vector<Expr>&)>& body, const Layout& layout) {
  const TensorArgs t = tensor_args(shape, layout);
  Func f(name);
  Expr value = body(t.logical);
  f(t.args) = Halide::cast(halide_type(dtype), value);
  set_shape_estimates(f, storage_shape(layout, shape));
  return LTensor{f, shape, dtype, layout};
}

Halide::Buffer<> to_halide_buffer(const Tensor& t, const std::string& name) {
  std::vector<int> sizes(t.shape.rbegin(), t.shape.rend());
  Halide::Buffer<> b(halide_type(t.dtype), sizes, name);
  if (!t.bytes.empty()) std::memcpy(b.data(), t.bytes.data(), t.bytes.size());
  return b;
}

LTensor constant_tensor(const std::string& name, const Tensor& t) {
  if (t.bytes.empty()) {
    // An empty constant (e.g. Gather's indices of shape [0]): nothing reads it, but Halide cannot
    // embed a buffer without memory: a Func of zeros stands for it.
    return define_tensor(name, t.shape, t.dtype, [&](const std::vector<Expr>&) { return Expr(0); });
  }
  Halide::Buffer<> b = to_halide_buffer(t, name + "_buf");
  return define_tensor(name, t.shape, t.dtype, [&](const std::vector<Expr>& idx) { return b(reversed(idx)); });
}

const LTensor& LowerContext::in(size_t i) const {
  if (!has_input(i)) fail(fmt::format("input {} is required", i));
  return *inputs[i];
}

const Tensor* LowerContext::constant(size_t i) const {
  if (i >= node.inputs.size() || node.inputs[i].empty()) return nullptr;
  const auto& t = graph.tensor(node.inputs[i]);
  return t.value ? &*t.value : nullptr;
}

const Tensor& LowerContext::require_constant(size_t i, const char* what) const {
  const Tensor* t = constant(i);
  if (!t) unsupported(fmt::format("{} (input {}) must be a constant for fixed-shape compilation", what, i));
  return *t;
}

const TensorInfo& LowerContext::out_info(size_t i) const { return graph.tensor(node.outputs.at(i)); }

LTensor LowerContext::output(const std::function<Expr(const std::vector<Expr>&)>& body, size_t i) const {
  const auto& info = out_info(i);
  return define_tensor(name(i ? fmt::format("_out{}", i) : ""), info.shape, info.dtype, body, info.layout);
}

void LowerContext::unsupported(const std::string& what) const {
  throw Unsupported(fmt::format("{}: {}: {}", graph.path, node.describe(), what));
}
void LowerContext::fail(const std::string& what) const {
  throw Error(fmt::format("{}: {}: {}", graph.path, node.describe(), what));
}

const std::map<std::string, LowerFn>& op_registry() {
  static const std::map<std::string, LowerFn> registry = [] {
    std::map<std::string, LowerFn> r;
    register_elementwise_ops(r);
    register_conv_ops(r);
    register_pool_ops(r);
    register_gemm_ops(r);
    register_normalization_ops(r);
    register_reduce_ops(r);
    register_shape_ops(r);
    register_resize_ops(r);
    register_generate_ops(r);
    register_quantize_ops(r);
    register_einsum_ops(r);
    return r;
  }();
  return registry;
}

bool op_supported(const std::string& op) { return op_registry().count(op) > 0; }

std::vector<std::string> supported_ops() {
  std::vector<std::string> r;
  for (const auto& [k, v] : op_registry()) r.push_back(k);
  return r;
}

std::map<std::string, LTensor> lower_graph(const Graph& g, const std::map<std::string, LTensor>& bound) {
  std::map<std::string, LTensor> values = bound;
  auto value_of = [&](const std::string& name) -> const LTensor* {
    auto it = values.find(name);
    if (it != values.end()) return &it->second;
    const auto& info = g.tensor(name);
    if (!info.value) throw Error(fmt::format("{}: tensor '{}' has no value (unbound input?)", g.path, name));
    return &values.emplace(name, constant_tensor(sanitize_name("c_" + name), *info.value)).first->second;
  };
  for (size_t k = 0; k < g.nodes.size(); k++) {
    const Node& n = g.nodes[k];
    auto fn = op_registry().find(n.op);
    if (fn == op_registry().end())
      throw Unsupported(fmt::format("{}: {}: op {} (opset {}) is not supported", g.path, n.describe(), n.op, g.opset));
    LowerContext ctx{g, n, {}, fmt::format("{}_n{}", sanitize_name(n.name), k)};
    for (const auto& in : n.inputs) ctx.inputs.push_back(in.empty() ? nullptr : value_of(in));
    std::vector<LTensor> outs = fn->second(ctx);
    for (size_t i = 0; i < outs.size() && i < n.outputs.size(); i++) {
      if (n.outputs[i].empty()) continue;
      const auto& info = g.tensor(n.outputs[i]);
      if (outs[i].shape != info.shape)
        ctx.fail(fmt::format("output {} lowered with shape {} but shape inference says {}", i,
                             shape_str(outs[i].shape), shape_str(info.shape)));
      // The tensor leaves the node in its planned layout, whatever the lowering built.
      if (outs[i].layout != info.layout) {
        const LTensor v = outs[i];
        outs[i] = define_tensor(ctx.name(fmt::format("_layout{}", i)), v.shape, v.dtype,
                                [&](const std::vector<Expr>& idx) { return v.at(idx); }, info.layout);
      }
      values[n.outputs[i]] = outs[i];
    }
  }
  for (const auto& o : g.outputs) value_of(o);
  return values;
}

}  // namespace ts
