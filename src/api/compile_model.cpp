#include "api/compile_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <regex>

#include "graph/file_io.h"
#include "graph/flatten_pointwise.h"
#include "graph/layout_plan.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "graph/winograd.h"
#include "graph/workload.h"
#include "lower/lower.h"
#include "measure/measurer.h"
#include "measure/workload_compiler.h"
#include "runtime/compiled_model.h"
#include "schedule/default_schedule.h"
#include "tune/records_db.h"
#include "tune/tuner.h"

namespace fs = std::filesystem;

namespace ts {

Graph load_model(const std::string& path, const LoadOptions& o) {
  if (o.layout != "blocked" && o.layout != "plain")
    throw Error(fmt::format("{}: layout '{}' is neither 'blocked' nor 'plain'", path, o.layout));
  ImportOptions opts;
  opts.op_supported = op_supported;
  for (const auto& s : o.shapes) opts.shape_overrides.insert(parse_shape_override(s));
  opts.max_memory_bytes = o.max_memory_bytes;
  Graph g = import_onnx(path, opts);
  run_default_passes(g);
  if (o.layout == "blocked") {
    plan_layouts(g, Halide::get_host_target().natural_vector_size(Halide::Float(32)));
    if (o.winograd) plan_winograd(g, effective_threads(o.threads));
  }
  flatten_plain_convs(g);  // the convs the layout plan left plain
  return g;
}

std::map<std::string, Schedule> best_schedules_of(const Graph& g, const std::string& db_path,
                                                  std::vector<std::string>& warnings, bool allow_foreign, int threads) {
  // RecordsDB creates a missing file; reading records must not.
  if (!fs::exists(db_path)) throw Error(fmt::format("{}: no such records database", db_path));
  RecordsDB db(db_path, RecordsDB::Open::MustExist);
  db.set_allow_foreign(allow_foreign);
  return best_schedules(partition_graph(g), db, warnings, effective_threads(threads));
}

std::map<std::string, Schedule> knob_schedules_of(const Graph& g, const std::vector<std::string>& specs) {
  std::map<std::string, Schedule> schedules;
  if (specs.empty()) return schedules;
  const Partition part = partition_graph(g);
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("--knobs '{}': expected KEY=KNOBS_JSON", spec));
    const std::string key = spec.substr(0, eq);
    const Workload* w = find_workload(part, key);
    if (!w)
      throw Error(fmt::format("--knobs '{}': {} has no workload {} (`tensorsched workloads` lists them)", spec, g.path, key));
    try {
      schedules[w->exact_key] =
          default_schedule(lower_workload(*w).outputs, host_code_target(), DefaultKnobs::from_json(spec.substr(eq + 1)));
    } catch (const Error& e) {
      throw Error(fmt::format("--knobs '{}': {}", spec, e.what()));
    }
  }
  return schedules;
}

CompileResult compile_model(const CompileRequest& req) {
  if (!std::regex_match(req.name, std::regex("[A-Za-z0-9_-]+")))
    throw Error(fmt::format("compile: library name '{}' must be letters, digits, '_' or '-'", req.name));
  if (req.out_dir.empty()) throw Error("compile: no output directory");
  Graph g = load_model(req.model, req.load);
  CompileOptions copts;
  copts.cache_root = req.cache_dir;
  CompileResult r;
  if (!req.db_path.empty())
    copts.schedules = best_schedules_of(g, req.db_path, r.warnings, req.allow_foreign_records, req.load.threads);
  CompiledModel model(std::move(g), copts);
  const CompileStats& st = model.stats();
  r.warnings.insert(r.warnings.end(), st.warnings.begin(), st.warnings.end());
  r.workloads = st.workloads;
  r.tuned = st.tuned;
  r.steps = st.steps;

  ArtifactOptions ao;
  ao.out_dir = req.out_dir;
  ao.name = req.name;
  ao.static_library = req.static_library;
  ao.constants_file = req.constants_file;
  ao.manifest = {{"model", req.model},
                 {"model_fnv1a", fnv1a_hex(read_regular_file(req.model, "an ONNX file"))},
                 {"layout", req.load.layout},
                 {"winograd", req.load.winograd},
                 {"threads", effective_threads(req.load.threads)},
                 {"shapes", req.load.shapes},
                 {"records_db", req.db_path},
                 {"target", host_code_target().to_string()},
                 {"tuned_workloads", st.tuned}};
  nlohmann::json workloads = nlohmann::json::array();
  const Partition& p = model.partition();
  std::unique_ptr<RecordsDB> db;
  if (!req.db_path.empty()) {
    db = std::make_unique<RecordsDB>(req.db_path);
    db->set_allow_foreign(req.allow_foreign_records);
  }
  for (size_t i = 0; i < p.workloads.size(); i++) {
    const Workload& w = p.workloads[i];
    const std::string& schedule = model.schedule_hashes()[i];
    nlohmann::json entry = {{"key", w.key_hash()}, {"name", w.name}, {"count", w.count}, {"schedule", schedule},
                            {"function", model.plan().functions[i]}};
    // The measurement that chose a tuned schedule: its re-measurement against the default.
    if (db && schedule != model.default_schedule_hashes()[i])
      if (auto c = latest_confirmation(*db, w.exact_key, effective_threads(0)); c && c->candidate.schedule_hash == schedule)
        entry["record"] = {{"id", c->candidate.id},
                           {"median_ms", c->candidate.median * 1e3},
                           {"default_median_ms", c->default_record.median * 1e3},
                           {"policy", c->candidate.policy},
                           {"timestamp_us", c->candidate.timestamp_us}};
    workloads.push_back(entry);
  }
  ao.manifest["workloads"] = workloads;
  if (!r.warnings.empty()) ao.manifest["warnings"] = r.warnings;
  r.artifact = write_artifact(model, ao);
  return r;
}

}  // namespace ts
