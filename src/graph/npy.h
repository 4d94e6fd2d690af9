#pragma once
// NumPy .npy files (format 1.0/2.0/3.0, little-endian, C order) for model inputs and outputs,
// and one reader for both tensor file kinds the CLI takes: .npy and serialized ONNX TensorProto.
#include <string>

#include "graph/tensor.h"

namespace ts {

// Throws Error naming the file and what is wrong (not .npy, Fortran order, big-endian, an
// unsupported dtype, fewer bytes than the header says).
Tensor read_tensor_npy(const std::string& path);
// Writes version 1.0 with the dtype's little-endian descriptor ("<f4", "|b1", ...).
void write_tensor_npy(const Tensor& t, const std::string& path);
// By extension: ".npy" -> read_tensor_npy, anything else -> read_tensor_pb.
Tensor read_tensor_file(const std::string& path);

}  // namespace ts
