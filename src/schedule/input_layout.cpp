#include "schedule/input_layout.h"

#include <fmt/format.h>

#include "graph/error.h"
#include "graph/layout.h"

namespace ts {

std::string layout_error(const InputLayout& l, const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  if (l.dim < 0 || l.dim >= r) return fmt::format("dim {} is not a dimension of a rank-{} tensor", l.dim, r);
  const int64_t e = shape[static_cast<size_t>(r - 1 - l.dim)];
  if (l.block < 2 || e % l.block != 0) return fmt::format("block {} does not divide dim {}'s extent {}", l.block, l.dim, e);
  return "";
}

namespace {

void check(const InputLayout& l, const Shape& shape) {
  const std::string why = layout_error(l, shape);
  if (!why.empty()) throw Error(fmt::format("layout of input '{}' {}: {}", l.input, shape_str(shape), why));
}

// The same packing as a blocked tensor layout of axis r-1-dim (graph/layout.h).
Layout tensor_layout(const InputLayout& l, const Shape& shape) {
  return Layout{static_cast<int>(shape.size()) - 1 - l.dim, l.block};
}

}  // namespace

Shape packed_shape(const InputLayout& l, const Shape& shape) {
  check(l, shape);
  return storage_shape(tensor_layout(l, shape), shape);
}

Tensor pack_tensor(const InputLayout& l, const Tensor& t) {
  Tensor p(t.dtype, packed_shape(l, t.shape));
  pack_into(l, t, p);
  return p;
}

void pack_into(const InputLayout& l, const Tensor& t, Tensor& p) {
  check(l, t.shape);
  ts::pack_into(tensor_layout(l, t.shape), t, p, fmt::format("input '{}'", l.input));
}

const InputLayout* find_layout(const std::vector<InputLayout>& layouts, const std::string& input) {
  for (const auto& l : layouts)
    if (l.input == input) return &l;
  return nullptr;
}

std::string describe(const InputLayout& l) { return fmt::format("{}: dim {} blocked by {}", l.input, l.dim, l.block); }

Halide::Expr packed_access(const InputLayout& l, const Halide::ImageParam& packed, const std::vector<Halide::Expr>& x) {
  std::vector<Halide::Expr> idx{x[static_cast<size_t>(l.dim)] % static_cast<int>(l.block)};
  for (size_t k = 0; k < x.size(); k++)
    idx.push_back(static_cast<int>(k) == l.dim ? x[k] / static_cast<int>(l.block) : x[k]);
  return packed(idx);
}

}  // namespace ts
