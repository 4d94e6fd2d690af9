#include "measure/mpi_protocol.h"

#include <fmt/format.h>

#include "graph/error.h"

namespace ts {

std::string pack_message(nlohmann::json head, const std::vector<std::string>& blobs) {
  nlohmann::json sizes = nlohmann::json::array();
  size_t total = 0;
  for (const std::string& b : blobs) {
    sizes.push_back(b.size());
    total += b.size();
  }
  head["blobs"] = sizes;
  std::string out = head.dump() + "\n";
  out.reserve(out.size() + total);
  for (const std::string& b : blobs) out += b;
  return out;
}

Unpacked unpack_message(const std::string& bytes, const std::string& where) {
  const size_t eol = bytes.find('\n');
  Unpacked u;
  u.head = nlohmann::json::parse(bytes.substr(0, eol), nullptr, false);
  if (eol == std::string::npos || !u.head.is_object() || !u.head.contains("blobs") || !u.head["blobs"].is_array())
    throw Error(fmt::format("{}: not a measurement message ({} bytes)", where, bytes.size()));
  size_t offset = eol + 1;
  for (const auto& n : u.head["blobs"]) {
    const size_t size = n.get<size_t>();
    if (offset + size > bytes.size())
      throw Error(fmt::format("{}: message cut short: a blob of {} bytes at offset {} of {}", where, size, offset, bytes.size()));
    u.blobs.push_back(bytes.substr(offset, size));
    offset += size;
  }
  return u;
}

nlohmann::json run_options_json(const MeasureOptions& o) {
  return {{"repeats", o.repeats},     {"warmup", o.warmup}, {"cold_weights", o.cold_weights},
          {"run_timeout_s", o.run_timeout_s}, {"loser_s", o.loser_s}, {"threads", o.threads},
          {"rtol", o.rtol},           {"atol", o.atol},     {"stol", o.stol},
          {"input_seed", o.input_seed}};
}

MeasureOptions run_options_from_json(const nlohmann::json& j) {
  MeasureOptions o;
  o.repeats = j.at("repeats");
  o.warmup = j.at("warmup");
  o.cold_weights = j.at("cold_weights");
  o.run_timeout_s = j.at("run_timeout_s");
  o.loser_s = j.at("loser_s");
  o.threads = j.at("threads");
  o.rtol = j.at("rtol");
  o.atol = j.at("atol");
  o.stol = j.at("stol");
  o.input_seed = j.at("input_seed");
  return o;
}

nlohmann::json measure_result_json(const MeasureResult& r) {
  return {{"schedule_hash", r.schedule_hash}, {"times", r.times},         {"compile_seconds", r.compile_seconds},
          {"threads", r.threads},             {"error_kind", r.error_kind}, {"error_message", r.error_message}};
}

MeasureResult measure_result_from_json(const nlohmann::json& j) {
  MeasureResult r;
  r.schedule_hash = j.at("schedule_hash");
  r.times = j.at("times").get<std::vector<double>>();
  r.compile_seconds = j.at("compile_seconds");
  r.threads = j.at("threads");
  r.error_kind = j.at("error_kind");
  r.error_message = j.at("error_message");
  summarize_times(r);
  return r;
}

std::string identity_mismatch(const std::string& ours, const std::string& theirs) {
  const nlohmann::json a = nlohmann::json::parse(ours, nullptr, false);
  const nlohmann::json b = nlohmann::json::parse(theirs, nullptr, false);
  if (a.is_discarded() || b.is_discarded() || !a.is_object() || !b.is_object())
    return ours == theirs ? "" : "the machine identities are not comparable JSON objects";
  for (const auto& [key, value] : a.items()) {
    if (!b.contains(key)) return fmt::format("it does not say its {}", key);
    if (b.at(key) != value) return fmt::format("its {} is {}, not {}", key, b.at(key).dump(), value.dump());
  }
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) return fmt::format("it says a {} this host does not", key);
  return "";
}

}  // namespace ts
