#pragma once
// Base64 (RFC 4648, with padding): binary blobs inside JSON (a cost model's boosters, a
// workload's ONNX subgraph in an exported record).
#include <cstddef>
#include <string>

namespace ts {

std::string base64_encode(const char* data, size_t n);
inline std::string base64_encode(const std::string& bytes) { return base64_encode(bytes.data(), bytes.size()); }
// Decodes `s` into `out`; false on a character outside the alphabet or a bad length.
bool base64_decode(const std::string& s, std::string& out);

}  // namespace ts
