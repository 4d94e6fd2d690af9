#pragma once
// Tuning records database: every measurement (workload, schedule, times of each repeat, error,
// machine, timestamp) in one SQLite file. A record is committed before add() returns, so a killed
// tuner resumes without measuring a schedule twice. Several processes may share one file (WAL
// mode, busy timeout). A file that is not ours is never written to: opening it throws ts::Error.
#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;

namespace ts {

struct Workload;

// Values of Record::error_kind for a failed measurement ("" means the measurement is valid).
inline constexpr std::array<std::string_view, 7> kRecordErrorKinds = {
    "compile_error", "runtime_error", "crash", "timeout", "wrong_answer", "invalid_schedule", "runner_lost"};

// What the database stores about a workload (one row per exact key).
struct WorkloadEntry {
  std::string exact_key;   // Workload::exact_key: structure, attributes and shapes
  std::string class_key;   // Workload::class_key: the same without shapes (tuning reuse)
  std::string name;        // short readable name, e.g. "Conv+Add+Relu"
  int64_t flops = 0;       // arithmetic operations of one occurrence
  std::string key_hash;    // fnv1a_hex(exact_key); computed by add(), read back by queries
  std::string class_hash;  // fnv1a_hex(class_key); computed by add(), read back by queries
  std::string subgraph;    // graph/workload_onnx.h workload_subgraph(): stored by add() and set_model(), "" from queries (subgraph())
};

// The entry of a partitioned workload.
WorkloadEntry workload_entry(const Workload& w);

// One workload of a tuned model (tuning reuse picks donor models by what they hold).
struct ModelWorkload {
  std::string model;       // the model's name (tune: model_name() of its file)
  WorkloadEntry workload;  // the workload
  int count = 0;           // its occurrences in the model
};

// One measurement of one schedule of one workload.
// Records of this policy hold a workload's time measured as steps of its whole model (a step's
// mean there, tune/network_refine.h), not alone: a pair of them decides like a standalone
// re-measurement (tune/tuner.h), but best() skips them and nothing learns from them.
inline constexpr const char* kNetworkConfirmPolicy = "confirm-network";

struct Record {
  int64_t id = 0;                   // row id in the database; set by queries, ignored by add()
  WorkloadEntry workload;           // the workload measured
  std::string schedule_json;        // the Schedule as JSON; stored compact with sorted keys
  std::string schedule_hash;        // the Schedule's stable hash: identifies it within the workload
  std::vector<double> times;        // seconds of every repeat, in order; may be empty on error
  double median = 0;                // median of times (s); computed by add(), 0 without times
  double min = 0;                   // fastest repeat (s); computed by add()
  double noise = 0;                 // (max - min) / mean of times; computed by add()
  std::string error_kind;           // "" when valid, else one of kRecordErrorKinds
  std::string error_message;        // what went wrong (compiler output, signal, ...); "" when valid
  int features_version = 0;         // version of the feature extractor in use when measured
  std::string machine;              // machine_fingerprint() as JSON; add() fills it when empty
  std::string tensorsched_version;  // tensorsched that measured it; add() fills it when empty
  std::string policy;               // search policy that proposed the schedule, e.g. "random"
  int64_t timestamp_us = 0;         // microseconds since the Unix epoch; add() fills it when 0
  std::vector<float> features;      // flat features (features/features.h) in features_version's layout; empty when none
  int threads = 0;                  // Halide threads the times were measured with; 0 = not recorded (older records)

  bool valid() const { return error_kind.empty(); }
};

// This machine and this build as a JSON object: {"cpu", "cores", "isa": [flags of interest],
// "caches": {"L1d": "48K", ...}, "tensorsched_version", "code_generator": hash of the code
// generator's sources}. Times are only comparable between records with the same fingerprint.
const nlohmann::json& machine_fingerprint();

// Not copyable; all methods may be called from several threads (they take a lock).
class RecordsDB {
 public:
  static constexpr int kSchemaVersion = 1;
  static constexpr uint32_t kApplicationId = 0x54535244;  // "TSRD" in the SQLite header

  // Whether a missing (or empty) file is created: commands that only read records never create
  // one (a mistyped path is an error, not a new empty database).
  enum class Open { CreateIfMissing, MustExist };

  // Opens or creates the database at `path`. Throws ts::Error for a file that is not a
  // tensorsched records database (not SQLite, truncated, corrupt, another application's) or
  // whose schema is newer than this code; such a file is left untouched.
  explicit RecordsDB(std::string path, Open mode = Open::CreateIfMissing);
  ~RecordsDB();
  RecordsDB(const RecordsDB&) = delete;
  RecordsDB& operator=(const RecordsDB&) = delete;

  const std::string& path() const { return path_; }

  // Which records the queries below (best, records, records_of_class, has) see: by default only
  // those of this machine and build (machine_fingerprint() equal), so that run, compile, resume
  // and transfer never act on times measured elsewhere; every record once allowed. count,
  // workloads and machines always see all; export_jsonl says which it writes.
  void set_allow_foreign(bool allow) { allow_foreign_ = allow; }
  bool allows_foreign() const { return allow_foreign_; }
  // Records of another machine or build (of one workload, or of all when exact_key is "").
  int64_t foreign_count(const std::string& exact_key = "") const;
  struct MachineRecords {
    std::string machine;   // the fingerprint as stored (JSON)
    int64_t records = 0;   // how many records carry it
    bool this_one = false; // whether it is this machine and build
  };
  // Every fingerprint in the database, in order of first record.
  std::vector<MachineRecords> machines() const;

  // Commits one record and returns its id. Throws ts::Error for an invalid record (empty key or
  // hash, schedule that is not JSON, negative or non-finite time, unknown error kind, valid
  // record without times); nothing is stored then.
  int64_t add(const Record& r);
  // Adds the record unless has(its key, its schedule hash) already holds, atomically across
  // processes (two tunes of one database record a default once); true when added.
  bool add_if_absent(const Record& r);
  // Commits a batch in one transaction: all of it or, on any error, none of it.
  void add(const std::vector<Record>& batch);

  // The n fastest valid records of a workload by median time, one per schedule hash; with
  // threads > 0 only those measured with that many threads (or not recorded: older records).
  // Times measured in the network (kNetworkConfirmPolicy) are not among them.
  std::vector<Record> best(const std::string& exact_key, size_t n, int threads = 0) const;
  // Every record of a workload (errors included), oldest first.
  std::vector<Record> records(const std::string& exact_key) const;
  // The record of row `id`; nullopt when none has it (or it is foreign and foreign records are
  // not allowed).
  std::optional<Record> record(int64_t id) const;
  // Every record of every workload of a class, oldest first.
  std::vector<Record> records_of_class(const std::string& class_key) const;
  // Whether this schedule of this workload was measured (with or without error).
  bool has(const std::string& exact_key, const std::string& schedule_hash) const;
  // Records that `model` holds `workloads` (replacing what was recorded for it), in one
  // transaction; their class keys become the caller's (a workload first recorded by an older
  // tensorsched gets this one's). Throws Error for an empty name, key or a count below 1.
  void set_model(const std::string& model, const std::vector<ModelWorkload>& workloads);
  // The workloads of `model`, or of every model when "", by model then in the order given.
  std::vector<ModelWorkload> model_workloads(const std::string& model = "") const;
  // The workload's subgraph (workload_subgraph()), "" when none was stored (older records).
  std::string subgraph(const std::string& exact_key) const;
  // Replaces records' features (by record id) and their version, in one transaction (tensorsched
  // db featurize); empty features: none.
  void set_features(const std::vector<std::pair<int64_t, std::vector<float>>>& features, int version);
  // Number of records.
  int64_t count() const;
  // Every workload with records, in order of first record.
  std::vector<WorkloadEntry> workloads() const;

  // One JSON object per line per record (workload fields included, and in the first record of
  // each workload its subgraph, base64), oldest first; every machine's records, or this
  // machine's and build's only.
  void export_jsonl(std::ostream& out, bool this_machine_only = false) const;
  struct ImportResult {
    size_t added = 0;    // records stored
    size_t present = 0;  // records already in the database (same workload key, schedule hash, timestamp)
    std::vector<std::pair<size_t, std::string>> rejected;  // line number (from 1) and why, for each bad line
  };
  // Adds the records of an export_jsonl() stream, skipping those already present. Every line is
  // validated as add() does and more (the schedule replays and hashes to its schedule_hash, keys
  // hash to their hashes, features match their version's layout, a subgraph is the workload's,
  // JSON nests at most 64 deep); a bad line is rejected with its reason and the others import,
  // in one transaction. Throws ts::Error naming `source` only when the stream cannot be read.
  ImportResult import_jsonl(std::istream& in, const std::string& source = "<jsonl>");

 private:
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  void open_existing();
  void create_or_attach();
  void check_meta();
  int64_t insert(const Record& r);
  std::string subgraph_locked(const std::string& exact_key) const;  // subgraph(), mu_ held
  // Calls `visit` on each record matching `where` (binding `args` as ?1...), this machine's only
  // unless allow_foreign_, until it returns false. query() collects them all.
  void each(const std::string& where, std::vector<std::string> args, const std::function<bool(Record)>& visit) const;
  std::vector<Record> query(const std::string& where, std::vector<std::string> args) const;

  std::string path_;
  std::unique_ptr<sqlite3, Closer> db_;
  std::string this_machine_;      // dump(machine_fingerprint()), as add() stores it
  bool allow_foreign_ = false;    // queries see every machine's records
  mutable std::mutex mu_;
};

}  // namespace ts
