#pragma once
// Dense host tensors: element type, static shape and bytes. Used for initializers, constant
// folding, test-data files (.pb TensorProto) and the inputs/outputs of compiled code.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/error.h"

namespace onnx { class TensorProto; }

namespace ts {

enum class DType { Float32, Float64, Int8, UInt8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Bool };

using Shape = std::vector<int64_t>;

size_t dtype_size(DType t);

// Generated code indexes with 32-bit integers: no tensor may reach 2 GiB.
inline constexpr double kMaxTensorBytes = 2147483648.0;
std::string dtype_name(DType t);
bool dtype_is_float(DType t);
// ONNX TensorProto::DataType value <-> DType; throws Unsupported naming the ONNX type.
DType dtype_from_onnx(int onnx_type, const std::string& where);
int dtype_to_onnx(DType t);

int64_t num_elements(const Shape& s);
std::string shape_str(const Shape& s);

struct Tensor {
  DType dtype = DType::Float32;  // element type
  Shape shape;                   // dims, outermost first (ONNX order)
  std::vector<uint8_t> bytes;    // row-major data, dtype_size(dtype) * num_elements(shape)

  Tensor() = default;
  Tensor(DType t, Shape s);  // zero-filled

  int64_t size() const { return num_elements(shape); }
  template <typename T> T* data() { return reinterpret_cast<T*>(bytes.data()); }
  template <typename T> const T* data() const { return reinterpret_cast<const T*>(bytes.data()); }

  // Element i converted to double / int64, whatever the dtype.
  double get_f64(int64_t i) const;
  int64_t get_i64(int64_t i) const;
  void set_f64(int64_t i, double v);
  std::vector<int64_t> to_i64_vector() const;
  std::vector<double> to_f64_vector() const;
  Tensor cast(DType to) const;

  static Tensor from_i64(const std::vector<int64_t>& v, Shape s);
  static Tensor scalar_f32(float v);
  // This 2-D tensor transposed ([R, C] -> [C, R]); throws Error when it is not 2-D.
  Tensor transposed_2d() const;
};

// Conversions to/from ONNX TensorProto (raw_data or typed fields). `where` names the tensor
// in error messages. External data is resolved relative to `base_dir` when given.
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& where,
                         const std::string& base_dir = "");
void tensor_to_proto(const Tensor& t, onnx::TensorProto* p);
Tensor read_tensor_pb(const std::string& path);   // a serialized TensorProto file
void write_tensor_pb(const Tensor& t, const std::string& name, const std::string& path);

// Deterministic pseudo-random tensor (splitmix64 on seed and index): uniform in [lo, hi).
Tensor random_tensor(DType t, const Shape& s, uint64_t seed, double lo, double hi);

// Compares `got` against `want` with |got - want| <= atol + rtol * |want| (NaN equals NaN).
struct Comparison {
  bool ok = true;
  double max_abs_error = 0;   // largest |got - want|
  double max_rel_error = 0;   // largest |got - want| / |want| over nonzero want
  double max_abs_want = 0;    // largest finite |want|: the scale of the values compared
  std::string message;        // why not ok (shape, dtype, values)
};
Comparison compare_tensors(const Tensor& got, const Tensor& want, double rtol, double atol);

}  // namespace ts
