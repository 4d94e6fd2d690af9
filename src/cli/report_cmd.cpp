// `tensorsched report --db FILE [--model M] -o DIR`: the tuning report as DIR/index.html
// (tune/report.h).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "graph/error.h"
#include "tune/report.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

struct ReportArgs {
  std::string db;
  ModelArgs model;
  std::string out_dir;
  bool allow_foreign = false;
};

int report_command(const ReportArgs& a) {
  if (!fs::exists(a.db)) throw Error(fmt::format("{}: no such records database", a.db));
  RecordsDB db(a.db, RecordsDB::Open::MustExist);
  db.set_allow_foreign(a.allow_foreign);
  ReportOptions o;
  Partition part;
  if (!a.model.path.empty()) {
    part = partition_graph(load_model(a.model));
    o.model = &part;
    o.model_name = fs::path(a.model.path).filename().string();
  }
  fs::create_directories(a.out_dir);
  const fs::path page = fs::path(a.out_dir) / "index.html";
  std::ofstream f(page);
  f << tuning_report_html(db, o);
  if (!f) throw Error(fmt::format("{}: cannot write", page.string()));
  std::cout << fmt::format("wrote {}\n", page.string());
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  auto* sub = app.add_subcommand("report", "An HTML page about a records database: default vs chosen, tuning curves, "
                                           "noise, errors, model latency over tuning time");
  sub->add_option("--db", a->db, "Records database (SQLite)")->required();
  sub->add_option("--model", a->model.path, "Only this model's workloads, weighted by their counts");
  sub->add_option("--shape", a->model.shapes, "With --model: NAME=D0,D1,... or DIM=N");
  sub->add_option("--layout", a->model.layout, "With --model: blocked or plain (as it was tuned)")->capture_default_str();
  sub->add_option("-o,--out", a->out_dir, "Output directory (index.html)")->required();
  sub->add_flag("--allow-foreign-records", a->allow_foreign, "Include records of other machines and builds");
  on_command(sub, [a] { return report_command(*a); });
}

}  // namespace ts
