#pragma once
// Random neural networks, the test bed and the data set's raw material: the graph-network paper's
// generator (Singh et al., section III.A, Algorithm 1) with the value-learning paper's ranges
// (Steiner et al., section 6.1). See docs/design.md (src/dataset/).
//
// A network is built stage by stage. The first stage is its inputs (1-4 float tensors of rank 1-4,
// dimensions 1-1024, shrunk to fit a size budget); each further stage has `width` nodes whose
// activation inputs are tensors of the stage before. A node's type is drawn first (unary: one
// activation input, binary: two, n-ary: two to four), then its op among the ops of that type
// that tensorsched lowers, then legal parameters for the shapes at hand (kernel, stride,
// dilation, groups and padding of every kind of conv, pooling windows, gemm and matmul shapes,
// resize modes, concat axes, layout-changing ops); weights are initializers and do not count as
// inputs. Tensors no node of a stage used are carried to the next, so the last stage holds the
// outputs. Filters (the paper's): at most `output_thresh` outputs, a longest path of at least
// `depth_thresh` nodes, and a favoured op (Conv, ConvTranspose, Gemm, MatMul); a network that
// misses the first or the last is kept with a small probability, as the paper discards "most".
// Every choice comes from one generator seeded by `seed`: the same seed gives the same network.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ts {

struct RandomNetworkOptions {
  int min_ops = 1;                  // operators drawn (uniformly) between min_ops and max_ops
  int max_ops = 200;                // (weights and shape constants are not operators)
  int max_inputs = 4;               // runtime inputs, weights excluded
  int max_outputs = 15;             // never more outputs than this
  int max_rank = 4;                 // input ranks 1..max_rank
  int64_t max_dim = 1024;           // input dimensions 1..max_dim (log-uniform)
  int max_width = 4;                // nodes per stage, 1..max_width
  int64_t max_tensor_elements = int64_t{1} << 18;  // no tensor larger: a network runs in well under a second
  int64_t max_node_flops = int64_t{48} << 20;       // no conv or matmul of more FLOPs
  int output_thresh = 1;            // more outputs: kept with probability keep_many_outputs
  double keep_many_outputs = 0.05;
  int depth_thresh = 5;             // a longest path of fewer nodes (when at least that many were drawn): rejected
  double keep_unfavoured = 0.1;     // without a favoured op: kept with this probability
  int max_attempts = 2000;          // networks drawn before giving up (an Error)
};

// What the generator made.
struct RandomNetwork {
  Graph graph;      // opset 17, every tensor's shape set, weights as initializers
  int attempts = 0; // networks drawn until one passed the filters
  int depth = 0;    // nodes on the longest input-to-output path
};

// The network of `seed` (deterministic). Throws Error when no network passes the filters within
// max_attempts, or when the options are out of range (naming the option).
RandomNetwork random_network(uint64_t seed, const RandomNetworkOptions& options = {});

// The seed of network `index` of a set generated with `seed` (a hash of both).
uint64_t network_seed(uint64_t seed, uint64_t index);

}  // namespace ts
