#pragma once
// Validation of an ONNX model before anything trusts it, as ONNX Runtime validates a model when it
// loads one. ONNX's own shape inference divides by strides and reads attributes unchecked, so the
// checks that protect it run first; each error names the file, the node, its op and the attribute
// or input at fault.
//
//   check_model_structure  names, definitions before use (nodes are put in topological order, as
//                          ONNX Runtime sorts them), single assignment, duplicate initializers
//                          (the last one wins, as in ONNX Runtime),
//                          ONNX's schema checker per node (arity, required and unknown attributes,
//                          attribute types), then the attribute values shape inference would
//                          trust: strides, dilations, kernel sizes, pads, groups, weight shapes.
//   check_model_types      after shape inference: every node's inputs bind its type constraints
//                          consistently (a Conv with a float input and a double weight is refused),
//                          and convolution channel counts agree with their weights.
#include <onnx/onnx_pb.h>

#include <string>

namespace ts {

// Throws Error naming `path` and the node. May reorder the graph's nodes (never changes them)
// and drop all but the last of initializers defined twice.
void check_model_structure(onnx::ModelProto& model, const std::string& path, int opset);

// Throws Error naming `path` and the node; needs the value_info of a shape inference pass.
void check_model_types(const onnx::ModelProto& model, const std::string& path, int opset);

}  // namespace ts
