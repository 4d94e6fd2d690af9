#include "dataset/random_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "dataset/random_network_builder.h"
#include "graph/error.h"

namespace ts {

namespace {

using namespace random_net;

// Draws a node's type, then its op, until one fits `pool`. A stage of several tensors draws
// binary and n-ary nodes more often (0.4 and 0.2, else 0.1 and 0.05): branches merge, as in the
// networks people write, and fewer tensors are left over as outputs.
// `merge`: binary and n-ary nodes only (closing a network). Returns whether a node was added.
bool add_random_node(Net& n, const Pool& pool, bool merge = false) {
  const auto& table = op_table();
  const double binary = merge ? 0.6 : pool.size() >= 2 ? 0.4 : 0.1, nary = merge ? 0.4 : pool.size() >= 2 ? 0.2 : 0.05;
  for (int tries = 0; tries < 24; tries++) {
    const double t = n.unit();
    const int type = t < nary ? 3 : t < nary + binary ? 2 : 1;
    std::vector<double> weights;
    for (const auto& c : table) weights.push_back(c.type == type ? c.weight : 0.0);
    std::discrete_distribution<size_t> which(weights.begin(), weights.end());
    if (table[which(n.rng)].make(n, pool)) return true;
  }
  return false;
}

// One input: rank 1..max_rank, dimensions log-uniform in 1..max_dim, halved (largest first) to
// fit the tensor budget. Feature maps (rank 3-4) keep a batch of 1-2.
Shape draw_input(Net& n) {
  const int rank = static_cast<int>(n.uniform(1, n.o.max_rank));
  Shape s;
  for (int k = 0; k < rank; k++) s.push_back(n.log_uniform(1, n.o.max_dim));
  if (rank >= 3) s[0] = n.uniform(1, 2);
  while (num_elements(s) > n.o.max_tensor_elements) {
    auto largest = std::max_element(s.begin() + (rank >= 3 ? 1 : 0), s.end());
    *largest = (*largest + 1) / 2;
  }
  return s;
}

// The next stage's tensors: what the stage's nodes wrote, and the tensors they did not read.
Pool next_stage(const Net& n, const Pool& stage) {
  Pool next = n.made;
  for (const auto& t : stage)
    if (std::find(n.used.begin(), n.used.end(), t) == n.used.end()) next.push_back(t);
  return next;
}

// One network (Algorithm 1's body), or nullopt when a filter rejects it.
std::optional<RandomNetwork> try_network(uint64_t seed, const RandomNetworkOptions& o) {
  Net n(seed, o);
  const int64_t target = n.uniform(o.min_ops, o.max_ops);
  Pool stage;
  const int inputs = static_cast<int>(n.uniform(1, o.max_inputs));
  for (int k = 0; k < inputs; k++) {
    const std::string name = fmt::format("in{}", k);
    n.g.tensors[name] = TensorInfo{name, DType::Float32, draw_input(n), std::nullopt, {}};
    n.g.inputs.push_back(name);
    n.depth[name] = 0;
    stage.push_back(name);
  }
  for (int stalls = 0; n.ops < target && stalls < 8;) {
    n.used.clear();
    n.made.clear();
    // Mostly no more nodes than the stage has tensors; one more (a branch) a fifth of the time.
    const int64_t size = static_cast<int64_t>(stage.size());
    const int64_t width = std::min<int64_t>(o.max_width, n.chance(0.2) ? size + 1 : n.uniform(1, size));
    for (int64_t k = 0; k < width && n.ops < target; k++) add_random_node(n, stage);
    stalls = n.made.empty() ? stalls + 1 : 0;
    stage = next_stage(n, stage);
  }
  // Closing: leftover branches merged by binary and n-ary nodes while their shapes allow.
  for (int k = 0; k < 8 && static_cast<int>(stage.size()) > o.output_thresh; k++) {
    n.used.clear();
    n.made.clear();
    if (add_random_node(n, stage, true)) stage = next_stage(n, stage);
  }
  // Inputs no node read are dropped; what the last stage holds are the outputs.
  std::vector<std::string> outputs;
  for (const auto& t : stage)
    if (n.depth.at(t) > 0) outputs.push_back(t);
  std::erase_if(n.g.inputs, [&](const std::string& in) {
    const bool read = std::any_of(n.g.nodes.begin(), n.g.nodes.end(), [&](const Node& node) {
      return std::find(node.inputs.begin(), node.inputs.end(), in) != node.inputs.end();
    });
    if (!read) n.g.tensors.erase(in);
    return !read;
  });
  if (outputs.empty() || static_cast<int>(outputs.size()) > o.max_outputs) return std::nullopt;
  int depth = 0;
  for (const auto& t : outputs) depth = std::max(depth, n.depth.at(t));
  // The paper's filters: one output, depth, favoured ops; each kept with small odds when missed.
  if (static_cast<int>(outputs.size()) > o.output_thresh && !n.chance(o.keep_many_outputs)) return std::nullopt;
  if (depth < std::min<int64_t>(o.depth_thresh, n.ops)) return std::nullopt;
  if (n.favoured.empty() && !n.chance(o.keep_unfavoured)) return std::nullopt;
  n.g.outputs = outputs;
  RandomNetwork r;
  r.graph = std::move(n.g);
  r.depth = depth;
  return r;
}

void check_options(const RandomNetworkOptions& o) {
  auto need = [](bool ok, const char* what) {
    if (!ok) throw Error(fmt::format("random networks: {}", what));
  };
  need(o.min_ops >= 1 && o.min_ops <= o.max_ops, "min_ops must be in 1..max_ops");
  need(o.max_inputs >= 1, "max_inputs must be at least 1");
  need(o.max_outputs >= 1, "max_outputs must be at least 1");
  need(o.max_rank >= 1 && o.max_rank <= 6, "max_rank must be in 1..6");
  need(o.max_dim >= 1, "max_dim must be at least 1");
  need(o.max_width >= 1, "max_width must be at least 1");
  need(o.max_tensor_elements >= 1, "max_tensor_elements must be at least 1");
  need(o.max_attempts >= 1, "max_attempts must be at least 1");
}

}  // namespace

uint64_t network_seed(uint64_t seed, uint64_t index) {
  // splitmix64 of both: nearby seeds and indices give unrelated networks.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

RandomNetwork random_network(uint64_t seed, const RandomNetworkOptions& options) {
  check_options(options);
  for (int attempt = 0; attempt < options.max_attempts; attempt++)
    if (auto net = try_network(network_seed(seed, static_cast<uint64_t>(attempt)), options)) {
      net->attempts = attempt + 1;
      net->graph.path = fmt::format("random network {}", seed);
      return std::move(*net);
    }
  throw Error(fmt::format("random network {}: none of {} networks drawn passed the filters", seed, options.max_attempts));
}

}  // namespace ts
