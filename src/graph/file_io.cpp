#include "graph/file_io.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "graph/error.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

// The size of `path`, after checking that it is a regular file.
uint64_t regular_file_size(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw Error(fmt::format("{}: no such file", path));
  if (fs::is_directory(st)) throw Error(fmt::format("{}: is a directory, not {}", path, what));
  if (!fs::is_regular_file(st))
    throw Error(fmt::format("{}: is not a regular file (a FIFO, device or socket), not {}", path, what));
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error(fmt::format("{}: cannot read its size: {}", path, ec.message()));
  return size;
}

}  // namespace

std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  const uint64_t size = regular_file_size(path, what);
  if (size > max_bytes)
    throw Error(fmt::format("{}: is {} bytes, more than the {} {} may have", path, size, max_bytes, what));
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open for reading", path));
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string read_file_range(const std::string& path, const std::string& what, uint64_t offset, uint64_t length) {
  const uint64_t size = regular_file_size(path, what);
  if (offset > size || length > size - offset)
    throw Error(fmt::format("{}: holds {} bytes; {} needs bytes {}..{}", path, size, what, offset, offset + length));
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open for reading", path));
  std::string buf(length, '\0');
  f.seekg(static_cast<std::streamoff>(offset));
  f.read(buf.data(), static_cast<std::streamsize>(length));
  if (static_cast<uint64_t>(f.gcount()) != length) throw Error(fmt::format("{}: read failed for {}", path, what));
  return buf;
}

}  // namespace ts
