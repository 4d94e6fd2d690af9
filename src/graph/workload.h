#pragma once
// Partition of a Graph into Workloads: each an anchor op (conv, matmul, pooling, reduction,
// softmax, normalization) fused with the single-consumer chain of cheap elementwise ops after
// it, or a stand-alone op. A Workload is compiled as one Halide pipeline; identical workloads
// (same exact key) are compiled and tuned once and counted.
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ts {

struct Workload {
  std::string exact_key;     // canonical text: structure, attributes, dtypes, shapes, small constants
  std::string class_key;     // the same without shapes: what tuning-reuse matches on
  std::string name;          // short readable name, e.g. "Conv+Add+Relu"
  Graph graph;               // the subgraph with canonical tensor names (in0.., t0.., out0..)
  int count = 0;             // occurrences in the model
  int64_t flops = 0;         // arithmetic operations of one occurrence
  int64_t bytes = 0;         // bytes of its inputs (incl. weights) and outputs
  std::vector<std::string> constant_inputs;  // graph inputs bound to model constants (weights) at its first use: a schedule may pack them at load

  std::string key_hash() const;    // 16 hex digits of FNV-1a over exact_key
  std::string class_hash() const;  // same over class_key
};

// One execution step of the model: a workload bound to model tensors.
struct WorkloadStep {
  size_t workload;                    // index into Partition::workloads
  std::vector<std::string> inputs;    // model tensors for the workload's graph inputs, in order
  std::vector<std::string> outputs;   // model tensors for its graph outputs, in order
  std::vector<size_t> nodes;          // the model's node indices it covers
};

struct Partition {
  std::vector<Workload> workloads;    // distinct, in order of first use
  std::vector<WorkloadStep> steps;    // execution order
};

// Ops fused into the workload of the op they follow.
bool is_fusable_elementwise(const std::string& op);
// Ops that anchor a workload.
bool is_anchor(const std::string& op);
// Ops that only move elements (Reshape, Transpose, Concat, ...): a chain of them runs as one copy.
bool is_data_movement(const std::string& op);
// Whether n reads one tensor on both sides of an op whose IEEE result on Inf or NaN differs from
// the algebraic one Halide's simplifier folds it to (x - x, x / x, x == x, x <= x, x >= x):
// lower/elementwise.cpp spells those results out, and a workload starts at such an op, since
// inside a fused chain an Inf the chain computed is, under fast math, a value the compiler may
// assume away; read from memory it is not.
bool folds_on_itself(const Node& n);

Partition partition_graph(const Graph& g);
// The workload of every node of g taken as one group, as partition_graph makes a workload of a
// group: a workload's own graph gives that workload again (graph/workload_onnx.h reads it so).
Workload whole_graph_workload(const Graph& g);
// The workload of p whose key_hash() is `key_hash`, nullptr when none is.
const Workload* find_workload(const Partition& p, const std::string& key_hash);

// Arithmetic operations of one node (multiply-adds count 2; a conv tap on padding is not one).
int64_t node_flops(const Graph& g, const Node& n);

std::string fnv1a_hex(const std::string& s);

// The anchor of a workload class: its class key up to and including the first operation (the
// declarations of that operation's inputs, the operation, its outputs' layouts and its class
// attributes) when that operation anchors workloads (is_anchor: a conv, matmul, pooling, ...).
// Classes that differ only in the elementwise ops fused after the anchor share it (Conv+Relu and
// Conv+Add+Relu over the same conv), which the weaker across-class tuning reuse matches on.
// Empty when the class starts with another op (an elementwise chain, a copy): nothing to share.
std::string class_anchor(const std::string& class_key);

}  // namespace ts
