#include "graph/tensor.h"
#include "graph/file_io.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ts {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float64: case DType::Int64: case DType::UInt64: return 8;
    case DType::Float32: case DType::Int32: case DType::UInt32: return 4;
    case DType::Int16: case DType::UInt16: return 2;
    case DType::Int8: case DType::UInt8: case DType::Bool: return 1;
  }
  return 0;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int16: return "int16";
    case DType::UInt16: return "uint16";
    case DType::Int32: return "int32";
    case DType::UInt32: return "uint32";
    case DType::Int64: return "int64";
    case DType::UInt64: return "uint64";
    case DType::Bool: return "bool";
  }
  return "?";
}

bool dtype_is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

DType dtype_from_onnx(int t, const std::string& where) {
  using P = onnx::TensorProto;
  switch (t) {
    case P::FLOAT: return DType::Float32;
    case P::DOUBLE: return DType::Float64;
    case P::INT8: return DType::Int8;
    case P::UINT8: return DType::UInt8;
    case P::INT16: return DType::Int16;
    case P::UINT16: return DType::UInt16;
    case P::INT32: return DType::Int32;
    case P::UINT32: return DType::UInt32;
    case P::INT64: return DType::Int64;
    case P::UINT64: return DType::UInt64;
    case P::BOOL: return DType::Bool;
    default: break;
  }
  std::string name = P::DataType_IsValid(t) ? P::DataType_Name(static_cast<P::DataType>(t)) : std::to_string(t);
  throw Unsupported(fmt::format("{}: element type {} is not supported (supported: float32, float64, "
                                "int8-64, uint8-64, bool)", where, name));
}

int dtype_to_onnx(DType t) {
  using P = onnx::TensorProto;
  switch (t) {
    case DType::Float32: return P::FLOAT;
    case DType::Float64: return P::DOUBLE;
    case DType::Int8: return P::INT8;
    case DType::UInt8: return P::UINT8;
    case DType::Int16: return P::INT16;
    case DType::UInt16: return P::UINT16;
    case DType::Int32: return P::INT32;
    case DType::UInt32: return P::UINT32;
    case DType::Int64: return P::INT64;
    case DType::UInt64: return P::UINT64;
    case DType::Bool: return P::BOOL;
  }
  return P::UNDEFINED;
}

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

Tensor::Tensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
  bytes.assign(dtype_size(t) * num_elements(shape), 0);
}

// Dispatch on dtype with the C++ element type bound to T.
template <typename F>
static auto visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Int8: return f(int8_t{});
    case DType::UInt8: return f(uint8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt64: return f(uint64_t{});
    case DType::Bool: return f(bool{});
  }
  return f(float{});
}

double Tensor::get_f64(int64_t i) const {
  return visit_dtype(dtype, [&](auto z) { return static_cast<double>(data<decltype(z)>()[i]); });
}
int64_t Tensor::get_i64(int64_t i) const {
  return visit_dtype(dtype, [&](auto z) { return static_cast<int64_t>(data<decltype(z)>()[i]); });
}
void Tensor::set_f64(int64_t i, double v) {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    data<T>()[i] = static_cast<T>(v);
    return 0;
  });
}
std::vector<int64_t> Tensor::to_i64_vector() const {
  std::vector<int64_t> r(size());
  for (int64_t i = 0; i < size(); i++) r[i] = get_i64(i);
  return r;
}
std::vector<double> Tensor::to_f64_vector() const {
  std::vector<double> r(size());
  for (int64_t i = 0; i < size(); i++) r[i] = get_f64(i);
  return r;
}
Tensor Tensor::cast(DType to) const {
  Tensor r(to, shape);
  bool int_path = !dtype_is_float(dtype) && !dtype_is_float(to);
  for (int64_t i = 0; i < size(); i++) {
    if (int_path) {
      int64_t v = get_i64(i);
      visit_dtype(to, [&](auto z) { r.data<decltype(z)>()[i] = static_cast<decltype(z)>(v); return 0; });
    } else {
      r.set_f64(i, get_f64(i));
    }
  }
  return r;
}
Tensor Tensor::from_i64(const std::vector<int64_t>& v, Shape s) {
  Tensor t(DType::Int64, std::move(s));
  if (t.size() != static_cast<int64_t>(v.size())) throw Error("Tensor::from_i64: size mismatch");
  std::memcpy(t.bytes.data(), v.data(), v.size() * 8);
  return t;
}
Tensor Tensor::transposed_2d() const {
  if (shape.size() != 2) throw Error(fmt::format("transposed_2d: tensor of shape {} is not 2-D", shape_str(shape)));
  const int64_t rows = shape[0], cols = shape[1];
  const size_t es = dtype_size(dtype);
  Tensor t(dtype, {cols, rows});
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) std::memcpy(&t.bytes[(j * rows + i) * es], &bytes[(i * cols + j) * es], es);
  return t;
}

Tensor Tensor::scalar_f32(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

// A non-negative integer of an external_data entry, or an Error naming the key.
static uint64_t external_number(const std::string& key, const std::string& value, const std::string& where) {
  uint64_t v = 0;
  if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos)
    throw Error(fmt::format("{}: external data '{}' is '{}', not a non-negative integer", where, key, value));
  for (char c : value) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v;
}

// The bytes of an initializer stored outside the model. As ONNX Runtime does, the location must be
// a relative path inside the model's folder: an absolute path or a '..' would let a model read
// any file as its weights.
static std::string read_external(const onnx::TensorProto& p, const std::string& where,
                                 const std::string& base_dir, size_t nbytes) {
  std::string location;
  uint64_t offset = 0, length = nbytes;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = external_number("offset", kv.value(), where);
    if (kv.key() == "length") length = external_number("length", kv.value(), where);
  }
  if (location.empty()) throw Error(fmt::format("{}: external data has no location", where));
  const std::filesystem::path rel(location);
  if (rel.is_absolute() || location.find('\0') != std::string::npos)
    throw Error(fmt::format("{}: external data location '{}' is absolute; it must be relative to the model's folder",
                            where, printable_name(location)));
  for (const auto& part : rel)
    if (part == "..")
      throw Error(fmt::format("{}: external data location '{}' leaves the model's folder ('..')", where,
                              printable_name(location)));
  if (length != nbytes)
    throw Error(fmt::format("{}: external data length {} does not match its shape's {} bytes", where, length, nbytes));
  const std::string path = (std::filesystem::path(base_dir.empty() ? "." : base_dir) / rel).string();
  return read_file_range(path, where + " (external data)", offset, length);
}

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& where, const std::string& base_dir) {
  Shape shape(p.dims().begin(), p.dims().end());
  double elements = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(fmt::format("{}: negative dimension in {}", where, shape_str(shape)));
    elements *= static_cast<double>(d);
  }
  const DType dtype = dtype_from_onnx(p.data_type(), where);
  if (elements * static_cast<double>(dtype_size(dtype)) >= kMaxTensorBytes)
    throw Error(fmt::format("{}: shape {} ({:.3g} elements) is 2 GiB or more, more than a tensor may hold", where,
                            shape_str(shape), elements));
  Tensor t(dtype, shape);
  const int64_t n = t.size();
  const size_t nbytes = t.bytes.size();
  auto expect = [&](int64_t got) {
    if (got != n)
      throw Error(fmt::format("{}: has {} values, shape {} needs {}", where, got, shape_str(shape), n));
  };
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string raw = read_external(p, where, base_dir, nbytes);
    expect(static_cast<int64_t>(raw.size() / dtype_size(t.dtype)));
    std::memcpy(t.bytes.data(), raw.data(), nbytes);
  } else if (p.has_raw_data()) {
    expect(static_cast<int64_t>(p.raw_data().size() / dtype_size(t.dtype)));
    std::memcpy(t.bytes.data(), p.raw_data().data(), nbytes);
  } else if (p.float_data_size()) {
    expect(p.float_data_size());
    for (int64_t i = 0; i < n; i++) t.set_f64(i, p.float_data(i));
  } else if (p.double_data_size()) {
    expect(p.double_data_size());
    for (int64_t i = 0; i < n; i++) t.set_f64(i, p.double_data(i));
  } else if (p.int64_data_size()) {
    expect(p.int64_data_size());
    for (int64_t i = 0; i < n; i++) {
      int64_t v = p.int64_data(i);
      if (t.dtype == DType::Int64) t.data<int64_t>()[i] = v; else t.set_f64(i, static_cast<double>(v));
    }
  } else if (p.int32_data_size()) {
    expect(p.int32_data_size());
    for (int64_t i = 0; i < n; i++) t.set_f64(i, p.int32_data(i));
  } else if (p.uint64_data_size()) {
    expect(p.uint64_data_size());
    for (int64_t i = 0; i < n; i++) {
      uint64_t v = p.uint64_data(i);
      if (t.dtype == DType::UInt64) t.data<uint64_t>()[i] = v; else t.set_f64(i, static_cast<double>(v));
    }
  } else {
    expect(0);
  }
  return t;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* p) {
  p->set_data_type(dtype_to_onnx(t.dtype));
  p->clear_dims();
  for (int64_t d : t.shape) p->add_dims(d);
  p->set_raw_data(std::string(t.bytes.begin(), t.bytes.end()));
}

Tensor read_tensor_pb(const std::string& path) {
  onnx::TensorProto p;
  if (!p.ParseFromString(read_regular_file(path, "a tensor file"))) throw Error(fmt::format("{}: not a serialized ONNX TensorProto", path));
  return tensor_from_proto(p, path, std::filesystem::path(path).parent_path().string());
}

void write_tensor_pb(const Tensor& t, const std::string& name, const std::string& path) {
  onnx::TensorProto p;
  tensor_to_proto(t, &p);
  p.set_name(name);
  std::ofstream f(path, std::ios::binary);
  if (!f || !p.SerializeToOstream(&f)) throw Error(fmt::format("{}: cannot write tensor file", path));
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Tensor random_tensor(DType t, const Shape& s, uint64_t seed, double lo, double hi) {
  Tensor r(t, s);
  uint64_t base = splitmix64(seed);
  for (int64_t i = 0; i < r.size(); i++) {
    double u = (splitmix64(base + static_cast<uint64_t>(i)) >> 11) * (1.0 / 9007199254740992.0);
    double v = lo + (hi - lo) * u;
    if (!dtype_is_float(t)) v = std::floor(v);
    if (t == DType::Bool) v = u < 0.5 ? 0 : 1;
    r.set_f64(i, v);
  }
  return r;
}

Comparison compare_tensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  Comparison c;
  if (got.shape != want.shape) {
    c.ok = false;
    c.message = fmt::format("shape {} != expected {}", shape_str(got.shape), shape_str(want.shape));
    return c;
  }
  int64_t bad = -1;
  for (int64_t i = 0; i < want.size(); i++) {
    double a = got.get_f64(i), b = want.get_f64(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(b) && a == b) continue;
    double err = std::fabs(a - b);
    if (std::isnan(err)) err = INFINITY;
    c.max_abs_error = std::max(c.max_abs_error, err);
    if (b != 0) c.max_rel_error = std::max(c.max_rel_error, err / std::fabs(b));
    if (std::isfinite(b)) c.max_abs_want = std::max(c.max_abs_want, std::fabs(b));
    if (!(err <= atol + rtol * std::fabs(b)) && bad < 0) bad = i;
  }
  if (bad >= 0) {
    c.ok = false;
    c.message = fmt::format("element {}: got {} expected {}", bad, got.get_f64(bad), want.get_f64(bad));
  }
  return c;
}

}  // namespace ts
