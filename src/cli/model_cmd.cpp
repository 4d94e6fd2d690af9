// Subcommands about one model: `info` (the imported graph) and `ops` (what tensorsched lowers).
#include <fmt/format.h>

#include <filesystem>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "api/compile_model.h"
#include "cli/commands.h"
#include "graph/layout_plan.h"
#include "graph/npy.h"
#include "graph/onnx_import.h"
#include "graph/passes.h"
#include "lower/lower.h"

namespace ts {

namespace {

std::vector<std::pair<CLI::App*, std::function<int()>>>& actions() {
  static std::vector<std::pair<CLI::App*, std::function<int()>>> a;
  return a;
}

}  // namespace

void on_command(CLI::App* sub, std::function<int()> action) { actions().emplace_back(sub, std::move(action)); }

int run_selected_command(CLI::App& app) {
  for (auto& [sub, action] : actions())
    if (sub->parsed()) return action();
  return 2;
}

void add_model_args(CLI::App* sub, ModelArgs& m) {
  sub->add_option("model", m.path, "ONNX model file")->required();
  sub->add_option("--shape", m.shapes, "Fix a dynamic input shape: NAME=D0,D1,...");
  sub->add_option("--layout", m.layout, "Tensor layouts between workloads: blocked (NCHW[x]c where it pays) or plain")
      ->check(CLI::IsMember({"blocked", "plain"}));
  sub->add_option("--max-memory", m.max_memory,
                  "Most memory a run may hold (constants + activations), e.g. 8G (default: 3/4 of physical memory)");
  sub->add_flag("--no-winograd", m.no_winograd, "Compute every conv directly (default: 3x3 convs with enough tiles run as Winograd F(4x4,3x3))");
}

LoadOptions load_options(const ModelArgs& m, int threads) {
  LoadOptions o{m.shapes, m.layout};
  o.winograd = !m.no_winograd;
  o.threads = threads;
  if (!m.max_memory.empty()) o.max_memory_bytes = parse_memory_size(m.max_memory);
  return o;
}

Graph load_model(const ModelArgs& m, int threads) { return load_model(m.path, load_options(m, threads)); }

void add_model_commands(CLI::App& app) {
  auto info = std::make_shared<ModelArgs>();
  auto info_json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("info", "Import a model and summarize its graph after passes");
  add_model_args(sub, *info);
  sub->add_flag("--json", *info_json, "JSON output");
  on_command(sub, [info, info_json] {
    // A model with unsupported ops is still summarized (imported as it is, without passes),
    // then the error lists every unsupported op.
    Graph g;
    std::string unsupported;
    try {
      g = load_model(*info);
    } catch (const Unsupported& e) {
      ImportOptions raw;
      raw.quiet = true;
      for (const auto& s : info->shapes) raw.shape_overrides.insert(parse_shape_override(s));
      try {
        g = import_onnx(info->path, raw);
      } catch (const Error&) {
        throw e;
      }
      unsupported = e.what();
    }
    std::map<std::string, int> ops;
    for (const auto& n : g.nodes) ops[n.op]++;
    auto io = [&](const std::vector<std::string>& names) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& n : names)
        a.push_back({{"name", n}, {"dtype", dtype_name(g.tensor(n).dtype)}, {"shape", g.tensor(n).shape}});
      return a;
    };
    nlohmann::json j = {{"model", g.path}, {"opset", g.opset}, {"nodes", g.nodes.size()},
                        {"ops", ops}, {"inputs", io(g.inputs)}, {"outputs", io(g.outputs)}};
    if (!unsupported.empty()) j["error"] = unsupported;
    if (*info_json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << fmt::format("{}: opset {}, {} nodes\n", g.path, g.opset, g.nodes.size());
      // Names from the model are printed without control characters (no terminal escapes).
      for (const auto& n : g.inputs)
        std::cout << fmt::format("  input  {} {} {}\n", printable_name(n), dtype_name(g.tensor(n).dtype), shape_str(g.tensor(n).shape));
      for (const auto& n : g.outputs)
        std::cout << fmt::format("  output {} {} {}\n", printable_name(n), dtype_name(g.tensor(n).dtype), shape_str(g.tensor(n).shape));
      for (const auto& [op, c] : ops)
        std::cout << fmt::format("  {:>4} x {}{}\n", c, printable_name(op), op_supported(op) ? "" : "  (not supported)");
    }
    if (unsupported.empty()) return 0;
    spdlog::error("{}", unsupported);
    return 1;
  });

  auto* ops = app.add_subcommand("ops", "List the ONNX ops tensorsched lowers to Halide");
  on_command(ops, [] {
    for (const auto& op : supported_ops()) std::cout << op << "\n";
    return 0;
  });

  auto files = std::make_shared<std::pair<std::string, std::string>>();
  auto* convert = app.add_subcommand("convert", "Convert a tensor file between .pb (ONNX TensorProto) and .npy");
  convert->add_option("IN", files->first, "Tensor file (.npy or .pb)")->required();
  convert->add_option("OUT", files->second, "Tensor file to write (.npy or .pb, by extension)")->required();
  on_command(convert, [files] {
    Tensor t = read_tensor_file(files->first);
    const std::string& out = files->second;
    if (out.size() >= 4 && out.compare(out.size() - 4, 4, ".npy") == 0) write_tensor_npy(t, out);
    else write_tensor_pb(t, std::filesystem::path(files->first).stem().string(), out);
    std::cout << fmt::format("{} {}: {} -> {}\n", dtype_name(t.dtype), shape_str(t.shape), files->first, out);
    return 0;
  });
}

}  // namespace ts
