#include "graph/layout.h"
#include "graph/block_copy.h"

#include <fmt/format.h>

#include <cstring>

namespace ts {

std::string layout_error(const Layout& l, const Shape& shape) {
  if (!l.blocked()) return "";
  const int r = static_cast<int>(shape.size());
  if (l.axis >= r) return fmt::format("axis {} is not an axis of a rank-{} tensor", l.axis, r);
  const int64_t e = shape[static_cast<size_t>(l.axis)];
  if (l.block < 2 || e % l.block != 0) return fmt::format("block {} does not divide axis {}'s extent {}", l.block, l.axis, e);
  return "";
}

Shape storage_shape(const Layout& l, const Shape& shape) {
  if (!l.blocked()) return shape;
  if (std::string why = layout_error(l, shape); !why.empty())
    throw Error(fmt::format("layout {} of a {} tensor: {}", layout_suffix(l), shape_str(shape), why));
  Shape s = shape;
  s[static_cast<size_t>(l.axis)] /= l.block;
  s.push_back(l.block);
  return s;
}

std::string layout_suffix(const Layout& l) { return l.blocked() ? fmt::format("@{}c{}", l.axis, l.block) : ""; }

namespace {

// block_copy around l's axis of `shape`.
void convert(const Layout& l, const Shape& shape, const uint8_t* src, uint8_t* dst, size_t es, bool to_blocked) {
  block_copy_axis(shape.data(), shape.size(), static_cast<size_t>(l.axis), l.block, src, dst, es, to_blocked);
}

}  // namespace

void pack_into(const Layout& l, const Tensor& plain, Tensor& dst, const std::string& what) {
  const Shape want = storage_shape(l, plain.shape);
  if (dst.dtype != plain.dtype || dst.shape != want)
    throw Error(fmt::format("{}: packing a {} {} tensor by {} into a {} {} tensor (expected {})", what,
                            dtype_name(plain.dtype), shape_str(plain.shape), layout_suffix(l), dtype_name(dst.dtype),
                            shape_str(dst.shape), shape_str(want)));
  if (!l.blocked()) {
    std::memcpy(dst.bytes.data(), plain.bytes.data(), plain.bytes.size());
    return;
  }
  convert(l, plain.shape, plain.bytes.data(), dst.bytes.data(), dtype_size(plain.dtype), true);
}

Tensor pack(const Layout& l, const Tensor& plain, const std::string& what) {
  Tensor p(plain.dtype, storage_shape(l, plain.shape));
  pack_into(l, plain, p, what);
  return p;
}

Tensor unpack(const Layout& l, const Tensor& stored, const Shape& shape, const std::string& what) {
  if (stored.shape != storage_shape(l, shape))
    throw Error(fmt::format("{}: unpacking a {} tensor as {} by {}", what, shape_str(stored.shape), shape_str(shape),
                            layout_suffix(l)));
  Tensor t(stored.dtype, shape);
  if (!l.blocked()) t.bytes = stored.bytes;
  else convert(l, shape, stored.bytes.data(), t.bytes.data(), dtype_size(stored.dtype), false);
  return t;
}

}  // namespace ts
