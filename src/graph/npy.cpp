#include "graph/npy.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <regex>

#include "graph/error.h"
#include "graph/file_io.h"

namespace ts {

namespace {

const char kMagic[] = "\x93NUMPY";

std::string descriptor(DType t) {
  switch (t) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Int16: return "<i2";
    case DType::UInt16: return "<u2";
    case DType::Int32: return "<i4";
    case DType::UInt32: return "<u4";
    case DType::Int64: return "<i8";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
  }
  return "";
}

DType dtype_of_descriptor(const std::string& d, const std::string& path) {
  for (DType t : {DType::Float32, DType::Float64, DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Int32,
                  DType::UInt32, DType::Int64, DType::UInt64, DType::Bool}) {
    const std::string want = descriptor(t);
    // One-byte types may be written '<i1' or '|i1'.
    if (d == want || (want[0] == '|' && d.size() == 3 && (d[0] == '<' || d[0] == '=') && d.substr(1) == want.substr(1)))
      return t;
  }
  throw Error(fmt::format("{}: unsupported .npy dtype '{}' (little-endian numeric or bool only)", path, d));
}

}  // namespace

Tensor read_tensor_npy(const std::string& path) {
  const std::string bytes = read_regular_file(path, "a .npy file");
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) throw Error(fmt::format("{}: not a .npy file", path));
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
    at = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    for (int k = 0; k < 4; k++) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    at = 12;
  } else {
    throw Error(fmt::format("{}: unsupported .npy version {}", path, major));
  }
  if (bytes.size() < at + header_len) throw Error(fmt::format("{}: truncated .npy header", path));
  const std::string header = bytes.substr(at, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    throw Error(fmt::format("{}: .npy header has no descr: {}", path, header));
  const DType dtype = dtype_of_descriptor(m[1], path);
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)")))
    throw Error(fmt::format("{}: Fortran-order .npy is not supported (save it C-contiguous)", path));
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    throw Error(fmt::format("{}: .npy header has no shape: {}", path, header));
  Shape shape;
  const std::string dims = m[1];
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it)
    shape.push_back(std::stoll(it->str()));
  Tensor t(dtype, shape);
  const size_t data = at + header_len;
  if (bytes.size() - data < t.bytes.size())
    throw Error(fmt::format("{}: {} data bytes, shape {} of {} needs {}", path, bytes.size() - data, shape_str(shape),
                            dtype_name(dtype), t.bytes.size()));
  std::copy_n(bytes.data() + data, t.bytes.size(), reinterpret_cast<char*>(t.bytes.data()));
  return t;
}

void write_tensor_npy(const Tensor& t, const std::string& path) {
  std::string dims;
  for (int64_t d : t.shape) dims += fmt::format("{}, ", d);
  if (t.shape.size() > 1) dims.resize(dims.size() - 2);
  else if (t.shape.size() == 1) dims.resize(dims.size() - 1);  // "(n,)"
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descriptor(t.dtype), dims);
  header.append(63 - (10 + header.size()) % 64, ' ');  // data starts 64-byte aligned
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write(kMagic, 6);
  f.put(1);
  f.put(0);
  f.put(static_cast<char>(header.size() & 0xff));
  f.put(static_cast<char>(header.size() >> 8));
  f << header;
  f.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  if (!f) throw Error(fmt::format("{}: cannot write", path));
}

Tensor read_tensor_file(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0 ? read_tensor_npy(path) : read_tensor_pb(path);
}

}  // namespace ts
