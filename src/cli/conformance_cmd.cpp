// `tensorsched conformance [DIR...] [--json]`: ONNX backend tests, and the README's op table.
#include <fmt/format.h>

#include <cstdlib>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "cli/commands.h"
#include "graph/error.h"
#include "lower/lower.h"
#include "runtime/conformance.h"

namespace ts {

namespace {

struct ConformanceArgs {
  std::vector<std::string> dirs;
  bool json = false;
  bool require_supported_pass = false;
  std::string filter;
  std::string ops_markdown;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double timeout = 120;
  int threads = 0;  // Halide threads per case (0 = the JIT runtime's default)
};

bool all_ops_supported(const ConformanceResult& r) {
  if (r.ops.empty()) return false;
  for (const auto& op : r.ops)
    if (!op_supported(op) && op != "Constant" && op != "Shape" && op != "Size" && op != "ConstantOfShape")
      return false;
  return true;
}

// Markdown table: for each supported op, the cases that use it and how many pass.
void write_ops_markdown(const std::vector<ConformanceResult>& results, const std::string& path) {
  std::map<std::string, std::array<int, 4>> per_op;  // pass, fail, unsupported, error
  for (const auto& r : results)
    for (const auto& op : r.ops) {
      if (!op_supported(op)) continue;
      int k = r.status == "pass" ? 0 : r.status == "fail" ? 1 : r.status == "unsupported" ? 2 : 3;
      per_op[op][k]++;
    }
  std::ofstream f(path);
  if (!f) throw Error(fmt::format("{}: cannot write", path));
  f << "| op | conformance cases passed | unsupported variants |\n|---|---|---|\n";
  for (const auto& op : supported_ops()) {
    auto it = per_op.find(op);
    if (it == per_op.end()) {
      f << fmt::format("| {} | no test case | |\n", op);
      continue;
    }
    auto [p, fl, u, e] = it->second;
    f << fmt::format("| {} | {}/{} | {} |\n", op, p, p + fl + e, u ? std::to_string(u) : "");
  }
}

int run_conformance_command(const ConformanceArgs& a) {
  auto dirs = a.dirs.empty() ? default_conformance_dirs() : a.dirs;
  auto cases = discover_cases(dirs);
  if (!a.filter.empty()) {
    std::vector<ConformanceCase> kept;
    for (auto& c : cases)
      if (c.name.find(a.filter) != std::string::npos) kept.push_back(c);
    cases = kept;
  }
  // The JIT runtime of every case (forked workers included) reads its thread count from here.
  if (a.threads > 0) setenv("HL_NUM_THREADS", std::to_string(a.threads).c_str(), 1);
  ConformanceOptions opts;
  opts.jobs = a.jobs;
  opts.timeout_s = a.timeout;
  std::map<std::string, int> counts = {{"pass", 0}, {"fail", 0}, {"unsupported", 0}, {"error", 0}};
  std::vector<std::string> violations;
  auto results = run_conformance(cases, opts, [&](const ConformanceResult& r) {
    counts[r.status]++;
    if ((r.status == "fail" || r.status == "error") && all_ops_supported(r)) violations.push_back(r.name);
    if (a.json) {
      std::cout << result_to_json(r) << std::endl;
    } else {
      std::string detail = r.status == "pass" ? fmt::format("max abs err {:.2e}", r.max_abs_error) : r.reason;
      std::cout << fmt::format("{:<11} {:<60} {:6.2f}s  {}", r.status, r.name, r.seconds, detail) << std::endl;
    }
  });
  if (a.json) {
    std::cout << fmt::format(R"({{"summary": {{"pass": {}, "fail": {}, "unsupported": {}, "error": {}}}}})",
                             counts["pass"], counts["fail"], counts["unsupported"], counts["error"])
              << std::endl;
  } else {
    std::cout << fmt::format("{} cases: {} pass, {} fail, {} unsupported, {} error\n", results.size(), counts["pass"],
                             counts["fail"], counts["unsupported"], counts["error"]);
  }
  if (!a.ops_markdown.empty()) write_ops_markdown(results, a.ops_markdown);
  if (a.require_supported_pass && !violations.empty()) {
    std::cerr << fmt::format("tensorsched: error: {} cases whose ops are all supported did not pass:", violations.size());
    for (const auto& v : violations) std::cerr << " " << v;
    std::cerr << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_conformance_command(CLI::App& app) {
  auto args = std::make_shared<ConformanceArgs>();
  auto* sub = app.add_subcommand("conformance", "Run ONNX backend test cases (default: Debian's libonnx-testdata)");
  sub->add_option("dirs", args->dirs, "Suite folders (holding CASE/model.onnx) or case folders");
  sub->add_flag("--json", args->json, "One JSON object per case, then a summary line");
  sub->add_option("--filter", args->filter, "Only cases whose name contains this");
  sub->add_option("-j,--jobs", args->jobs, "Cases run in parallel");
  sub->add_option("--threads", args->threads, "Halide threads per case (0 = all cores)")->check(CLI::NonNegativeNumber);
  sub->add_option("--timeout", args->timeout, "Seconds per case before it counts as an error");
  sub->add_flag("--require-supported-pass", args->require_supported_pass,
                "Exit 1 when a case whose ops are all supported fails or errors");
  sub->add_option("--ops-markdown", args->ops_markdown, "Write the per-op conformance table (Markdown) here");
  on_command(sub, [args] { return run_conformance_command(*args); });
}

}  // namespace ts
