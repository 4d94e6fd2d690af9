#pragma once
// A Graph written as an ONNX model: the inverse of onnx_import.h for graphs with static shapes.
// Every tensor's dtype and shape is declared (inputs, outputs, value_info), constants are
// initializers, node attributes are written as they are held.
#include <map>
#include <string>

#include "graph/graph.h"

namespace ts {

// The serialized ModelProto of g (IR version 8, g.opset), named `name`, with `metadata` as the
// model's metadata properties.
std::string graph_to_onnx(const Graph& g, const std::string& name, const std::map<std::string, std::string>& metadata = {});

}  // namespace ts
