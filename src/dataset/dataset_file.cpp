#include "dataset/dataset_file.h"

#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dataset/dataset_generate.h"
#include "graph/error.h"
#include "graph/file_io.h"

namespace ts {

int64_t export_dataset(const RecordsDB& db, const std::string& path, const std::string& split) {
  std::stringstream all;
  db.export_jsonl(all);
  // Keeps a line when its policy is of the split; the subgraph moves to the first kept record of
  // its workload (the first exported one may be of another split).
  std::string kept;
  int64_t n = 0;
  std::map<std::string, std::string> subgraphs;
  std::set<std::string> carried;
  for (std::string line; std::getline(all, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    nlohmann::json& w = j["workload"];
    const std::string key = w.at("exact_key");
    if (w.contains("subgraph")) {
      subgraphs[key] = w["subgraph"];
      w.erase("subgraph");
    }
    const std::string of = dataset_split_of(j.value("policy", ""));
    if (of.empty() || (!split.empty() && of != split)) continue;
    if (carried.insert(key).second && subgraphs.count(key)) w["subgraph"] = subgraphs[key];
    kept += j.dump() + "\n";
    n++;
  }
  const std::string tmp = path + ".tmp";
  gzFile f = gzopen(tmp.c_str(), "wb9");
  if (!f) throw Error(fmt::format("{}: cannot write the data set: {}", path, std::strerror(errno)));
  const bool ok = kept.empty() || gzwrite(f, kept.data(), static_cast<unsigned>(kept.size())) == static_cast<int>(kept.size());
  if (gzclose(f) != Z_OK || !ok) throw Error(fmt::format("{}: writing the data set failed", path));
  std::filesystem::rename(tmp, path);
  return n;
}

namespace {

// The bytes a gzip stream holds. Throws Error naming `path` for a damaged stream.
std::string gunzip(const std::string& bytes, const std::string& path) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw Error(fmt::format("{}: cannot start gzip decoding", path));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - z.avail_out);
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated: no more input
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw Error(fmt::format("{}: the gzip stream is damaged or truncated (zlib {})", path, rc));
  return out;
}

}  // namespace

RecordsDB::ImportResult import_dataset(RecordsDB& db, const std::string& path) {
  std::string bytes = read_regular_file(path, "data set");
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b)
    bytes = gunzip(bytes, path);
  std::istringstream in(bytes);
  return db.import_jsonl(in, path);
}

}  // namespace ts
