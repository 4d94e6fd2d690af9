#pragma once
// A data set as one file to ship: the records of a database as gzip-compressed JSONL (the lines
// of RecordsDB::export_jsonl, each workload's subgraph in its first record), and back.
#include <cstdint>
#include <string>

#include "tune/records_db.h"

namespace ts {

// Writes every record of `db` whose policy is of `split` (any data set split when "") to `path`
// (gzip, written then renamed); returns the records written. Throws Error naming the file.
int64_t export_dataset(const RecordsDB& db, const std::string& path, const std::string& split = "");
// Adds the records of such a file (gzip or plain JSONL) that `db` lacks. Throws Error naming the
// file when it cannot be read or is not gzip nor text.
RecordsDB::ImportResult import_dataset(RecordsDB& db, const std::string& path);

}  // namespace ts
