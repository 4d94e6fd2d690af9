#pragma once
// A workload's subgraph as a small ONNX model, so that a records database can keep what each of
// its workloads is and featurize its records again later without the model they came from.
//
// The model holds the workload's graph as partition_graph made it: canonical tensor names (in0..,
// k0.., t0.., out..), every tensor's dtype and static shape (graph inputs, outputs and value_info,
// so reading it needs no shape inference), the constants the key embeds (k0..) as initializers,
// and what ONNX cannot say as metadata: each tensor's layout ("tensorsched.layouts"), which
// inputs are model weights ("tensorsched.constant_inputs", which schedules may pack at load) and
// the workload's key hash ("tensorsched.key_hash"). Attributes tensorsched adds (the Winograd
// mark) are kept as the node attributes they are. Weights themselves are not stored: their
// values do not change a schedule's code or features.
#include <string>

#include "graph/workload.h"

namespace ts {

// The serialized ModelProto of w's subgraph (see top).
std::string workload_subgraph(const Workload& w);

// The workload a workload_subgraph() holds: its graph, keys, name, flops and constant inputs,
// recomputed from the graph; count 1. Throws Error naming `where` and the reason when the bytes
// are not such a model or the recomputed key's hash is not the one stored.
Workload workload_from_subgraph(const std::string& bytes, const std::string& where);

}  // namespace ts
