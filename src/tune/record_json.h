#pragma once
// One record as JSON, the line format of RecordsDB::export_jsonl / import_jsonl (and of a shipped
// data set): the workload (keys, name, flops; its ONNX subgraph in base64 when the record carries
// it), the schedule as JSON, every repeat's time, error, features, machine fingerprint, policy
// and timestamp.
#include <nlohmann/json.hpp>

#include "tune/records_db.h"

namespace ts {

nlohmann::json record_to_json(const Record& r);
// Hashes, median, min and noise are recomputed by add(), so they are not read. Throws Error
// (the reason) when the object is not a record this build can replay: an altered key hash or
// schedule hash, a schedule that does not parse, features of a layout or version it does not
// have, a subgraph that is not the record's workload.
Record record_from_json(const nlohmann::json& j);

}  // namespace ts
