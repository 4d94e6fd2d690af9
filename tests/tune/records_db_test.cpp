// The tuning records database on real SQLite files: round trips, queries, atomic batches,
// sharing one file, export/import, and refusal (without writing) of files that are not ours.
#include "tune/records_db.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "features/features.h"
#include "graph/error.h"
#include "graph/workload.h"
#include "schedule/schedule.h"
#include "support/onnx_builder.h"
#include "support/small_workloads.h"
#include "support/throws_naming.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

Record make_record(const std::string& key, const std::string& schedule_hash, std::vector<double> times,
                   const std::string& error_kind = "") {
  Record r;
  r.workload.exact_key = key;
  r.workload.class_key = "class:" + key.substr(0, key.find('@'));
  r.workload.name = "Conv+Relu";
  r.workload.flops = 123456789;
  r.schedule_json = R"({"hash":")" + schedule_hash + R"(","stages":[{"name":"f","tile":[8,4]}]})";
  r.schedule_hash = schedule_hash;
  r.times = std::move(times);
  r.error_kind = error_kind;
  if (!error_kind.empty()) r.error_message = "it failed: " + error_kind;
  r.features_version = 3;
  r.policy = "random";
  return r;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}

// Runs one statement on the file with the plain SQLite API; returns the first column of the first row.
std::string sql(const fs::path& p, const std::string& statement) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, statement.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string out;
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW && sqlite3_column_text(s, 0)) out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  EXPECT_TRUE(rc == SQLITE_ROW || rc == SQLITE_DONE) << sqlite3_errmsg(db);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

// Opening `p` must throw an Error naming the file and `reason`, and leave its bytes unchanged.
void expect_refused(const fs::path& p, const std::string& reason) {
  std::string before = read_bytes(p);
  EXPECT_TRUE(test::throws_naming<Error>([&] { RecordsDB db(p.string()); }, {p.string(), reason}));
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_FALSE(fs::exists(p.string() + "-wal"));
}

void expect_same(const Record& a, const Record& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.workload.exact_key, b.workload.exact_key);
  EXPECT_EQ(a.workload.class_key, b.workload.class_key);
  EXPECT_EQ(a.workload.name, b.workload.name);
  EXPECT_EQ(a.workload.flops, b.workload.flops);
  EXPECT_EQ(a.workload.key_hash, b.workload.key_hash);
  EXPECT_EQ(a.workload.class_hash, b.workload.class_hash);
  EXPECT_EQ(a.schedule_json, b.schedule_json);
  EXPECT_EQ(a.schedule_hash, b.schedule_hash);
  EXPECT_EQ(a.times, b.times);
  EXPECT_EQ(a.median, b.median);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.noise, b.noise);
  EXPECT_EQ(a.error_kind, b.error_kind);
  EXPECT_EQ(a.error_message, b.error_message);
  EXPECT_EQ(a.features_version, b.features_version);
  EXPECT_EQ(a.machine, b.machine);
  EXPECT_EQ(a.tensorsched_version, b.tensorsched_version);
  EXPECT_EQ(a.policy, b.policy);
  EXPECT_EQ(a.timestamp_us, b.timestamp_us);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.threads, b.threads);
}

// A closed database with a few records, for the bad-file tests to damage copies of.
fs::path make_db(const fs::path& dir) {
  auto p = dir / "good.db";
  RecordsDB db(p.string());
  for (int i = 0; i < 40; ++i)
    db.add(make_record(fmt::format("conv@{}", i % 4), fmt::format("s{}", i), {1e-3 * (i + 1)}));
  return p;
}

TEST(RecordsDB, RoundTripsEveryField) {
  auto p = test::temp_dir() / "r.db";
  RecordsDB db(p.string());
  Record a = make_record("conv@1x8x32x32", "aaaa", {0.0012, 0.0011, 0.0013, 0.0010});
  a.features = {1.5f, -2.0f, 0.0f, 3.25e-7f};
  a.threads = 2;
  a.schedule_json = R"({ "stages": [ {"tile": [8, 4], "name": "f"} ], "hash": "aaaa" })";  // not canonical
  Record b = make_record("conv@1x8x32x32", "bbbb", {}, "compile_error");
  b.machine = R"({"cpu": "elsewhere", "cores": 64})";
  b.tensorsched_version = "9.9.9";
  b.timestamp_us = 1700000000123456;
  b.error_message = "line 1\nline 2: \"quoted\"";
  int64_t ida = db.add(a);
  int64_t idb = db.add(b);
  EXPECT_LT(ida, idb);

  db.set_allow_foreign(true);  // b was measured elsewhere
  auto got = db.records("conv@1x8x32x32");
  ASSERT_EQ(got.size(), 2u);
  Record ea = a;  // what add() computes and fills
  ea.id = ida;
  ea.workload.key_hash = fnv1a_hex(a.workload.exact_key);
  ea.workload.class_hash = fnv1a_hex(a.workload.class_key);
  ea.schedule_json = R"({"hash":"aaaa","stages":[{"name":"f","tile":[8,4]}]})";
  ea.median = (0.0011 + 0.0012) / 2;
  ea.min = 0.0010;
  double mean = (0.0012 + 0.0011 + 0.0013 + 0.0010) / 4;
  ea.noise = (0.0013 - 0.0010) / mean;
  ea.machine = machine_fingerprint().dump();
  ea.tensorsched_version = TENSORSCHED_VERSION;
  ea.timestamp_us = got[0].timestamp_us;
  EXPECT_GT(got[0].timestamp_us, 1600000000000000);
  EXPECT_NEAR(got[0].median, ea.median, 1e-15);
  EXPECT_NEAR(got[0].noise, ea.noise, 1e-12);
  ea.median = got[0].median;
  ea.noise = got[0].noise;
  expect_same(got[0], ea);
  EXPECT_TRUE(got[0].valid());

  Record eb = b;
  eb.id = idb;
  eb.workload.key_hash = ea.workload.key_hash;
  eb.workload.class_hash = ea.workload.class_hash;
  eb.machine = R"({"cores":64,"cpu":"elsewhere"})";
  expect_same(got[1], eb);
  EXPECT_FALSE(got[1].valid());

  auto w = db.workloads();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].exact_key, a.workload.exact_key);
  EXPECT_EQ(w[0].class_key, a.workload.class_key);
  EXPECT_EQ(w[0].name, "Conv+Relu");
  EXPECT_EQ(w[0].flops, 123456789);
  EXPECT_EQ(w[0].key_hash, fnv1a_hex(a.workload.exact_key));
  EXPECT_EQ(db.count(), 2);
}

TEST(RecordsDB, FeaturesNeedAVersionAndFiniteValues) {
  RecordsDB db((test::temp_dir() / "f.db").string());
  Record r = make_record("conv@1", "s1", {1.0});
  r.features = {1.0f, NAN};
  EXPECT_THROW(db.add(r), Error);
  r.features = {1.0f};
  r.features_version = 0;
  EXPECT_THROW(db.add(r), Error);
  EXPECT_EQ(db.count(), 0);
}

// A file written before the features table existed opens, gains the table and keeps its records.
TEST(RecordsDB, FileWithoutTheFeaturesTableGainsIt) {
  auto p = test::temp_dir() / "old.db";
  {
    RecordsDB db(p.string());
    db.add(make_record("conv@1", "s1", {1.0}));
  }
  sql(p, "DROP TABLE features");
  EXPECT_EQ(sql(p, "SELECT count(*) FROM sqlite_schema WHERE name = 'features'"), "0");
  RecordsDB db(p.string());
  EXPECT_EQ(sql(p, "SELECT count(*) FROM sqlite_schema WHERE name = 'features'"), "1");
  ASSERT_EQ(db.records("conv@1").size(), 1u);
  EXPECT_TRUE(db.records("conv@1")[0].features.empty());
  Record r = make_record("conv@1", "s2", {2.0});
  r.features = {4.0f, 5.0f};
  db.add(r);
  EXPECT_EQ(db.records("conv@1")[1].features, (std::vector<float>{4.0f, 5.0f}));
}

// A file written before records had a thread count opens, gains the column (its records read
// 0: not recorded) and stores the counts of new records.
TEST(RecordsDB, FileWithoutThreadCountsGainsTheColumn) {
  auto p = test::temp_dir() / "old_threads.db";
  {
    RecordsDB db(p.string());
    db.add(make_record("conv@1", "s1", {1.0}));
  }
  sql(p, "ALTER TABLE measurements DROP COLUMN threads");
  EXPECT_EQ(sql(p, "SELECT count(*) FROM pragma_table_info('measurements') WHERE name = 'threads'"), "0");
  RecordsDB db(p.string());
  EXPECT_EQ(sql(p, "SELECT count(*) FROM pragma_table_info('measurements') WHERE name = 'threads'"), "1");
  RecordsDB again(p.string());  // a second open finds it there
  ASSERT_EQ(db.records("conv@1").size(), 1u);
  EXPECT_EQ(db.records("conv@1")[0].threads, 0);
  Record r = make_record("conv@1", "s2", {2.0});
  r.threads = 4;
  db.add(r);
  EXPECT_EQ(again.records("conv@1")[1].threads, 4);
  r.threads = -1;
  EXPECT_THROW(db.add(r), Error);
}

// With a thread count, best() sees the records measured with it and those without one (older).
TEST(RecordsDB, BestCanKeepToOneThreadCount) {
  RecordsDB db((test::temp_dir() / "bt.db").string());
  auto at = [](const std::string& hash, double t, int threads) {
    Record r = make_record("k", hash, {t});
    r.threads = threads;
    return r;
  };
  db.add(at("two", 1.0, 2));
  db.add(at("one", 1.5, 1));
  db.add(at("old", 2.0, 0));
  db.add(at("two_slow", 3.0, 2));
  auto names = [&](int threads) {
    std::vector<std::string> out;
    for (const Record& r : db.best("k", 10, threads)) out.push_back(r.schedule_hash);
    return out;
  };
  EXPECT_EQ(names(0), (std::vector<std::string>{"two", "one", "old", "two_slow"}));
  EXPECT_EQ(names(2), (std::vector<std::string>{"two", "old", "two_slow"}));
  EXPECT_EQ(names(1), (std::vector<std::string>{"one", "old"}));
  EXPECT_EQ(names(8), (std::vector<std::string>{"old"}));
}

TEST(RecordsDB, BestOrdersByMedianAndSkipsErrors) {
  RecordsDB db((test::temp_dir() / "b.db").string());
  db.add(make_record("k", "slow", {3.0, 3.0, 3.0}));
  db.add(make_record("k", "fast", {1.0, 9.0, 1.0}));  // median 1 despite one outlier
  db.add(make_record("k", "broken", {0.1}, "wrong_answer"));
  db.add(make_record("k", "crashed", {}, "crash"));
  db.add(make_record("k", "mid", {2.0}));
  db.add(make_record("k", "fast", {1.5}));  // measured again: one slot, with its best time
  db.add(make_record("other", "fastest", {0.01}));
  auto best = db.best("k", 10);
  ASSERT_EQ(best.size(), 3u);
  EXPECT_EQ(best[0].schedule_hash, "fast");
  EXPECT_EQ(best[0].median, 1.0);
  EXPECT_EQ(best[1].schedule_hash, "mid");
  EXPECT_EQ(best[2].schedule_hash, "slow");
  auto top2 = db.best("k", 2);
  ASSERT_EQ(top2.size(), 2u);
  EXPECT_EQ(top2[1].schedule_hash, "mid");
  EXPECT_TRUE(db.best("nothing", 5).empty());
  EXPECT_EQ(db.records("k").size(), 6u);
}

TEST(RecordsDB, OtherMachinesRecordsAreHiddenUnlessAllowed) {
  RecordsDB db((test::temp_dir() / "m.db").string());
  db.add(make_record("k", "mine", {2.0}));
  Record foreign = make_record("k", "theirs", {1.0});
  foreign.machine = R"({"cpu":"another CPU","cores":64})";
  db.add(foreign);
  Record old_build = make_record("k", "older", {0.5});
  nlohmann::json fp = machine_fingerprint();
  fp["code_generator"] = "000000000000";  // this machine, another build's code
  old_build.machine = fp.dump();
  db.add(old_build);

  ASSERT_EQ(db.best("k", 5).size(), 1u);
  EXPECT_EQ(db.best("k", 5)[0].schedule_hash, "mine");
  EXPECT_EQ(db.records("k").size(), 1u);
  EXPECT_FALSE(db.has("k", "theirs"));
  EXPECT_EQ(db.foreign_count("k"), 2);
  EXPECT_EQ(db.foreign_count(), 2);
  EXPECT_EQ(db.count(), 3);
  auto machines = db.machines();
  ASSERT_EQ(machines.size(), 3u);
  EXPECT_TRUE(machines[0].this_one);
  EXPECT_FALSE(machines[1].this_one);
  EXPECT_EQ(machines[1].records, 1);
  EXPECT_TRUE(nlohmann::json::parse(machines[0].machine).contains("caches"));

  db.set_allow_foreign(true);
  EXPECT_EQ(db.best("k", 1)[0].schedule_hash, "older");
  EXPECT_EQ(db.records("k").size(), 3u);
  EXPECT_TRUE(db.has("k", "theirs"));
}

TEST(RecordsDB, HasFindsMeasuredSchedulesIncludingErrors) {
  RecordsDB db((test::temp_dir() / "h.db").string());
  db.add(make_record("k", "ok", {1.0}));
  db.add(make_record("k", "timed_out", {}, "timeout"));
  EXPECT_TRUE(db.has("k", "ok"));
  EXPECT_TRUE(db.has("k", "timed_out"));
  EXPECT_FALSE(db.has("k", "new"));
  EXPECT_FALSE(db.has("other", "ok"));
}

TEST(RecordsDB, RecordsOfClassSpanShapes) {
  RecordsDB db((test::temp_dir() / "c.db").string());
  db.add(make_record("conv@a", "s1", {1.0}));
  db.add(make_record("matmul@a", "s2", {1.0}));
  db.add(make_record("conv@b", "s3", {1.0}));
  auto cls = db.records_of_class("class:conv");
  ASSERT_EQ(cls.size(), 2u);
  EXPECT_EQ(cls[0].workload.exact_key, "conv@a");
  EXPECT_EQ(cls[1].workload.exact_key, "conv@b");
  EXPECT_EQ(db.workloads().size(), 3u);
}

TEST(RecordsDB, RejectsInvalidRecords) {
  RecordsDB db((test::temp_dir() / "i.db").string());
  auto bad_kind = make_record("k", "s", {1.0}, "exploded");
  auto no_times = make_record("k", "s", {});
  auto neg_time = make_record("k", "s", {-1.0});
  auto bad_json = make_record("k", "s", {1.0});
  bad_json.schedule_json = "{not json";
  auto no_key = make_record("", "s", {1.0});
  for (const auto& r : {bad_kind, no_times, neg_time, bad_json, no_key}) EXPECT_THROW(db.add(r), Error);
  EXPECT_EQ(db.count(), 0);
}

TEST(RecordsDB, BatchIsAtomic) {
  auto p = test::temp_dir() / "a.db";
  RecordsDB db(p.string());
  std::vector<Record> batch = {make_record("k", "s1", {1.0}), make_record("k", "s2", {2.0}),
                               make_record("k", "s3", {3.0})};
  batch[2].schedule_json = "{broken";
  EXPECT_THROW(db.add(batch), Error);
  EXPECT_EQ(db.count(), 0);
  EXPECT_TRUE(db.workloads().empty());
  batch[2].schedule_json = "{}";
  db.add(batch);
  EXPECT_EQ(db.count(), 3);
  RecordsDB other(p.string());  // committed: visible to another connection
  EXPECT_EQ(other.count(), 3);
}

TEST(RecordsDB, UsesWalModeAndTheApplicationId) {
  auto p = test::temp_dir() / "w.db";
  RecordsDB db(p.string());
  db.add(make_record("k", "s", {1.0}));
  EXPECT_EQ(sql(p, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(sql(p, "PRAGMA application_id"), std::to_string(RecordsDB::kApplicationId));
  EXPECT_EQ(sql(p, "SELECT value FROM meta WHERE key = 'schema_version'"), std::to_string(RecordsDB::kSchemaVersion));
}

TEST(RecordsDB, ReopenKeepsData) {
  auto p = test::temp_dir() / "re.db";
  std::vector<Record> before;
  {
    RecordsDB db(p.string());
    db.add(make_record("k", "s1", {1.0, 2.0}));
    db.add(make_record("k", "s2", {}, "invalid_schedule"));
    before = db.records("k");
  }
  RecordsDB db(p.string());
  auto after = db.records("k");
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) expect_same(after[i], before[i]);
  db.add(make_record("k", "s3", {0.5}));
  EXPECT_EQ(db.best("k", 1)[0].schedule_hash, "s3");
}

TEST(RecordsDB, EmptyFileBecomesADatabase) {
  auto p = test::temp_dir() / "empty.db";
  write_bytes(p, "");
  RecordsDB db(p.string());
  db.add(make_record("k", "s", {1.0}));
  EXPECT_EQ(db.count(), 1);
}

// A record an import accepts: a real schedule (vectorized `variant` lanes) under its own hash,
// and features of an older version (any length).
Record importable(Record r, int variant) {
  Schedule s;
  StageSchedule st;
  st.func = "f";
  st.vectorize = "x";
  st.vector_width = variant;
  s.set(st);
  r.schedule_json = s.to_json();
  r.schedule_hash = s.hash();
  r.features_version = 1;
  return r;
}

TEST(RecordsDB, ExportImportRoundTrip) {
  auto dir = test::temp_dir();
  RecordsDB a((dir / "a.db").string());
  auto with_features = importable(make_record("conv@1", "s1", {1.0, 1.1}), 4);
  with_features.features = {0.5f, 7.0f};
  with_features.threads = 3;
  a.add(with_features);
  a.add(importable(make_record("conv@1", "s2", {}, "runtime_error"), 8));
  a.add(importable(make_record("conv@2", "s1", {2.0}), 4));
  auto weird = importable(make_record("conv@2", "s9", {3.0}), 16);
  weird.machine = R"({"cpu":"other box"})";
  weird.tensorsched_version = "0.0.1";
  a.add(weird);
  std::stringstream jsonl;
  a.export_jsonl(jsonl);
  std::string text = jsonl.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  auto first = nlohmann::json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(first["workload"]["exact_key"], "conv@1");
  EXPECT_TRUE(first["schedule"].is_object());

  RecordsDB b((dir / "b.db").string());
  std::istringstream in1(text);
  auto first_import = b.import_jsonl(in1);
  EXPECT_EQ(first_import.added, 4u);
  EXPECT_TRUE(first_import.rejected.empty()) << first_import.rejected[0].second;
  std::istringstream in2(text);
  auto second = b.import_jsonl(in2);
  EXPECT_EQ(second.added, 0u);
  EXPECT_EQ(second.present, 4u);
  EXPECT_EQ(b.count(), 4);
  for (const auto& key : {"conv@1", "conv@2"}) {
    auto ra = a.records(key), rb = b.records(key);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
      rb[i].id = ra[i].id;  // ids are local to a file
      expect_same(rb[i], ra[i]);
    }
  }
  std::stringstream again;
  b.export_jsonl(again);
  EXPECT_EQ(again.str(), text);
}

// A workload's subgraph travels with its first exported record, so that the importing database
// can featurize the records again; a subgraph that is another workload's is refused.
TEST(RecordsDB, ExportCarriesEachWorkloadsSubgraphOnce) {
  auto dir = test::temp_dir();
  const Workload w = test::matmul_relu_workload();
  RecordsDB a((dir / "a.db").string());
  for (int v : {4, 8}) {
    Record r = importable(make_record("x", "x", {1.0}), v);
    r.workload = workload_entry(w);
    a.add(r);
  }
  std::stringstream jsonl;
  a.export_jsonl(jsonl);
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(jsonl, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(lines[0]["workload"].contains("subgraph"));
  EXPECT_FALSE(lines[1]["workload"].contains("subgraph"));

  RecordsDB b((dir / "b.db").string());
  std::istringstream in(lines[0].dump() + "\n" + lines[1].dump() + "\n");
  EXPECT_EQ(b.import_jsonl(in).added, 2u);
  EXPECT_EQ(b.subgraph(w.exact_key), a.subgraph(w.exact_key));

  nlohmann::json other = lines[0];
  other["workload"]["exact_key"] = "conv@1";  // the subgraph is not this workload's
  other["workload"].erase("key_hash");
  RecordsDB c((dir / "c.db").string());
  std::istringstream bad(other.dump() + "\n");
  const auto res = c.import_jsonl(bad);
  ASSERT_EQ(res.rejected.size(), 1u);
  EXPECT_NE(res.rejected[0].second.find("not the record's"), std::string::npos) << res.rejected[0].second;
  EXPECT_EQ(c.count(), 0);
}

// Each bad line is rejected with its number and reason; the good lines are stored.
TEST(RecordsDB, ImportRejectsBadLinesAndKeepsTheRest) {
  auto dir = test::temp_dir();
  RecordsDB a((dir / "a.db").string());
  a.add(importable(make_record("k", "s1", {1.0}), 4));
  std::stringstream jsonl;
  a.export_jsonl(jsonl);
  const std::string good = jsonl.str().substr(0, jsonl.str().find('\n'));
  auto line = nlohmann::json::parse(good);
  std::vector<std::string> lines = {good, R"({"workload": 3})"};
  auto altered = line;
  altered["schedule"]["stages"][0]["vectorize"]["width"] = 32;  // the hash no longer matches
  altered["timestamp_us"] = 7;
  lines.push_back(altered.dump());
  auto not_a_schedule = line;
  not_a_schedule["schedule"] = {{"stages", "x"}};
  lines.push_back(not_a_schedule.dump());
  auto wrong_length = line;
  wrong_length["features_version"] = kFeaturesVersion;
  wrong_length["features"] = {1.0, 2.0, 3.0};
  wrong_length["timestamp_us"] = 8;
  lines.push_back(wrong_length.dump());
  auto future = line;
  future["features_version"] = kFeaturesVersion + 1;
  future["timestamp_us"] = 9;
  lines.push_back(future.dump());
  auto deep = line;
  deep["timestamp_us"] = 10;
  std::string deep_text = deep.dump();
  const std::string nest = std::string(100000, '[') + std::string(100000, ']');
  deep_text.replace(deep_text.find("\"schedule\":") + 11, 0, nest + ",");
  lines.push_back(deep_text);
  auto forged_key = line;
  forged_key["workload"]["exact_key"] = "other";
  lines.push_back(forged_key.dump());

  std::string text;
  for (const auto& l : lines) text += l + "\n";
  RecordsDB b((dir / "b.db").string());
  std::istringstream in(text);
  auto r = b.import_jsonl(in, "dump.jsonl");
  EXPECT_EQ(r.added, 1u);
  EXPECT_EQ(b.count(), 1);
  ASSERT_EQ(r.rejected.size(), 7u);
  const std::vector<std::pair<size_t, std::string>> expected = {
      {2, "not a tensorsched record"},          {3, "is not the schedule's hash"}, {4, "not a tensorsched schedule"},
      {5, "features; version"}, {6, "newer than this build's"},     {7, "nested more than 64"},
      {8, "key_hash"}};
  for (size_t k = 0; k < expected.size(); k++) {
    EXPECT_EQ(r.rejected[k].first, expected[k].first);
    EXPECT_NE(r.rejected[k].second.find(expected[k].second), std::string::npos)
        << "line " << r.rejected[k].first << ": " << r.rejected[k].second;
  }
}

// Commands that only read records (export, costmodel eval, report, run --db) never create a file.
TEST(RecordsDB, MustExistRefusesAMissingFileWithoutCreatingIt) {
  auto p = test::temp_dir() / "typo.db";
  EXPECT_TRUE(test::throws_naming<Error>([&] { RecordsDB db(p.string(), RecordsDB::Open::MustExist); }, {"no such records database"}));
  EXPECT_FALSE(fs::exists(p));
}

// A damaged features blob reads as no features: it exports as [] and imports again.
TEST(RecordsDB, DamagedFeaturesBlobReadsAsNone) {
  auto dir = test::temp_dir();
  const std::string path = (dir / "a.db").string();
  {
    RecordsDB a(path);
    auto r = importable(make_record("k", "s1", {1.0}), 4);
    r.features = {1.0f, 2.0f};
    a.add(r);
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "UPDATE features SET data = x'0000c07f01'", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  RecordsDB a(path);
  EXPECT_TRUE(a.records("k").at(0).features.empty());
  std::stringstream jsonl;
  a.export_jsonl(jsonl);
  EXPECT_NE(jsonl.str().find("\"features\":[]"), std::string::npos) << jsonl.str();
  RecordsDB b((dir / "b.db").string());
  auto r = b.import_jsonl(jsonl, "dump.jsonl");
  EXPECT_EQ(r.added, 1u);
  EXPECT_TRUE(r.rejected.empty());
}

// Two tunes of one database record a workload's default once: check and insert are one transaction.
TEST(RecordsDB, AddIfAbsentAddsOnceAcrossConnections) {
  auto p = test::temp_dir() / "shared.db";
  RecordsDB a(p.string());
  RecordsDB b(p.string());
  EXPECT_TRUE(a.add_if_absent(make_record("k", "default", {1.0})));
  EXPECT_FALSE(b.add_if_absent(make_record("k", "default", {1.1})));
  EXPECT_TRUE(b.add_if_absent(make_record("k", "other", {1.1})));
  EXPECT_EQ(a.count(), 2);
}

TEST(RecordsDB, TwoObjectsOnOneFileSeeEachOthersCommits) {
  auto p = test::temp_dir() / "shared.db";
  RecordsDB a(p.string());
  RecordsDB b(p.string());
  a.add(make_record("k", "from_a", {1.0}));
  EXPECT_TRUE(b.has("k", "from_a"));
  b.add(std::vector<Record>{make_record("k", "from_b1", {0.5}), make_record("k", "from_b2", {2.0})});
  EXPECT_EQ(a.count(), 3);
  EXPECT_EQ(a.best("k", 1)[0].schedule_hash, "from_b1");
}

TEST(RecordsDB, RefusesATextFile) {
  auto p = test::temp_dir() / "notes.db";
  write_bytes(p, "these are my notes, not a database\n");
  expect_refused(p, "not a tensorsched records database (not a SQLite file)");
}

TEST(RecordsDB, RefusesRandomBytes) {
  auto p = test::temp_dir() / "random.db";
  std::mt19937 rng(42);
  std::string bytes(65536, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  write_bytes(p, bytes);
  expect_refused(p, "not a SQLite file");
}

TEST(RecordsDB, RefusesATruncatedCopy) {
  auto dir = test::temp_dir();
  auto good = make_db(dir);
  auto cut = dir / "cut.db";
  fs::copy_file(good, cut);
  fs::resize_file(cut, fs::file_size(good) / 2);
  expect_refused(cut, "truncated");
  auto tiny = dir / "tiny.db";  // the header itself cut short
  write_bytes(tiny, read_bytes(good).substr(0, 50));
  expect_refused(tiny, "truncated");
}

TEST(RecordsDB, RefusesACorruptPage) {
  auto dir = test::temp_dir();
  auto good = make_db(dir);
  std::string bytes = read_bytes(good);
  ASSERT_GT(bytes.size(), 3 * 4096u);
  for (size_t i = 2 * 4096; i < 3 * 4096; ++i) bytes[i] = static_cast<char>(0xA5);  // a whole b-tree page
  auto bad = dir / "bad.db";
  write_bytes(bad, bytes);
  expect_refused(bad, "corrupt");
}

TEST(RecordsDB, RefusesAnotherApplicationsSqliteFile) {
  auto p = test::temp_dir() / "foreign.db";
  sql(p, "CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)");
  sql(p, "INSERT INTO photos (path) VALUES ('/tmp/cat.jpg')");
  expect_refused(p, "another application");
  auto q = test::temp_dir() / "foreign_id.db";
  sql(q, "PRAGMA application_id = 1234");
  sql(q, "CREATE TABLE meta (key TEXT, value TEXT)");
  expect_refused(q, "application_id 0x000004d2");
  EXPECT_EQ(sql(p, "SELECT path FROM photos"), "/tmp/cat.jpg");
}

TEST(RecordsDB, RefusesANewerSchemaVersion) {
  auto dir = test::temp_dir();
  auto p = make_db(dir);
  sql(p, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  expect_refused(p, "schema version 99 is newer");
}

TEST(RecordsDB, KnowsWhichWorkloadsEachModelHolds) {
  const fs::path p = test::temp_dir() / "models.db";
  {
    RecordsDB db(p.string());
    db.add(make_record("conv@1", "h1", {1e-3}));
    WorkloadEntry conv{"conv@1", "new-class:conv", "Conv+Relu", 10, "", ""};
    WorkloadEntry pool{"pool@1", "class:pool", "GlobalAveragePool", 5, "", ""};
    db.set_model("resnet", {{"", conv, 16}, {"", pool, 1}});
    db.set_model("vgg", {{"", conv, 2}});
    db.set_model("resnet", {{"", conv, 8}, {"", pool, 1}});  // replaces resnet's rows
    EXPECT_THROW(db.set_model("", {{"", conv, 1}}), Error);
    EXPECT_THROW(db.set_model("bad", {{"", conv, 0}}), Error);
  }
  RecordsDB db(p.string(), RecordsDB::Open::MustExist);  // as a later process sees it
  auto resnet = db.model_workloads("resnet");
  ASSERT_EQ(resnet.size(), 2u);
  EXPECT_EQ(resnet[0].workload.exact_key, "conv@1");
  EXPECT_EQ(resnet[0].count, 8);
  EXPECT_EQ(resnet[1].workload.name, "GlobalAveragePool");
  // The class key is the latest writer's (a workload first recorded by an older version).
  EXPECT_EQ(resnet[0].workload.class_key, "new-class:conv");
  EXPECT_EQ(db.records("conv@1").at(0).workload.class_key, "new-class:conv");
  EXPECT_EQ(db.model_workloads().size(), 3u);
  EXPECT_TRUE(db.model_workloads("alexnet").empty());
}

TEST(RecordsDB, MachineFingerprintDescribesThisMachine) {
  const auto& fp = machine_fingerprint();
  ASSERT_TRUE(fp.is_object());
  EXPECT_FALSE(fp["cpu"].get<std::string>().empty());
  EXPECT_GE(fp["cores"].get<int>(), 1);
  EXPECT_TRUE(fp["isa"].is_array());
  EXPECT_EQ(fp["tensorsched_version"], TENSORSCHED_VERSION);
}

}  // namespace
}  // namespace ts
