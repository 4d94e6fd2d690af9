#pragma once
// The random network generator's building state and its op table, shared by the generator's
// stage loop (random_network.cpp) and the op makers (random_network_ops.cpp). Internal to
// src/dataset/: see random_network.h for what a network is.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dataset/random_network.h"

namespace ts::random_net {

using Ints = std::vector<int64_t>;

// The network being built, with the generator every choice comes from.
struct Net {
  std::mt19937_64 rng;
  const RandomNetworkOptions& o;
  Graph g;
  int ops = 0;                          // operators added
  std::map<std::string, int> depth;     // tensor -> nodes on the longest path to it (inputs: 0)
  std::vector<std::string> used;        // activations the stage's nodes read
  std::vector<std::string> made;        // activations the stage's nodes wrote
  std::set<std::string> favoured;       // favoured ops present

  Net(uint64_t seed, const RandomNetworkOptions& opts) : rng(seed), o(opts) { g.opset = 17; }

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  double unit() { return std::uniform_real_distribution<double>(0, 1)(rng); }
  bool chance(double p) { return unit() < p; }
  // Log-uniform in [lo, hi]: small sizes as likely per octave as large ones.
  int64_t log_uniform(int64_t lo, int64_t hi) {
    const double v = std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi + 1.0))(rng));
    return std::clamp<int64_t>(static_cast<int64_t>(v), lo, hi);
  }
  template <typename T>
  T pick(const std::vector<T>& v) { return v[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1))]; }

  // A tensor of `pool` as a node's input, most often one no node of the stage read yet: the
  // stage then consumes its inputs and fewer tensors are left over as outputs.
  std::string pick_tensor(const std::vector<std::string>& pool) {
    std::vector<std::string> unread;
    for (const auto& t : pool)
      if (std::find(used.begin(), used.end(), t) == used.end()) unread.push_back(t);
    return !unread.empty() && chance(0.85) ? pick(unread) : pick(pool);
  }
  const Shape& shape(const std::string& t) const { return g.tensors.at(t).shape; }
  int rank(const std::string& t) const { return static_cast<int>(shape(t).size()); }
  bool fits(const Shape& s) const { return num_elements(s) >= 1 && num_elements(s) <= o.max_tensor_elements; }

  std::string new_name(const char* prefix) { return fmt::format("{}{}", prefix, g.tensors.size()); }
  std::string activation(const Shape& s, DType t = DType::Float32) {
    const std::string name = new_name("t");
    g.tensors[name] = TensorInfo{name, t, s, std::nullopt, {}};
    return name;
  }
  std::string constant(Tensor value) {
    const std::string name = new_name("w");
    TensorInfo info{name, value.dtype, value.shape, std::nullopt, {}};
    info.value = std::move(value);
    g.tensors[name] = std::move(info);
    return name;
  }
  // Weights uniform in +-1/sqrt(fan_in): activations keep their scale through a chain of layers.
  std::string weight(const Shape& s, int64_t fan_in) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1)));
    return constant(random_tensor(DType::Float32, s, rng(), -bound, bound));
  }
  std::string values(const Shape& s, double lo, double hi) { return constant(random_tensor(DType::Float32, s, rng(), lo, hi)); }
  std::string ints(const Ints& v) { return constant(Tensor::from_i64(v, {static_cast<int64_t>(v.size())})); }

  // Adds a node reading `inputs` (activations first, then constants) and writing `outputs`.
  void node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
            std::map<std::string, Attribute> attrs = {}) {
    int d = 0;
    for (const auto& i : inputs)
      if (auto it = depth.find(i); it != depth.end()) {
        d = std::max(d, it->second);
        if (std::find(used.begin(), used.end(), i) == used.end()) used.push_back(i);
      }
    Node n;
    n.name = fmt::format("n{}_{}", g.nodes.size(), op);
    n.op = op;
    n.inputs = inputs;
    n.outputs = outputs;
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
    for (const auto& out : outputs) depth[out] = d + 1;
    ops++;
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") favoured.insert(op);
  }
  // A float activation output of a node: joins the stage's tensors.
  std::string output(const Shape& s) {
    const std::string t = activation(s);
    made.push_back(t);
    return t;
  }
};

inline Attribute attr(int64_t v) { return Attribute{v}; }
inline Attribute attr(double v) { return Attribute{v}; }
inline Attribute attr(const std::string& v) { return Attribute{v}; }
inline Attribute attr(const Ints& v) { return Attribute{v}; }

// The candidates of `pool` that satisfy `ok`.
inline std::vector<std::string> where(const Net& n, const std::vector<std::string>& pool, const std::function<bool(const Shape&)>& ok) {
  std::vector<std::string> out;
  for (const auto& t : pool)
    if (ok(n.shape(t))) out.push_back(t);
  return out;
}

// The shape a and b broadcast to (numpy rules), nullopt when they do not.
inline std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); k++) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1, db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[out.size() - 1 - k] = std::max(da, db);
  }
  return out;
}

using Pool = std::vector<std::string>;

// A node's input among the tensors of `pool` that satisfy `ok` (Net::pick_tensor), "" for none.
inline std::string pick_where(Net& n, const Pool& pool, const std::function<bool(const Shape&)>& ok) {
  const Pool xs = where(n, pool, ok);
  return xs.empty() ? "" : n.pick_tensor(xs);
}

using OpMaker = std::function<bool(Net&, const Pool&)>;

// One op the generator may draw: how many activation inputs it takes and how to add it.
struct OpChoice {
  int type;       // activation inputs: 1 unary, 2 binary, 3 n-ary
  double weight;  // relative odds within its type
  OpMaker make;
};

// Every op the generator draws, in a fixed order (the order is part of what a seed draws).
const std::vector<OpChoice>& op_table();

}  // namespace ts::random_net
