// `tensorsched db export|import --db FILE --jsonl FILE`: move tuning records between databases
// (and machines) as one JSON object per line. `db machines` lists who measured them, `db
// featurize` recomputes their features from the workloads' subgraphs the database keeps, `db
// measure` measures records' schedules again on this machine.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "graph/error.h"
#include "features/features.h"
#include "graph/workload_onnx.h"
#include "measure/measurer.h"
#include "schedule/schedule.h"
#include "tune/featurize.h"
#include "tune/records_db.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

struct DbArgs {
  std::string db;            // the records database (SQLite)
  std::string jsonl;         // the JSONL file ("-" = stdout/stdin)
  bool this_machine = false; // export: only this machine's and build's records
};

// A command reading `db` must not create it, nor write over it.
void check_paths(const DbArgs& a, bool must_exist) {
  std::error_code ec;
  if (must_exist && !fs::is_regular_file(a.db, ec)) throw Error(fmt::format("{}: no such records database", a.db));
  if (a.jsonl != "-" && fs::exists(a.jsonl, ec) && fs::equivalent(a.db, a.jsonl, ec))
    throw Error(fmt::format("{}: the JSONL file is the database itself", a.jsonl));
}

int export_command(const DbArgs& a) {
  check_paths(a, true);
  RecordsDB db(a.db, RecordsDB::Open::MustExist);
  if (a.jsonl == "-") {
    db.export_jsonl(std::cout, a.this_machine);
  } else {
    std::ofstream out(a.jsonl);
    if (!out) throw Error(fmt::format("{}: cannot write", a.jsonl));
    db.export_jsonl(out, a.this_machine);
    std::cerr << fmt::format("{}: exported {} records to {}\n", a.db, db.count(), a.jsonl);
  }
  return 0;
}

// Imports what is valid; each rejected line is reported with its number and reason, and makes
// the exit status 1 (the valid lines are stored all the same).
int import_command(const DbArgs& a) {
  check_paths(a, false);
  RecordsDB db(a.db);
  RecordsDB::ImportResult r;
  if (a.jsonl == "-") {
    r = db.import_jsonl(std::cin, "<stdin>");
  } else {
    std::ifstream in(a.jsonl);
    if (!in) throw Error(fmt::format("{}: cannot open", a.jsonl));
    r = db.import_jsonl(in, a.jsonl);
  }
  const std::string source = a.jsonl == "-" ? "<stdin>" : a.jsonl;
  constexpr size_t kShown = 20;
  for (size_t k = 0; k < r.rejected.size() && k < kShown; k++)
    spdlog::warn("{}: line {}: rejected: {}", source, r.rejected[k].first, r.rejected[k].second);
  if (r.rejected.size() > kShown) spdlog::warn("{}: {} more lines rejected", source, r.rejected.size() - kShown);
  std::cout << fmt::format("{}: imported {} new records ({} already present, {} lines rejected; {} in total)\n", a.db,
                           r.added, r.present, r.rejected.size(), db.count());
  return r.rejected.empty() ? 0 : 1;
}

// One line per machine fingerprint: which CPU, cores, build, and how many records.
int machines_command(const std::string& path, bool json_out) {
  RecordsDB db(path, RecordsDB::Open::MustExist);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& m : db.machines()) {
    nlohmann::json fp = nlohmann::json::parse(m.machine, nullptr, false);
    if (fp.is_discarded() || !fp.is_object()) fp = nlohmann::json::object();
    all.push_back({{"machine", fp}, {"records", m.records}, {"this_machine", m.this_one}});
    if (!json_out)
      std::cout << fmt::format("{:>7} records  {}{}, {} cores, tensorsched {}, code generator {}\n", m.records,
                               m.this_one ? "[this machine] " : "", fp.value("cpu", "?"), fp.value("cores", 0),
                               fp.value("tensorsched_version", "?"), fp.value("code_generator", "(none recorded)"));
  }
  if (json_out) std::cout << all.dump() << "\n";
  return 0;
}

// Exit status 1 when a workload's subgraph could not be read or lowered.
int featurize_command(const std::string& path, bool force) {
  RecordsDB db(path, RecordsDB::Open::MustExist);
  const FeaturizeSummary s = featurize_records(db, force, [](const std::string& line) { spdlog::info("featurize: {}", line); });
  for (const auto& e : s.errors) spdlog::error("{}: {}", path, e);
  std::cout << fmt::format(
      "{}: features version {}: {} records featurized, {} already current, {} without features (autoscheduler "
      "recipes, schedules the features refuse); {} workloads, {} without a stored subgraph (skipped), {} failed\n",
      path, kFeaturesVersion, s.featurized, s.current, s.without_features, s.workloads, s.without_subgraph,
      s.failed_workloads);
  return s.failed_workloads > 0 ? 1 : 0;
}

struct MeasureRecordsArgs {
  std::string db;            // the records database (SQLite)
  std::vector<int64_t> ids;  // records to measure again
  int repeats = 10;          // timed runs each
  int threads = 0;           // Halide threads; 0: each record's own
  bool json = false;
};

// Each record's schedule measured again on this machine, on its workload's stored subgraph, with
// the output checked against the default schedule's: what a data set or a tuning record says
// against what this build and host give now (a time, or the error kind it shows or lost).
int measure_records_command(const MeasureRecordsArgs& a) {
  RecordsDB db(a.db, RecordsDB::Open::MustExist);
  db.set_allow_foreign(true);  // other machines' and builds' records are what it is for
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (int64_t id : a.ids) {
    const std::optional<Record> r = db.record(id);
    if (!r) throw Error(fmt::format("{}: no record {}", a.db, id));
    const std::string where = fmt::format("{}: record {}", a.db, id);
    const std::string sub = db.subgraph(r->workload.exact_key);
    if (sub.empty()) throw Error(fmt::format("{}: its workload's subgraph is not stored", where));
    const Workload w = workload_from_subgraph(sub, where);
    if (r->schedule_json.empty()) throw Error(fmt::format("{}: holds no schedule", where));
    const Schedule s = Schedule::from_json(r->schedule_json);
    MeasureOptions o;
    o.repeats = a.repeats;
    o.threads = a.threads > 0 ? a.threads : r->threads;
    Measurer m(w, o);
    const MeasureResult ref = m.reference();
    const MeasureResult now = m.measure_batch({s}).at(0);
    const std::string was = r->valid() ? fmt::format("{:.4f} ms", r->median * 1e3) : r->error_kind;
    const std::string is = now.valid() ? fmt::format("{:.4f} ms", now.median * 1e3) : now.error_kind;
    nlohmann::ordered_json j = {{"id", id},
                                {"workload", w.key_hash()},
                                {"name", w.name},
                                {"policy", r->policy},
                                {"threads", now.threads},
                                {"recorded", {{"median", r->median}, {"error_kind", r->error_kind}}},
                                {"now", {{"median", now.median}, {"min", now.min}, {"noise", now.noise},
                                         {"error_kind", now.error_kind}, {"error_message", now.error_message}}},
                                {"default_median", ref.median}};
    all.push_back(j);
    if (a.json) continue;
    std::cout << fmt::format("record {}: workload {} ({}), {}, {} threads: recorded {}, now {}{}; the default now {:.4f} ms\n", id,
                             w.key_hash(), w.name, r->policy, now.threads, was, is,
                             r->valid() && now.valid() ? fmt::format(" ({:.2f}x the recorded)", now.median / r->median) : "",
                             ref.median * 1e3);
    if (!now.valid()) std::cout << "  " << now.error_message << "\n";
  }
  if (a.json) std::cout << all.dump(2) << "\n";
  return 0;
}

}  // namespace

void add_db_commands(CLI::App& app) {
  auto* db = app.add_subcommand("db", "Tuning records database: export, import, machines, featurize, measure");
  db->require_subcommand(1);
  auto ex = std::make_shared<DbArgs>(), im = std::make_shared<DbArgs>();
  auto* e = db->add_subcommand("export", "Write every record as one JSON object per line");
  e->add_option("--db", ex->db, "Records database (SQLite)")->required();
  e->add_option("--jsonl", ex->jsonl, "Output file, - for stdout")->default_val("-");
  e->add_flag("--this-machine", ex->this_machine, "Only records of this machine and build (see `db machines`)");
  on_command(e, [ex] { return export_command(*ex); });
  auto* i = db->add_subcommand("import", "Add the records of a JSONL export that are not already present");
  i->add_option("--db", im->db, "Records database (SQLite), created if absent")->required();
  i->add_option("--jsonl", im->jsonl, "Input file, - for stdin")->required();
  on_command(i, [im] { return import_command(*im); });
  auto mdb = std::make_shared<std::string>();
  auto mjson = std::make_shared<bool>(false);
  auto* m = db->add_subcommand("machines", "The machines and builds the records were measured on, with counts");
  m->add_option("--db", *mdb, "Records database (SQLite)")->required()->check(CLI::ExistingFile);
  m->add_flag("--json", *mjson, "One JSON array");
  on_command(m, [mdb, mjson] { return machines_command(*mdb, *mjson); });
  auto fdb = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  auto* f = db->add_subcommand("featurize", "Recompute the features of records of an older features version, from "
                                            "the workload subgraphs the database keeps (no model file needed)");
  f->add_option("--db", *fdb, "Records database (SQLite)")->required();
  f->add_flag("--force", *force, "Recompute every record's features, current ones too");
  on_command(f, [fdb, force] { return featurize_command(*fdb, *force); });
  auto ma = std::make_shared<MeasureRecordsArgs>();
  auto* me = db->add_subcommand("measure", "Measure records' schedules again on this machine (on their workloads' stored "
                                           "subgraphs, output checked against the default's) and compare with what they recorded");
  me->add_option("--db", ma->db, "Records database (SQLite)")->required();
  me->add_option("--record", ma->ids, "Record ids (row ids of the database's measurements table)")->required()->delimiter(',');
  me->add_option("--repeats", ma->repeats, "Timed runs of each")->check(CLI::PositiveNumber);
  me->add_option("--threads", ma->threads, "Halide threads (default: each record's own)")->check(CLI::NonNegativeNumber);
  me->add_flag("--json", ma->json, "One JSON array");
  on_command(me, [ma] { return measure_records_command(*ma); });
}

}  // namespace ts
