#include "graph/file_io.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "graph/error.h"

namespace fs = std::filesystem;

namespace ts {

std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw Error(fmt::format("{}: no such file", path));
  if (fs::is_directory(st)) throw Error(fmt::format("{}: is a directory, not {}", path, what));
  if (!fs::is_regular_file(st))
    throw Error(fmt::format("{}: is not a regular file (a FIFO, device or socket), not {}", path, what));
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error(fmt::format("{}: cannot read its size: {}", path, ec.message()));
  if (size > max_bytes)
    throw Error(fmt::format("{}: is {} bytes, more than the {} {} may have", path, size, max_bytes, what));
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open for reading", path));
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace ts
