#pragma once
// The copy between a plain tensor and the same tensor with one axis blocked (graph/layout.h),
// on raw bytes. Self-contained (standard headers only): compiled into tensorsched and into every
// artifact (runtime/plan_executor.cpp), which packs runtime inputs with it.
#include <cstdint>
#include <cstring>

namespace ts {

// Row-major views around the blocked axis: plain is [outer, extent, inner]; blocked is
// [outer, extent / block, inner, block]. Copies `src` into `dst` plain -> blocked when
// `to_blocked`, else blocked -> plain. `elem_bytes` is the element size.
inline void block_copy(int64_t outer, int64_t extent, int64_t inner, int64_t block, const uint8_t* src, uint8_t* dst,
                       size_t elem_bytes, bool to_blocked) {
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < extent; i++) {
      const int64_t plain_row = (o * extent + i) * inner;
      const int64_t blocked_row = (o * (extent / block) + i / block) * inner * block + i % block;
      for (int64_t n = 0; n < inner; n++) {
        const int64_t p = plain_row + n, q = blocked_row + n * block;
        if (to_blocked) std::memcpy(dst + q * elem_bytes, src + p * elem_bytes, elem_bytes);
        else std::memcpy(dst + p * elem_bytes, src + q * elem_bytes, elem_bytes);
      }
    }
}

// block_copy with `axis` of a tensor of `rank` dims `shape` (outermost first) blocked by `block`.
inline void block_copy_axis(const int64_t* shape, size_t rank, size_t axis, int64_t block, const uint8_t* src,
                            uint8_t* dst, size_t elem_bytes, bool to_blocked) {
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < axis; k++) outer *= shape[k];
  for (size_t k = axis + 1; k < rank; k++) inner *= shape[k];
  block_copy(outer, shape[axis], inner, block, src, dst, elem_bytes, to_blocked);
}

}  // namespace ts
