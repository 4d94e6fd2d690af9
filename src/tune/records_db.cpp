#include "tune/records_db.h"
#include "tune/record_json.h"
#include "measure/time_stats.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "codegen_hash.h"
#include "graph/error.h"
#include "features/features.h"
#include "graph/workload.h"
#include "graph/workload_onnx.h"
#include "schedule/schedule.h"

#ifndef TENSORSCHED_VERSION
#define TENSORSCHED_VERSION "unknown"
#endif

namespace ts {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kMagic = "tensorsched-records";
constexpr int kBusyTimeoutMs = 30000;  // a tuner's batch commit is short; wait rather than fail

// Version 1. Times are seconds; timestamps microseconds since the Unix epoch. median/min/noise
// are derived from times and stored so best() can sort in SQL.
constexpr const char* kSchema = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE workloads (
  exact_key TEXT PRIMARY KEY, key_hash TEXT NOT NULL, class_key TEXT NOT NULL, class_hash TEXT NOT NULL,
  name TEXT NOT NULL, flops INTEGER NOT NULL);
CREATE INDEX workloads_class ON workloads (class_hash);
CREATE TABLE measurements (
  id INTEGER PRIMARY KEY, workload_key TEXT NOT NULL REFERENCES workloads (exact_key),
  schedule TEXT NOT NULL, schedule_hash TEXT NOT NULL,
  times TEXT NOT NULL, median REAL, min REAL, noise REAL,
  error_kind TEXT NOT NULL, error_message TEXT NOT NULL,
  features_version INTEGER NOT NULL, machine TEXT NOT NULL, tensorsched_version TEXT NOT NULL,
  policy TEXT NOT NULL, timestamp_us INTEGER NOT NULL);
-- (workload_key, median) serves records() and best()'s ordering; the second serves has().
CREATE INDEX measurements_workload ON measurements (workload_key, median);
CREATE INDEX measurements_schedule ON measurements (workload_key, schedule_hash);
)sql";

// Added after version 1 without changing its meaning: created on open when missing, so older
// files gain it. One row per record that has features: float32 values, little-endian, in the
// layout of the record's features_version.
constexpr const char* kFeaturesTable = R"sql(
CREATE TABLE IF NOT EXISTS features (record_id INTEGER PRIMARY KEY REFERENCES measurements (id), data BLOB NOT NULL);
)sql";

// Added after version 1 like `features`: each workload's subgraph (graph/workload_onnx.h, a
// serialized ONNX model), so that its records can be featurized again without the model file.
constexpr const char* kSubgraphsTable = R"sql(
CREATE TABLE IF NOT EXISTS subgraphs (workload_key TEXT PRIMARY KEY REFERENCES workloads (exact_key), onnx BLOB NOT NULL);
)sql";

// Added after version 1 like `features`: which workloads each tuned model holds, and how often,
// so that tuning reuse can pick donor models (tune/reuse.h). rowid keeps the model's order.
constexpr const char* kModelsTable = R"sql(
CREATE TABLE IF NOT EXISTS model_workloads (
  model TEXT NOT NULL, workload_key TEXT NOT NULL REFERENCES workloads (exact_key), count INTEGER NOT NULL,
  PRIMARY KEY (model, workload_key));
)sql";

constexpr const char* kSelectRecords = R"sql(
SELECT m.id, w.exact_key, w.class_key, w.name, w.flops, w.key_hash, w.class_hash, m.schedule, m.schedule_hash,
       m.times, m.median, m.min, m.noise, m.error_kind, m.error_message, m.features_version, m.machine,
       m.tensorsched_version, m.policy, m.timestamp_us, f.data, m.threads
FROM measurements m JOIN workloads w ON w.exact_key = m.workload_key LEFT JOIN features f ON f.record_id = m.id
)sql";

Error not_ours(const std::string& path, const std::string& why) {
  return Error(fmt::format("{}: not a tensorsched records database ({})", path, why));
}

// SQLite's own error, with corruption reported like any other foreign file.
[[noreturn]] void fail(sqlite3* db, const std::string& path, const std::string& what) {
  int rc = sqlite3_errcode(db) & 0xff;
  std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB) throw not_ours(path, "corrupt: " + msg);
  throw Error(fmt::format("{}: {}: {}", path, what, msg));
}

void exec(sqlite3* db, const std::string& path, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(db, path, "records database");
}

// A prepared statement with bound parameters; finalized on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) fail(db, path, "records database");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  Stmt& bind(int i, int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
  Stmt& bind(int i, double v) { return check(sqlite3_bind_double(s_, i, v)); }
  Stmt& bind_null(int i) { return check(sqlite3_bind_null(s_, i)); }
  Stmt& bind_blob(int i, const void* p, size_t n) {
    return check(sqlite3_bind_blob(s_, i, p, static_cast<int>(n), SQLITE_TRANSIENT));
  }
  // True while there is a row to read.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) fail(db_, path_, "records database");
    return false;
  }
  std::string text(int c) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p ? std::string(p, sqlite3_column_bytes(s_, c)) : std::string();
  }
  // Ends the current run so the statement holds no read lock, ready to be bound again.
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  int64_t integer(int c) const { return sqlite3_column_int64(s_, c); }
  std::string blob(int c) const {
    const void* p = sqlite3_column_blob(s_, c);
    return p ? std::string(static_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s_, c))) : std::string();
  }
  // A float32 array stored by bind_blob (empty for NULL).
  // A features blob; a damaged one (not whole floats, or a value not finite) reads as none, so
  // that it cannot travel on through an export.
  std::vector<float> floats(int c) const {
    const void* p = sqlite3_column_blob(s_, c);
    const size_t bytes = static_cast<size_t>(sqlite3_column_bytes(s_, c));
    std::vector<float> v(bytes / sizeof(float));
    if (p && !v.empty()) std::memcpy(v.data(), p, v.size() * sizeof(float));
    if (bytes % sizeof(float) != 0 || !std::all_of(v.begin(), v.end(), [](float f) { return std::isfinite(f); })) {
      spdlog::warn("{}: a damaged features blob ({} bytes) is read as no features", path_, bytes);
      v.clear();
    }
    return v;
  }
  double real(int c) const { return sqlite3_column_double(s_, c); }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) fail(db_, path_, "records database");
    return *this;
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* s_ = nullptr;
};

// BEGIN IMMEDIATE takes the write lock up front, so a busy writer is waited for (busy timeout)
// instead of failing when a read transaction later tries to upgrade. Rolls back unless committed.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) { exec(db, path, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  void commit() {
    exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

// Added after version 1 like `features`: the Halide thread count of each measurement (a
// schedule's rank depends on it), 0 for the records of older files. Looked for without a lock
// (every open, readers included); added in a write transaction that looks again, so two
// processes opening an old file add it once.
void add_threads_column(sqlite3* db, const std::string& path) {
  auto present = [&] {
    Stmt has(db, path, "SELECT count(*) FROM pragma_table_info('measurements') WHERE name = 'threads'");
    return has.step() && has.integer(0) > 0;
  };
  if (present()) return;
  Transaction txn(db, path);
  if (!present()) exec(db, path, "ALTER TABLE measurements ADD COLUMN threads INTEGER NOT NULL DEFAULT 0");
  txn.commit();
}

// Keeps the first subgraph stored of a workload (they are equal: the key is the graph).
void put_subgraph(sqlite3* db, const std::string& path, const WorkloadEntry& w) {
  if (w.subgraph.empty()) return;
  Stmt s(db, path, "INSERT INTO subgraphs (workload_key, onnx) VALUES (?1, ?2) ON CONFLICT (workload_key) DO NOTHING");
  s.bind(1, w.exact_key).bind_blob(2, w.subgraph.data(), w.subgraph.size()).step();
}

uint32_t be32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// Checks the 100-byte SQLite header by plain reading, before SQLite touches the file: a foreign
// or damaged file is rejected without ever being opened for writing.
void check_header(const std::string& path, uintmax_t size) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot read records database: {}", path, std::strerror(errno)));
  unsigned char h[100] = {};
  f.read(reinterpret_cast<char*>(h), sizeof h);
  auto got = static_cast<size_t>(f.gcount());
  if (got < 16 || std::memcmp(h, "SQLite format 3", 16) != 0) throw not_ours(path, "not a SQLite file");
  if (got < sizeof h) throw not_ours(path, fmt::format("truncated: {} bytes", size));
  uint32_t app = be32(h + 68);
  if (app != RecordsDB::kApplicationId)
    throw not_ours(path, app == 0 ? std::string("a SQLite database of another application: no application_id")
                                  : fmt::format("a SQLite database of another application: application_id 0x{:08x}", app));
  uint32_t page = uint32_t(h[16]) << 8 | h[17];
  if (page == 1) page = 65536;
  if (page < 512 || (page & (page - 1)) != 0) throw not_ours(path, fmt::format("corrupt header: page size {}", page));
  // The page count in the header is valid when the two change counters agree. A checkpoint in
  // another process may briefly write page 1 before extending the file, so a WAL excuses it.
  uint32_t pages = be32(h + 28);
  uintmax_t expected = uintmax_t(pages) * page;
  bool header_size_valid = pages != 0 && be32(h + 24) == be32(h + 92);
  std::error_code ec;
  bool wal = fs::file_size(path + "-wal", ec) > 0 && !ec;
  if (!wal && (size % page != 0 || (header_size_valid && size < expected)))
    throw not_ours(path, fmt::format("truncated: {} of {} bytes", size, header_size_valid ? expected : size));
}

// Automatic timestamps strictly increase within a process, so records of one batch stay distinct.
int64_t now_us() {
  using namespace std::chrono;
  static std::atomic<int64_t> last{0};
  int64_t t = duration_cast<microseconds>(system_clock::now().time_since_epoch()).count(), prev = last.load();
  while (!last.compare_exchange_weak(prev, std::max(t, prev + 1))) continue;
  return std::max(t, prev + 1);
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// JSON text nested deeper than this is refused before parsing: nlohmann's dump and destruction
// recurse, so a schedule nested 100,000 levels deep would overflow the stack. Real records nest 6.
constexpr int kMaxJsonDepth = 64;

json parse_bounded(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); i++) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') i++;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) throw Error(fmt::format("JSON nested more than {} levels deep", kMaxJsonDepth));
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return json::parse(text);
}

// Validates a record and fills what add() computes (hashes, stats, machine, version, time).
Record normalized(const Record& in, const std::string& path) {
  Record r = in;
  auto bad = [&](const std::string& why) {
    return Error(fmt::format("{}: cannot add record (workload '{}', schedule {}): {}", path, r.workload.name,
                             r.schedule_hash, why));
  };
  if (r.workload.exact_key.empty()) throw bad("empty workload key");
  if (r.schedule_hash.empty()) throw bad("empty schedule hash");
  r.workload.key_hash = fnv1a_hex(r.workload.exact_key);
  r.workload.class_hash = fnv1a_hex(r.workload.class_key);
  try {
    r.schedule_json = dump(parse_bounded(r.schedule_json));
  } catch (const json::exception& e) {
    throw bad(fmt::format("schedule is not JSON: {}", e.what()));
  }
  if (!r.valid() && std::find(kRecordErrorKinds.begin(), kRecordErrorKinds.end(), r.error_kind) == kRecordErrorKinds.end())
    throw bad(fmt::format("unknown error kind '{}'", r.error_kind));
  if (r.valid() && r.times.empty()) throw bad("a valid record needs times");
  for (double t : r.times)
    if (!std::isfinite(t) || t < 0) throw bad(fmt::format("bad time {}", t));
  for (float f : r.features)
    if (!std::isfinite(f)) throw bad("a feature is not finite");
  if (!r.features.empty() && r.features_version <= 0) throw bad("features without a features_version");
  if (r.threads < 0) throw bad(fmt::format("negative thread count {}", r.threads));
  const TimeStats st = time_stats(r.times);
  r.median = st.median;
  r.min = st.min;
  r.noise = st.noise;
  try {
    r.machine = r.machine.empty() ? dump(machine_fingerprint()) : dump(parse_bounded(r.machine));
  } catch (const json::exception& e) {
    throw bad(fmt::format("machine is not JSON: {}", e.what()));
  }
  if (r.tensorsched_version.empty()) r.tensorsched_version = TENSORSCHED_VERSION;
  if (r.timestamp_us == 0) r.timestamp_us = now_us();
  return r;
}

// NULL median/min/noise (a record without times) read as 0.
Record read_record(const Stmt& s) {
  return {s.integer(0),  {s.text(1), s.text(2), s.text(3), s.integer(4), s.text(5), s.text(6), {}},
          s.text(7),     s.text(8), json::parse(s.text(9)).get<std::vector<double>>(),
          s.real(10),    s.real(11), s.real(12), s.text(13), s.text(14), static_cast<int>(s.integer(15)),
          s.text(16),    s.text(17), s.text(18), s.integer(19), s.floats(20), static_cast<int>(s.integer(21))};
}

// The value of the first "key<tabs>: value" line of /proc/cpuinfo, or "".
std::string cpuinfo_value(const std::string& text, const std::string& key) {
  std::smatch m;
  return std::regex_search(text, m, std::regex("^" + key + "[ \t]*:[ \t]*(.*)$", std::regex::multiline)) ? m.str(1)
                                                                                                          : "";
}

}  // namespace

WorkloadEntry workload_entry(const Workload& w) {
  return {w.exact_key, w.class_key, w.name, w.flops, w.key_hash(), w.class_hash(), workload_subgraph(w)};
}

const json& machine_fingerprint() {
  static const json fp = [] {
    std::ifstream f("/proc/cpuinfo");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    std::string cpu = cpuinfo_value(text, "model name");
    if (cpu.empty()) cpu = "unknown";
    std::string flags = cpuinfo_value(text, "flags");  // x86; "Features" on Arm
    if (flags.empty()) flags = cpuinfo_value(text, "Features");
    static const std::set<std::string> wanted = {"avx2",        "avx512f", "avx512bw", "avx512vl",
                                                 "avx512_vnni", "fma",     "asimd",    "sve"};
    std::set<std::string> isa;  // sorted: the fingerprint is compared as text
    std::istringstream in(flags);
    for (std::string flag; in >> flag;)
      if (wanted.count(flag) || flag.rfind("amx", 0) == 0) isa.insert(flag);
    // Cache sizes as the kernel reports them ("48K"), by level and type.
    json caches = json::object();
    for (int i = 0; i < 8; i++) {
      const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
      auto read = [&](const char* f) {
        std::ifstream in(dir + f);
        std::string v;
        std::getline(in, v);
        return v;
      };
      const std::string level = read("level"), type = read("type"), size = read("size");
      if (level.empty()) break;
      caches[fmt::format("L{}{}", level, type == "Data" ? "d" : type == "Instruction" ? "i" : "")] = size;
    }
    return json{{"cpu", cpu},
                {"cores", std::thread::hardware_concurrency()},
                {"isa", isa},
                {"caches", caches},
                {"tensorsched_version", TENSORSCHED_VERSION},
                {"code_generator", TENSORSCHED_CODEGEN_HASH}};
  }();
  return fp;
}

void RecordsDB::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

RecordsDB::RecordsDB(std::string path, Open mode)
    : path_(std::move(path)), this_machine_(dump(machine_fingerprint())) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path_, ec)) && !fs::exists(path_, ec))
    throw Error(fmt::format("{}: a symbolic link to nothing; refusing to create its target", path_));
  bool exists = fs::exists(path_, ec);
  if (exists && !fs::is_regular_file(path_, ec)) throw not_ours(path_, "not a regular file");
  uintmax_t size = exists ? fs::file_size(path_, ec) : 0;
  if (ec) throw Error(fmt::format("{}: cannot open records database: {}", path_, ec.message()));
  if (mode == Open::MustExist && size == 0)
    throw Error(fmt::format("{}: no such records database{}", path_, exists ? " (the file is empty)" : ""));
  if (size > 0) {
    check_header(path_, size);
    open_existing();
  } else {
    create_or_attach();
  }
  // Persistent in the file; NORMAL is durable against a killed process (not a power cut) in WAL.
  {
    Stmt wal(db_.get(), path_, "PRAGMA journal_mode=WAL");
    if (!wal.step() || wal.text(0) != "wal")
      throw Error(fmt::format("{}: cannot switch the records database to WAL mode", path_));
  }
  exec(db_.get(), path_, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON");
}

RecordsDB::~RecordsDB() = default;

void RecordsDB::open_existing() {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  db_.reset(db);
  if (rc != SQLITE_OK) fail(db, path_, "cannot open records database");
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  check_meta();
  // Reads every page once: a damaged file is refused now, before anything is written to it.
  {
    Stmt check(db, path_, "PRAGMA quick_check(1)");
    if (!check.step() || check.text(0) != "ok") throw not_ours(path_, "corrupt: " + check.text(0));
  }
  exec(db, path_, kFeaturesTable);
  exec(db, path_, kModelsTable);
  exec(db, path_, kSubgraphsTable);
  add_threads_column(db, path_);
}

// A new or empty file: creates the schema, unless another process did it first.
void RecordsDB::create_or_attach() {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  db_.reset(db);
  if (rc != SQLITE_OK) fail(db, path_, "cannot create records database");
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  Transaction txn(db, path_);
  uint32_t app_id = 0;
  int64_t tables = 0;
  {
    Stmt app(db, path_, "PRAGMA application_id");
    if (app.step()) app_id = static_cast<uint32_t>(app.integer(0));
    Stmt schema(db, path_, "SELECT count(*) FROM sqlite_schema");
    if (schema.step()) tables = schema.integer(0);
  }
  if (app_id == 0 && tables == 0) {
    exec(db, path_, kSchema);
    // A constant, not a value: PRAGMA takes no bound parameters.
    exec(db, path_, fmt::format("PRAGMA application_id={}", static_cast<int32_t>(kApplicationId)).c_str());
    Stmt meta(db, path_, "INSERT INTO meta (key, value) VALUES ('magic', ?1), ('schema_version', ?2)");
    meta.bind(1, std::string(kMagic)).bind(2, std::to_string(kSchemaVersion)).step();
  } else if (app_id != kApplicationId) {
    throw not_ours(path_, "a SQLite database of another application");
  }
  txn.commit();
  check_meta();
  exec(db, path_, kFeaturesTable);
  exec(db, path_, kModelsTable);
  exec(db, path_, kSubgraphsTable);
  add_threads_column(db, path_);
}

void RecordsDB::check_meta() {
  sqlite3* db = db_.get();
  Stmt has_meta(db, path_, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'");
  if (!has_meta.step() || has_meta.integer(0) == 0) throw not_ours(path_, "no meta table");
  std::string magic, version;
  Stmt meta(db, path_, "SELECT key, value FROM meta WHERE key IN ('magic', 'schema_version')");
  while (meta.step()) (meta.text(0) == "magic" ? magic : version) = meta.text(1);
  if (magic != kMagic) throw not_ours(path_, fmt::format("magic is '{}'", magic));
  int v = 0;
  auto [end, err] = std::from_chars(version.data(), version.data() + version.size(), v);
  if (err != std::errc() || end != version.data() + version.size() || v < 1)
    throw not_ours(path_, fmt::format("bad schema version '{}'", version));
  if (v > kSchemaVersion)
    throw Error(fmt::format("{}: records database schema version {} is newer than this tensorsched supports ({}); "
                            "use a newer tensorsched",
                            path_, v, kSchemaVersion));
}

int64_t RecordsDB::insert(const Record& in) {
  Record r = normalized(in, path_);
  sqlite3* db = db_.get();
  const auto& w = r.workload;
  Stmt wl(db, path_,
          "INSERT INTO workloads (exact_key, key_hash, class_key, class_hash, name, flops) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (exact_key) DO NOTHING");
  wl.bind(1, w.exact_key).bind(2, w.key_hash).bind(3, w.class_key).bind(4, w.class_hash).bind(5, w.name);
  wl.bind(6, w.flops).step();
  put_subgraph(db, path_, w);
  Stmt m(db, path_,
         "INSERT INTO measurements (workload_key, schedule, schedule_hash, times, median, min, noise, error_kind, "
         "error_message, features_version, machine, tensorsched_version, policy, timestamp_us, threads) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  m.bind(1, w.exact_key).bind(2, r.schedule_json).bind(3, r.schedule_hash).bind(4, dump(json(r.times)));
  if (r.times.empty()) {
    m.bind_null(5).bind_null(6).bind_null(7);
  } else {
    m.bind(5, r.median).bind(6, r.min).bind(7, r.noise);
  }
  m.bind(8, r.error_kind).bind(9, r.error_message).bind(10, int64_t{r.features_version}).bind(11, r.machine);
  m.bind(12, r.tensorsched_version).bind(13, r.policy).bind(14, r.timestamp_us).bind(15, int64_t{r.threads}).step();
  const int64_t id = sqlite3_last_insert_rowid(db);
  if (!r.features.empty()) {
    static_assert(std::endian::native == std::endian::little, "features are stored as little-endian float32");
    Stmt f(db, path_, "INSERT INTO features (record_id, data) VALUES (?1, ?2)");
    f.bind(1, id).bind_blob(2, r.features.data(), r.features.size() * sizeof(float)).step();
  }
  return id;
}

int64_t RecordsDB::add(const Record& r) {
  std::lock_guard lock(mu_);
  Transaction txn(db_.get(), path_);
  int64_t id = insert(r);
  txn.commit();
  return id;
}

bool RecordsDB::add_if_absent(const Record& r) {
  std::lock_guard lock(mu_);
  Transaction txn(db_.get(), path_);  // BEGIN IMMEDIATE: no other writer between the check and the insert
  {
    Stmt s(db_.get(), path_,
           "SELECT 1 FROM measurements WHERE workload_key = ?1 AND schedule_hash = ?2 AND (?3 OR machine = ?4) LIMIT 1");
    s.bind(1, r.workload.exact_key).bind(2, r.schedule_hash).bind(3, int64_t{allow_foreign_}).bind(4, this_machine_);
    if (s.step()) return false;
  }
  insert(r);
  txn.commit();
  return true;
}

void RecordsDB::add(const std::vector<Record>& batch) {
  std::lock_guard lock(mu_);
  Transaction txn(db_.get(), path_);
  for (const auto& r : batch) insert(r);
  txn.commit();
}

void RecordsDB::each(const std::string& where, std::vector<std::string> args,
                     const std::function<bool(Record)>& visit) const {
  // The machine filter binds after the caller's parameters, before any ORDER BY.
  std::string sql = std::string(kSelectRecords) + where;
  if (!allow_foreign_) {
    args.push_back(this_machine_);
    const std::string clause = fmt::format(" AND m.machine = ?{} ", args.size());
    const size_t order = sql.find("ORDER BY");
    sql.insert(order == std::string::npos ? sql.size() : order, clause);
  }
  Stmt s(db_.get(), path_, sql.c_str());
  for (size_t i = 0; i < args.size(); ++i) s.bind(static_cast<int>(i + 1), args[i]);
  while (s.step())
    if (!visit(read_record(s))) return;
}

std::vector<Record> RecordsDB::query(const std::string& where, std::vector<std::string> args) const {
  std::vector<Record> out;
  each(where, std::move(args), [&](Record r) {
    out.push_back(std::move(r));
    return true;
  });
  return out;
}

std::vector<Record> RecordsDB::best(const std::string& exact_key, size_t n, int threads) const {
  std::lock_guard lock(mu_);
  std::vector<Record> out;
  std::set<std::string> seen;  // a schedule measured twice takes one slot, with its best time
  if (n == 0) return out;
  // Stops reading at the n-th distinct schedule (the tuner asks for the best after every batch).
  const std::string at_threads = threads > 0 ? fmt::format("AND m.threads IN (0, {}) ", threads) : "";
  each("WHERE m.workload_key = ?1 AND m.error_kind = '' AND m.median IS NOT NULL AND m.policy != ?2 " + at_threads +
           "ORDER BY m.median, m.id",
       {exact_key, kNetworkConfirmPolicy},
       [&](Record r) {
         if (seen.insert(r.schedule_hash).second) out.push_back(std::move(r));
         return out.size() < n;
       });
  return out;
}

std::vector<Record> RecordsDB::records(const std::string& exact_key) const {
  std::lock_guard lock(mu_);
  return query("WHERE m.workload_key = ?1 ORDER BY m.id", {exact_key});
}

std::optional<Record> RecordsDB::record(int64_t id) const {
  std::lock_guard lock(mu_);
  std::vector<Record> r = query("WHERE m.id = CAST(?1 AS INTEGER)", {std::to_string(id)});
  if (r.empty()) return std::nullopt;
  return std::move(r.front());
}

std::vector<Record> RecordsDB::records_of_class(const std::string& class_key) const {
  std::lock_guard lock(mu_);
  return query("WHERE w.class_hash = ?1 AND w.class_key = ?2 ORDER BY m.id", {fnv1a_hex(class_key), class_key});
}

bool RecordsDB::has(const std::string& exact_key, const std::string& schedule_hash) const {
  std::lock_guard lock(mu_);
  Stmt s(db_.get(), path_,
         "SELECT 1 FROM measurements WHERE workload_key = ?1 AND schedule_hash = ?2 AND (?3 OR machine = ?4) LIMIT 1");
  s.bind(1, exact_key).bind(2, schedule_hash).bind(3, int64_t{allow_foreign_}).bind(4, this_machine_);
  return s.step();
}

std::vector<RecordsDB::MachineRecords> RecordsDB::machines() const {
  std::lock_guard lock(mu_);
  Stmt s(db_.get(), path_, "SELECT machine, count(*) FROM measurements GROUP BY machine ORDER BY min(id)");
  std::vector<MachineRecords> out;
  while (s.step()) out.push_back({s.text(0), s.integer(1), s.text(0) == this_machine_});
  return out;
}

int64_t RecordsDB::foreign_count(const std::string& exact_key) const {
  std::lock_guard lock(mu_);
  Stmt s(db_.get(), path_, "SELECT count(*) FROM measurements WHERE machine != ?1 AND (?2 = '' OR workload_key = ?2)");
  s.bind(1, this_machine_).bind(2, exact_key);
  s.step();
  return s.integer(0);
}

int64_t RecordsDB::count() const {
  std::lock_guard lock(mu_);
  Stmt s(db_.get(), path_, "SELECT count(*) FROM measurements");
  s.step();
  return s.integer(0);
}

void RecordsDB::set_model(const std::string& model, const std::vector<ModelWorkload>& workloads) {
  if (model.empty()) throw Error(fmt::format("{}: a model needs a name", path_));
  std::lock_guard lock(mu_);
  sqlite3* db = db_.get();
  Transaction txn(db, path_);
  Stmt clear(db, path_, "DELETE FROM model_workloads WHERE model = ?1");
  clear.bind(1, model).step();
  // The class key is this version's: a workload first recorded by an older one gets it too.
  Stmt wl(db, path_,
          "INSERT INTO workloads (exact_key, key_hash, class_key, class_hash, name, flops) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (exact_key) DO UPDATE SET class_key = excluded.class_key, "
          "class_hash = excluded.class_hash");
  Stmt mw(db, path_, "INSERT OR REPLACE INTO model_workloads (model, workload_key, count) VALUES (?1, ?2, ?3)");
  for (const auto& m : workloads) {
    const WorkloadEntry& w = m.workload;
    if (w.exact_key.empty() || w.class_key.empty() || m.count < 1)
      throw Error(fmt::format("{}: model {}: a workload needs keys and a count >= 1", path_, model));
    wl.bind(1, w.exact_key).bind(2, fnv1a_hex(w.exact_key)).bind(3, w.class_key).bind(4, fnv1a_hex(w.class_key));
    wl.bind(5, w.name).bind(6, w.flops).step();
    wl.reset();
    put_subgraph(db, path_, w);
    mw.bind(1, model).bind(2, w.exact_key).bind(3, int64_t{m.count}).step();
    mw.reset();
  }
  txn.commit();
}

std::string RecordsDB::subgraph(const std::string& exact_key) const {
  std::lock_guard lock(mu_);
  return subgraph_locked(exact_key);
}

std::string RecordsDB::subgraph_locked(const std::string& exact_key) const {
  Stmt s(db_.get(), path_, "SELECT onnx FROM subgraphs WHERE workload_key = ?1");
  s.bind(1, exact_key);
  return s.step() ? s.blob(0) : std::string();
}

void RecordsDB::set_features(const std::vector<std::pair<int64_t, std::vector<float>>>& features, int version) {
  std::lock_guard lock(mu_);
  sqlite3* db = db_.get();
  Transaction txn(db, path_);
  Stmt v(db, path_, "UPDATE measurements SET features_version = ?2 WHERE id = ?1");
  Stmt del(db, path_, "DELETE FROM features WHERE record_id = ?1");
  Stmt f(db, path_, "INSERT INTO features (record_id, data) VALUES (?1, ?2)");
  for (const auto& [id, x] : features) {
    v.bind(1, id).bind(2, int64_t{version}).step();
    v.reset();
    del.bind(1, id).step();
    del.reset();
    if (x.empty()) continue;
    f.bind(1, id).bind_blob(2, x.data(), x.size() * sizeof(float)).step();
    f.reset();
  }
  txn.commit();
}

std::vector<ModelWorkload> RecordsDB::model_workloads(const std::string& model) const {
  std::lock_guard lock(mu_);
  Stmt s(db_.get(), path_,
         "SELECT m.model, w.exact_key, w.class_key, w.name, w.flops, w.key_hash, w.class_hash, m.count "
         "FROM model_workloads m JOIN workloads w ON w.exact_key = m.workload_key "
         "WHERE ?1 = '' OR m.model = ?1 ORDER BY m.model, m.rowid");
  s.bind(1, model);
  std::vector<ModelWorkload> out;
  while (s.step())
    out.push_back({s.text(0), {s.text(1), s.text(2), s.text(3), s.integer(4), s.text(5), s.text(6), {}},
                   static_cast<int>(s.integer(7))});
  return out;
}

std::vector<WorkloadEntry> RecordsDB::workloads() const {
  std::lock_guard lock(mu_);
  Stmt s(db_.get(), path_,
         "SELECT exact_key, class_key, name, flops, key_hash, class_hash FROM workloads ORDER BY rowid");
  std::vector<WorkloadEntry> out;
  while (s.step()) out.push_back({s.text(0), s.text(1), s.text(2), s.integer(3), s.text(4), s.text(5), {}});
  return out;
}

void RecordsDB::export_jsonl(std::ostream& out, bool this_machine_only) const {
  std::lock_guard lock(mu_);
  Stmt s(db_.get(), path_, (std::string(kSelectRecords) + "WHERE ?1 = 0 OR m.machine = ?2 ORDER BY m.id").c_str());
  s.bind(1, int64_t{this_machine_only}).bind(2, this_machine_);
  std::set<std::string> with_subgraph;  // the first record of each workload carries its subgraph
  while (s.step()) {
    Record r = read_record(s);
    if (with_subgraph.insert(r.workload.exact_key).second) r.workload.subgraph = subgraph_locked(r.workload.exact_key);
    out << dump(record_to_json(r)) << '\n';
  }
  if (!out) throw Error(fmt::format("{}: export failed: cannot write the output", path_));
}

RecordsDB::ImportResult RecordsDB::import_jsonl(std::istream& in, const std::string& source) {
  std::lock_guard lock(mu_);
  sqlite3* db = db_.get();
  Transaction txn(db, path_);
  Stmt dup(db, path_,
           "SELECT 1 FROM measurements WHERE workload_key = ?1 AND schedule_hash = ?2 AND timestamp_us = ?3 LIMIT 1");
  ImportResult result;
  size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Record r;
    try {
      try {
        r = record_from_json(parse_bounded(line));
      } catch (const json::exception& e) {
        throw Error(fmt::format("not a tensorsched record: {}", e.what()));
      }
      dup.bind(1, r.workload.exact_key).bind(2, r.schedule_hash).bind(3, r.timestamp_us);
      const bool present = dup.step();
      dup.reset();
      if (present) {
        result.present++;
        continue;
      }
      insert(r);
      result.added++;
    } catch (const std::exception& e) {  // this line only: the rest still imports
      dup.reset();
      result.rejected.push_back({line_no, printable_name(e.what())});
    }
  }
  if (in.bad()) throw Error(fmt::format("{}: read error", source));
  txn.commit();
  return result;
}

}  // namespace ts
