// Einsum: one stage, the product of the operands at their labels (graph/einsum_equation.h),
// summed over the labels the output does not keep (the shared reduction stage, reduction.h). A
// label twice in one operand reads its diagonal; an operand axis of extent 1 broadcasts.
#include <fmt/format.h>

#include <algorithm>

#include "graph/einsum_equation.h"
#include "lower/lower.h"
#include "lower/reduction.h"

namespace ts {

using Halide::Expr;

namespace {

std::vector<LTensor> lower_einsum(const LowerContext& c) {
  std::vector<Shape> shapes;
  for (size_t k = 0; k < c.node.inputs.size(); k++) shapes.push_back(c.in(k).shape);
  const EinsumEquation eq = parse_einsum(c.node.attr_string("equation", ""), shapes,
                                         fmt::format("{}: {}", c.graph.path, c.node.describe()));
  const EinsumEquation::Labels all = eq.all_labels();
  auto product = [&](const Idx& at) {
    Expr p;
    for (size_t k = 0; k < shapes.size(); k++) {
      Idx i(shapes[k].size());
      for (size_t d = 0; d < i.size(); d++) {
        const auto pos = std::find(all.begin(), all.end(), eq.operands[k][d]) - all.begin();
        i[d] = shapes[k][d] == 1 ? Expr(0) : at[pos];
      }
      const Expr v = c.in(k).at(i);
      p = p.defined() ? p * v : v;
    }
    return p;
  };
  if (all.size() == eq.output.size()) return {c.output(product)};
  ReduceSpec spec;
  for (int label : all) spec.in_shape.push_back(eq.extent.at(label));
  for (size_t d = eq.output.size(); d < all.size(); d++) spec.axes.insert(static_cast<int>(d));
  spec.keepdims = false;
  spec.acc_type = c.out_info().dtype;
  return {reduce_tensor(c.name(), spec, Expr(0), [](Expr a, Expr b) { return a + b; }, product)};
}

}  // namespace

void register_einsum_ops(std::map<std::string, LowerFn>& r) { r["Einsum"] = lower_einsum; }

}  // namespace ts
