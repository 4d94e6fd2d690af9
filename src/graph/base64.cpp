#include "graph/base64.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace ts {

namespace {

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64_encode(const char* data, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    if (i + 1 < n) v |= static_cast<uint8_t>(data[i + 1]) << 8;
    if (i + 2 < n) v |= static_cast<uint8_t>(data[i + 2]);
    out += kB64[(v >> 18) & 63];
    out += kB64[(v >> 12) & 63];
    out += i + 1 < n ? kB64[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kB64[v & 63] : '=';
  }
  return out;
}

bool base64_decode(const std::string& s, std::string& out) {
  if (s.size() % 4 != 0) return false;
  int val[256];
  std::fill(std::begin(val), std::end(val), -1);
  for (int i = 0; i < 64; ++i) val[static_cast<uint8_t>(kB64[i])] = i;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s[i + k];
      if (c == '=' && i + 4 == s.size() && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad > 0 || val[static_cast<uint8_t>(c)] < 0) return false;
      v = (v << 6) | static_cast<uint32_t>(val[static_cast<uint8_t>(c)]);
    }
    out += static_cast<char>((v >> 16) & 255);
    if (pad < 2) out += static_cast<char>((v >> 8) & 255);
    if (pad < 1) out += static_cast<char>(v & 255);
  }
  return true;
}

}  // namespace ts
