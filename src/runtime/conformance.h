#pragma once
// ONNX backend-test conformance: runs cases laid out as CASE/model.onnx +
// CASE/test_data_set_N/{input_i.pb, output_i.pb} and classifies each as pass, fail (with the
// max abs/rel error), unsupported (which op or feature) or error (message). Every case runs in
// its own forked process, so a crash or hang in generated code is a result, not our death.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ts {

struct ConformanceCase {
  std::string name;                 // "node/test_relu": suite folder + case folder
  std::string dir;                  // path of the case folder
};

struct ConformanceResult {
  std::string name;
  std::string status;               // "pass", "fail", "unsupported" or "error"
  std::vector<std::string> ops;     // op types in the model
  double max_abs_error = 0;
  double max_rel_error = 0;
  double seconds = 0;
  std::string reason;               // unsupported op/feature, mismatch or error message
};

struct ConformanceOptions {
  int jobs = 1;                     // cases run in parallel (each in its own process)
  double timeout_s = 120;           // per case
  std::string filter;               // substring of case names to keep
};

// ONNX test-data layout, shared with `run --check`: the test_data_set_* folders of a case,
// sorted (throws Error naming `dir` when it is not a directory or holds none), and the
// PREFIX<i>.pb files of one set in index order.
std::vector<std::string> test_data_sets(const std::string& dir);
std::vector<std::string> test_data_files(const std::string& set, const std::string& prefix);

// Default directories: libonnx-testdata's node, pytorch-converted, pytorch-operator, simple.
std::vector<std::string> default_conformance_dirs();
// Cases below each dir: dir itself when it holds model.onnx, else its immediate children.
std::vector<ConformanceCase> discover_cases(const std::vector<std::string>& dirs);
// Runs one case in this process (may throw nothing: every failure is in the result).
ConformanceResult run_case_inprocess(const ConformanceCase& c);
// Runs cases in forked workers; on_result is called as each finishes, in completion order.
std::vector<ConformanceResult> run_conformance(const std::vector<ConformanceCase>& cases,
                                               const ConformanceOptions& opts,
                                               const std::function<void(const ConformanceResult&)>& on_result);

// Tolerances: rtol 1e-3, atol 1e-4 unless the op table in conformance.cpp says otherwise.
std::pair<double, double> conformance_tolerance(const std::vector<std::string>& ops);

std::string result_to_json(const ConformanceResult& r);
std::optional<ConformanceResult> result_from_json(const std::string& line);

}  // namespace ts
