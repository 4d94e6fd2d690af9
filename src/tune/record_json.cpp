#include "tune/record_json.h"

#include <fmt/format.h>

#include "features/features.h"
#include "graph/base64.h"
#include "graph/error.h"
#include "graph/workload.h"
#include "graph/workload_onnx.h"
#include "schedule/schedule.h"

namespace ts {

using json = nlohmann::json;

json record_to_json(const Record& r) {
  const auto& w = r.workload;
  json wj = {{"exact_key", w.exact_key}, {"class_key", w.class_key}, {"name", w.name},
             {"flops", w.flops},         {"key_hash", w.key_hash},   {"class_hash", w.class_hash}};
  if (!w.subgraph.empty()) wj["subgraph"] = base64_encode(w.subgraph);
  return {{"workload", wj},           {"schedule", json::parse(r.schedule_json)},
          {"schedule_hash", r.schedule_hash}, {"times", r.times},
          {"median", r.median},       {"min", r.min},
          {"noise", r.noise},         {"error_kind", r.error_kind},
          {"error_message", r.error_message}, {"features_version", r.features_version},
          {"machine", json::parse(r.machine)}, {"tensorsched_version", r.tensorsched_version},
          {"policy", r.policy},       {"timestamp_us", r.timestamp_us}, {"features", r.features},
          {"threads", r.threads}};
}

namespace {

// What an import must prove beyond add()'s checks: the schedule is one tensorsched can replay and
// its hash is the one recorded (the hash is the schedule's checksum), the keys hash to the
// recorded hashes, and the features have the layout of their version (one from the future is
// refused: nothing here could read it).
void check_imported(const Record& r) {
  Schedule s;
  try {
    s = Schedule::from_json(r.schedule_json);
  } catch (const Error& e) {
    throw Error(fmt::format("the schedule is not a tensorsched schedule: {}", e.what()));
  }
  if (s.hash() != r.schedule_hash)
    throw Error(fmt::format("schedule_hash {} is not the schedule's hash {} (altered or damaged)", r.schedule_hash,
                            s.hash()));
  if (r.features_version > kFeaturesVersion)
    throw Error(fmt::format("features_version {} is newer than this build's {}", r.features_version, kFeaturesVersion));
  if (r.features_version == kFeaturesVersion && !r.features.empty() && r.features.size() != flat_feature_names().size())
    throw Error(fmt::format("{} features; version {} has {}", r.features.size(), r.features_version,
                            flat_feature_names().size()));
}

}  // namespace

Record record_from_json(const json& j) {
  auto str = [](const json& o, const char* key) { return o.at(key).get<std::string>(); };
  const json& w = j.at("workload");
  if (w.contains("key_hash") && str(w, "key_hash") != fnv1a_hex(str(w, "exact_key")))
    throw Error("workload key_hash is not the hash of its exact_key (altered or damaged)");
  Record r{0, {str(w, "exact_key"), str(w, "class_key"), str(w, "name"), w.at("flops").get<int64_t>(), "", ""},
           j.at("schedule").dump(), str(j, "schedule_hash"), j.at("times").get<std::vector<double>>(),
           0, 0, 0, str(j, "error_kind"), str(j, "error_message"), j.at("features_version").get<int>(),
           j.at("machine").dump(), str(j, "tensorsched_version"), str(j, "policy"),
           j.at("timestamp_us").get<int64_t>(), j.value("features", std::vector<float>{}), j.value("threads", 0)};
  // add() would fill these with this machine's values: an import keeps the originals.
  if (r.timestamp_us <= 0) throw Error("timestamp_us must be positive");
  if (r.tensorsched_version.empty()) throw Error("empty tensorsched_version");
  check_imported(r);
  if (w.contains("subgraph")) {
    if (!base64_decode(str(w, "subgraph"), r.workload.subgraph)) throw Error("workload subgraph is not base64");
    const Workload sub = workload_from_subgraph(r.workload.subgraph, "the record's workload subgraph");
    if (sub.key_hash() != fnv1a_hex(r.workload.exact_key))
      throw Error(fmt::format("workload subgraph is workload {}, not the record's {}", sub.key_hash(),
                              fnv1a_hex(r.workload.exact_key)));
  }
  return r;
}

}  // namespace ts
