#pragma once
// Lowering: every Graph node becomes Halide Funcs with fixed shapes.
//
// Reading guide: LTensor is a tensor as Halide sees it (a Func plus its ONNX shape). An op is
// lowered by a LowerFn registered per op type (one .cpp per op family: elementwise, conv,
// pool, gemm, normalization, reduce, shape_ops, resize, generate). lower_graph() walks the nodes
// in order.
// Conventions: Halide's argument 0 is the innermost (last ONNX) axis, so LTensor::at() takes
// indices in ONNX order and reverses them. Every access stays inside its producer's shape
// (padding is a clamp plus a select), so a pipeline's bounds are exactly its tensors' shapes.
#include <Halide.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ts {

Halide::Type halide_type(DType t);

struct LTensor {
  Halide::Func func;  // func(x_{r-1}, ..., x_0): argument 0 is the last ONNX axis (blocked: the lane first)
  Shape shape;        // ONNX order, logical (a blocked Func has one more argument, see tensor_args)
  DType dtype = DType::Float32;
  Layout layout;      // how func's arguments store the tensor (graph/layout.h)

  int rank() const { return static_cast<int>(shape.size()); }
  Halide::Type type() const { return halide_type(dtype); }
  // Element at ONNX-order logical indices (a blocked axis index is split into block and lane).
  Halide::Expr at(const std::vector<Halide::Expr>& idx) const;
  // Element of a blocked tensor at logical `idx` whose blocked-axis index is given already split
  // into its block `q` and lane `r` (idx[layout.axis] is ignored).
  Halide::Expr at_split(const std::vector<Halide::Expr>& idx, Halide::Expr q, Halide::Expr r) const;
  // Element at `out_idx` of a broadcast result of rank >= rank() (numpy rules, right-aligned).
  Halide::Expr at_broadcast(const std::vector<Halide::Expr>& out_idx) const;
  // Element at `idx`, or `outside` where any index leaves the shape (reads stay in bounds).
  Halide::Expr at_or(const std::vector<Halide::Expr>& idx, Halide::Expr outside) const;
};

// Constant of type t (make_const: exact for 64-bit integers, no double->Expr ambiguity).
Halide::Expr typed_const(Halide::Type t, double v);
Halide::Expr typed_const(Halide::Type t, int64_t v);

// Records `shape` (ONNX order, the stored shape of f's arguments) as f's estimates, which the default schedule and Halide's
// autoschedulers read. Every stage a lowering defines must carry them.
void set_shape_estimates(Halide::Func f, const Shape& shape);

// The pure arguments of a Func storing a tensor of logical `shape` in `layout` (Halide order:
// innermost first; a blocked layout adds the lane "dl<block>" innermost) and the logical
// ONNX-order indices they stand for (the blocked axis is block * <block> + lane).
struct TensorArgs {
  std::vector<Halide::Var> args;        // the Func's arguments
  std::vector<Halide::Expr> logical;    // logical indices in ONNX order
};
// The arguments are named by ONNX axis ("d0" = the outermost), or with `by_position` by Halide
// position ("d0" = the innermost after the lane), the names conv and pool accumulators have
// always had (recorded schedules name their loops).
TensorArgs tensor_args(const Shape& shape, const Layout& layout = {}, bool by_position = false);

// Splits a blocked-axis index into (block, lane) = (e / b, e mod b), simplified knowing that
// lanes ("dl<b>" and the RVars of a LaneBound in scope) lie in [0, b): the block index of
// q * b + lane is q, with no division left.
std::pair<Halide::Expr, Halide::Expr> split_blocked(Halide::Expr e, int64_t b);
// While alive, RVar `name` counts as a lane of extent `extent` for split_blocked (a reduction over
// a blocked input's channels iterates its lane and block separately).
class LaneBound {
 public:
  LaneBound(std::string name, int64_t extent);
  ~LaneBound();
  LaneBound(const LaneBound&) = delete;
  LaneBound& operator=(const LaneBound&) = delete;

 private:
  std::string name_;
};

// Defines Func `name` of `shape` (stored in `layout`) whose value at ONNX-order logical indices
// is body(indices).
LTensor define_tensor(const std::string& name, const Shape& shape, DType dtype,
                      const std::function<Halide::Expr(const std::vector<Halide::Expr>&)>& body,
                      const Layout& layout = {});
// A Func reading a constant tensor (an initializer or folded value).
LTensor constant_tensor(const std::string& name, const Tensor& t);
// Halide Buffer holding a copy of t, dims reversed.
Halide::Buffer<> to_halide_buffer(const Tensor& t, const std::string& name);
// Halide-safe name (letters, digits, underscore), unique per `ctx` via a counter.
std::string sanitize_name(const std::string& s);

// What a lowering function sees of its node.
struct LowerContext {
  const Graph& graph;                       // whole graph (shapes, constants)
  const Node& node;                         // the node being lowered
  std::vector<const LTensor*> inputs;       // null where the input is absent ("")
  std::string prefix;                       // unique Func-name prefix for this node

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const LTensor& in(size_t i) const;        // throws naming the node when absent
  // Value of input i when it is a compile-time constant (shape, axes, pads, scales...).
  const Tensor* constant(size_t i) const;
  // Value of input i, which must be constant (throws Unsupported naming the node otherwise).
  const Tensor& require_constant(size_t i, const char* what) const;
  const TensorInfo& out_info(size_t i = 0) const;
  std::string name(const std::string& suffix = "") const { return prefix + suffix; }
  // Output tensor i defined by body over output indices.
  LTensor output(const std::function<Halide::Expr(const std::vector<Halide::Expr>&)>& body, size_t i = 0) const;
  int opset() const { return graph.opset; }
  // Throws Unsupported: "<file>: node 'x' (Op): <what>".
  [[noreturn]] void unsupported(const std::string& what) const;
  [[noreturn]] void fail(const std::string& what) const;
};

using LowerFn = std::function<std::vector<LTensor>(const LowerContext&)>;

// Registry of every op type tensorsched lowers.
const std::map<std::string, LowerFn>& op_registry();
bool op_supported(const std::string& op);
std::vector<std::string> supported_ops();

// Lowers every node of g. `bound` gives the Funcs of graph inputs (ImageParams or buffers);
// constants become buffer-backed Funcs. Returns the LTensor of every tensor name.
std::map<std::string, LTensor> lower_graph(const Graph& g, const std::map<std::string, LTensor>& bound);

// Per-family registration (one per file in src/lower/).
void register_elementwise_ops(std::map<std::string, LowerFn>& r);
void register_conv_ops(std::map<std::string, LowerFn>& r);
void register_pool_ops(std::map<std::string, LowerFn>& r);
void register_gemm_ops(std::map<std::string, LowerFn>& r);
void register_normalization_ops(std::map<std::string, LowerFn>& r);
void register_reduce_ops(std::map<std::string, LowerFn>& r);
void register_shape_ops(std::map<std::string, LowerFn>& r);
void register_resize_ops(std::map<std::string, LowerFn>& r);
void register_generate_ops(std::map<std::string, LowerFn>& r);
void register_quantize_ops(std::map<std::string, LowerFn>& r);
void register_einsum_ops(std::map<std::string, LowerFn>& r);

}  // namespace ts
