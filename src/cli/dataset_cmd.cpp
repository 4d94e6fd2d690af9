// `tensorsched dataset networks --count N --seed S --out DIR`: random networks (dataset/
// random_network.h) written as ONNX files, one line per network: file, operators, inputs,
// outputs, depth, GFLOP-free size facts (tensors, weights' bytes).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "dataset/random_network.h"
#include "graph/error.h"
#include "graph/onnx_export.h"

namespace ts {

namespace {

struct NetworksArgs {
  int count = 10;
  uint64_t seed = 0;
  std::string out;
  RandomNetworkOptions options;
};

// The file of network `index` of a set made with `seed`.
std::string network_file(uint64_t seed, int index) { return fmt::format("random_{}_{:05d}.onnx", seed, index); }

int networks_command(const NetworksArgs& a) {
  std::filesystem::create_directories(a.out);
  std::map<std::string, int> op_counts;
  for (int i = 0; i < a.count; i++) {
    const uint64_t seed = network_seed(a.seed, static_cast<uint64_t>(i));
    const RandomNetwork net = random_network(seed, a.options);
    const std::string name = network_file(a.seed, i);
    const std::filesystem::path path = std::filesystem::path(a.out) / name;
    std::ofstream f(path, std::ios::binary);
    f << graph_to_onnx(net.graph, name);
    if (!f) throw Error(fmt::format("{}: cannot write the network", path.string()));
    int64_t weight_bytes = 0;
    for (const auto& [tname, t] : net.graph.tensors)
      if (t.value) weight_bytes += static_cast<int64_t>(t.value->bytes.size());
    for (const Node& n : net.graph.nodes) op_counts[n.op]++;
    std::cout << fmt::format("{}  {} ops, {} inputs, {} outputs, depth {}, {:.2f} MB of weights ({} drawn)\n", path.string(),
                             net.graph.nodes.size(), net.graph.inputs.size(), net.graph.outputs.size(), net.depth,
                             static_cast<double>(weight_bytes) / 1e6, net.attempts);
  }
  std::string ops;
  for (const auto& [op, c] : op_counts) ops += fmt::format(" {}:{}", op, c);
  std::cout << fmt::format("{} networks (seed {}) in {}; ops:{}\n", a.count, a.seed, a.out, ops);
  return 0;
}

}  // namespace

void add_dataset_command(CLI::App& app) {
  auto* ds = app.add_subcommand("dataset", "Random networks for the test bed and the data set");
  ds->require_subcommand(1);
  auto a = std::make_shared<NetworksArgs>();
  auto* nets = ds->add_subcommand("networks", "Write random networks (the graph-network paper's generator) as ONNX files");
  nets->add_option("--count", a->count, "Networks to write")->check(CLI::PositiveNumber);
  nets->add_option("--seed", a->seed, "Seed of the set: network i is random_network(network_seed(seed, i))");
  nets->add_option("--out", a->out, "Folder to write random_SEED_INDEX.onnx into")->required();
  RandomNetworkOptions& o = a->options;
  nets->add_option("--min-ops", o.min_ops, "Fewest operators a network is drawn with")->check(CLI::PositiveNumber);
  nets->add_option("--max-ops", o.max_ops, "Most operators a network is drawn with")->check(CLI::PositiveNumber);
  nets->add_option("--max-inputs", o.max_inputs, "Most runtime inputs (weights excluded)")->check(CLI::PositiveNumber);
  nets->add_option("--max-outputs", o.max_outputs, "Most outputs")->check(CLI::PositiveNumber);
  nets->add_option("--max-tensor-elements", o.max_tensor_elements, "Most elements of any tensor")->check(CLI::PositiveNumber);
  nets->add_option("--max-node-flops", o.max_node_flops, "Most FLOPs of one conv or matmul")->check(CLI::PositiveNumber);
  nets->add_option("--depth-thresh", o.depth_thresh, "Fewest nodes on the longest path (the paper's depth filter)");
  nets->add_option("--output-thresh", o.output_thresh, "Outputs beyond which a network is mostly rejected");
  on_command(nets, [a] { return networks_command(*a); });
}

}  // namespace ts
