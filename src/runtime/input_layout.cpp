#include "runtime/input_layout.h"

#include <fmt/format.h>

#include <cstring>

#include "graph/error.h"

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

}  // namespace

Shape packed_shape(const InputLayout& l, const Shape& shape) {
  check(l, shape);
  Shape s = shape;
  s[shape.size() - 1 - static_cast<size_t>(l.dim)] /= l.block;
  s.push_back(l.block);
  return s;
}

Tensor pack_tensor(const InputLayout& l, const Tensor& t) {
  Tensor p(t.dtype, packed_shape(l, t.shape));
  pack_into(l, t, p);
  return p;
}

void pack_into(const InputLayout& l, const Tensor& t, Tensor& p) {
  if (p.dtype != t.dtype || p.shape != packed_shape(l, t.shape))
    throw Error(fmt::format("packing input '{}' {} into a {} tensor", l.input, shape_str(t.shape), shape_str(p.shape)));
  // Row-major views: t is [outer, e, inner] around axis a; p is [outer, e / b, inner, b].
  const size_t a = t.shape.size() - 1 - static_cast<size_t>(l.dim);
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < a; k++) outer *= t.shape[k];
  for (size_t k = a + 1; k < t.shape.size(); k++) inner *= t.shape[k];
  const int64_t e = t.shape[a], b = l.block;
  const size_t es = dtype_size(t.dtype);
  const uint8_t* src = t.bytes.data();
  uint8_t* dst = p.bytes.data();
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < e; i++)
      for (int64_t n = 0; n < inner; n++) {
        const int64_t from = (o * e + i) * inner + n;
        const int64_t to = ((o * (e / b) + i / b) * inner + n) * b + i % b;
        std::memcpy(dst + to * es, src + from * es, es);
      }
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
