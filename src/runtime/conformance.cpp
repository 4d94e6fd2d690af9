#include "runtime/conformance.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <cstring>

#include <Halide.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "lower/lower.h"
#include "runtime/compiled_model.h"
#include "runtime/graph_runner.h"
#include "measure/worker_pool.h"

namespace fs = std::filesystem;

namespace ts {

namespace {

constexpr size_t kMaxNodesForOnePipeline = 16;

// Ops whose reference outputs need a looser bound than rtol 1e-3 / atol 1e-4, and why.
const std::map<std::string, std::pair<double, double>> kLooseTolerance = {
    // None yet: every op passes with the default bounds.
};

onnx::ModelProto parse_model(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream f(path, std::ios::binary);
  if (!f || !m.ParseFromIstream(&f)) throw Error(fmt::format("{}: not an ONNX model", path));
  return m;
}

// Runtime inputs (graph inputs that are not initializers), in order.
std::vector<std::string> runtime_inputs(const onnx::ModelProto& m) {
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> r;
  for (const auto& v : m.graph().input())
    if (!inits.count(v.name())) r.push_back(v.name());
  return r;
}

// tensorsched compiles for fixed shapes, so inputs that decide shapes or indices (Reshape's
// shape, Slice's starts, Resize's scales, Gather's indices, ...) are bound to the case's values
// as constants, as a model with such initializers would have them.
bool is_shape_slot(const std::string& op, int slot) {
  static const std::set<std::string> slot1 = {"Reshape", "Expand", "Tile", "Upsample", "Split", "Squeeze",
                                              "Unsqueeze", "Gather", "ReduceMean", "ReduceSum", "ReduceMax",
                                              "ReduceMin", "ReduceProd", "ReduceL2", "ReduceL1",
                                              "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"};
  if (op == "ConstantOfShape" || op == "Range") return true;
  if (op == "CumSum") return slot == 1;  // the axis
  if (op == "TopK") return slot == 1;    // K
  if (op == "Slice" || op == "Pad" || op == "Resize") return slot >= 1;
  return slot == 1 && slot1.count(op);
}

std::set<std::string> shape_inputs(const onnx::ModelProto& m) {
  std::set<std::string> r;
  for (const auto& n : m.graph().node())
    for (int i = 0; i < n.input_size(); i++)
      if (is_shape_slot(n.op_type(), i)) r.insert(n.input(i));
  return r;
}

std::vector<std::string> model_ops(const onnx::ModelProto& m) {
  std::set<std::string> s;
  for (const auto& n : m.graph().node()) s.insert(n.op_type());
  return {s.begin(), s.end()};
}

}  // namespace

std::vector<std::string> test_data_files(const std::string& set, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> files;
  for (const auto& e : fs::directory_iterator(set)) {
    std::string f = e.path().filename().string();
    if (f.rfind(prefix, 0) == 0 && f.size() > prefix.size() + 3 && f.substr(f.size() - 3) == ".pb")
      files.emplace_back(std::stoi(f.substr(prefix.size())), e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> r;
  for (auto& [i, p] : files) r.push_back(p);
  return r;
}

std::vector<std::string> test_data_sets(const std::string& dir) {
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: not a directory of ONNX test data", dir));
  std::vector<std::string> r;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) r.push_back(e.path().string());
  std::sort(r.begin(), r.end());
  if (r.empty()) throw Error(fmt::format("{}: no test_data_set_* folder", dir));
  return r;
}

std::vector<std::string> default_conformance_dirs() {
  std::vector<std::string> r;
  for (const char* s : {"node", "pytorch-converted", "pytorch-operator", "simple"})
    r.push_back((fs::path(TENSORSCHED_TESTDATA_DIR) / s).string());
  return r;
}

std::vector<ConformanceCase> discover_cases(const std::vector<std::string>& dirs) {
  std::vector<ConformanceCase> r;
  for (const auto& d : dirs) {
    fs::path dir(d);
    if (!fs::is_directory(dir)) throw Error(fmt::format("{}: not a directory of ONNX test cases", d));
    if (fs::exists(dir / "model.onnx")) {
      r.push_back({dir.parent_path().filename().string() + "/" + dir.filename().string(), dir.string()});
      continue;
    }
    std::vector<fs::path> sub;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) sub.push_back(e.path());
    std::sort(sub.begin(), sub.end());
    for (const auto& s : sub) r.push_back({dir.filename().string() + "/" + s.filename().string(), s.string()});
  }
  return r;
}

std::pair<double, double> conformance_tolerance(const std::vector<std::string>& ops) {
  double rtol = 1e-3, atol = 1e-4;
  for (const auto& op : ops)
    if (auto it = kLooseTolerance.find(op); it != kLooseTolerance.end()) {
      rtol = std::max(rtol, it->second.first);
      atol = std::max(atol, it->second.second);
    }
  return {rtol, atol};
}

ConformanceResult run_case_inprocess(const ConformanceCase& c) {
  ConformanceResult r;
  r.name = c.name;
  auto t0 = std::chrono::steady_clock::now();
  try {
    const std::string model_path = (fs::path(c.dir) / "model.onnx").string();
    onnx::ModelProto m = parse_model(model_path);
    r.ops = model_ops(m);
    auto names = runtime_inputs(m);
    auto shape_slots = shape_inputs(m);
    auto [rtol, atol] = conformance_tolerance(r.ops);
    ImportOptions check_opts;
    check_opts.op_supported = op_supported;
    check_model_supported(model_path, check_opts);  // before reading inputs: they may be sequences
    for (const auto& set : test_data_sets(c.dir)) {
      auto in_files = test_data_files(set, "input_");
      auto out_files = test_data_files(set, "output_");
      if (in_files.size() > names.size())
        throw Error(fmt::format("{}: {} input files for {} model inputs", set, in_files.size(), names.size()));
      ImportOptions opts;
      opts.op_supported = op_supported;
      opts.quiet = true;
      opts.generate_weights = false;  // the case provides every input
      std::map<std::string, Tensor> inputs;
      for (size_t i = 0; i < in_files.size(); i++) {
        Tensor t = read_tensor_pb(in_files[i]);
        if (shape_slots.count(names[i])) opts.constant_inputs[names[i]] = t;
        else {
          opts.shape_overrides[names[i]] = t.shape;  // data shapes fix symbolic dims
          inputs[names[i]] = t;
        }
      }
      Graph g = import_onnx(model_path, opts);
      run_default_passes(g);
      // Small cases compile as one JIT pipeline; whole networks (held-out models) go through
      // CompiledModel, which compiles each workload on its own, in parallel and cached.
      std::vector<Tensor> outs = g.nodes.size() <= kMaxNodesForOnePipeline
                                     ? GraphRunner(g).run(inputs)
                                     : CompiledModel(g).run(inputs);
      if (outs.size() != out_files.size())
        throw Error(fmt::format("model has {} outputs, test data {}", outs.size(), out_files.size()));
      for (size_t k = 0; k < outs.size(); k++) {
        Tensor want = read_tensor_pb(out_files[k]);
        if (want.dtype != outs[k].dtype) {
          r.status = "fail";
          r.reason = fmt::format("output {}: dtype {} != expected {}", k, dtype_name(outs[k].dtype), dtype_name(want.dtype));
          break;
        }
        auto cmp = compare_tensors(outs[k], want, rtol, atol);
        r.max_abs_error = std::max(r.max_abs_error, cmp.max_abs_error);
        r.max_rel_error = std::max(r.max_rel_error, cmp.max_rel_error);
        if (!cmp.ok && r.status.empty()) {
          r.status = "fail";
          r.reason = fmt::format("{} output {}: {}", fs::path(set).filename().string(), k, cmp.message);
        }
      }
      if (!r.status.empty()) break;
    }
    if (r.status.empty()) r.status = "pass";
  } catch (const Unsupported& e) {
    r.status = "unsupported";
    r.reason = e.what();
  } catch (const Halide::Error& e) {
    r.status = "error";
    r.reason = std::string("Halide: ") + e.what();
  } catch (const std::exception& e) {
    r.status = "error";
    r.reason = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // One line: Halide messages span several.
  std::replace(r.reason.begin(), r.reason.end(), '\n', ' ');
  return r;
}

std::string result_to_json(const ConformanceResult& r) {
  nlohmann::json j = {{"case", r.name}, {"status", r.status}, {"ops", r.ops}, {"seconds", r.seconds}};
  if (r.status == "pass" || r.status == "fail") {
    j["max_abs_error"] = r.max_abs_error;
    j["max_rel_error"] = r.max_rel_error;
  }
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<ConformanceResult> result_from_json(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.contains("status")) return std::nullopt;
  ConformanceResult r;
  r.name = j.value("case", "");
  r.status = j.value("status", "");
  r.ops = j.value("ops", std::vector<std::string>{});
  r.seconds = j.value("seconds", 0.0);
  r.max_abs_error = j.value("max_abs_error", 0.0);
  r.max_rel_error = j.value("max_rel_error", 0.0);
  r.reason = j.value("reason", "");
  return r;
}

std::vector<ConformanceResult> run_conformance(const std::vector<ConformanceCase>& cases,
                                               const ConformanceOptions& opts,
                                               const std::function<void(const ConformanceResult&)>& on_result) {
  std::vector<ConformanceResult> results;
  WorkerPoolOptions pool;
  pool.jobs = std::max(1, opts.jobs);
  pool.timeout_s = opts.timeout_s;
  auto run_one = [&](size_t i, int fd) { return write_all(fd, result_to_json(run_case_inprocess(cases[i])) + "\n") ? 0 : 1; };
  auto finish = [&](size_t i, const WorkerResult& w) {
    std::optional<ConformanceResult> r;
    if (!w.timed_out) r = result_from_json(w.message);
    if (!r) {
      // The worker died before reporting: the case is an error, named by its ops when the model parses.
      r = ConformanceResult{};
      r->name = cases[i].name;
      r->status = "error";
      r->seconds = w.seconds;
      if (w.timed_out) r->reason = fmt::format("timed out after {:.0f} s", opts.timeout_s);
      else if (w.signal) r->reason = fmt::format("worker crashed ({})", strsignal(w.signal));
      else r->reason = fmt::format("worker exited with status {} and no result", w.exit_code);
      try {
        r->ops = model_ops(parse_model((fs::path(cases[i].dir) / "model.onnx").string()));
      } catch (const std::exception&) {
      }
    }
    if (on_result) on_result(*r);
    results.push_back(*r);
  };
  run_workers(cases.size(), run_one, pool, finish);
  return results;
}

}  // namespace ts
