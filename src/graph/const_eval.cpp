#include "graph/const_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

namespace ts {

namespace {

constexpr int64_t kMaxFoldElements = int64_t{1} << 24;  // do not materialize huge constants

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; i--) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Flat index into `in` (shape `ins`, right-aligned broadcast) for output multi-index `idx`.
int64_t broadcast_offset(const std::vector<int64_t>& idx, const Shape& ins) {
  int64_t off = 0, stride = 1;
  const size_t r = ins.size(), R = idx.size();
  for (size_t k = 0; k < r; k++) {
    size_t d = r - 1 - k;
    int64_t i = ins[d] == 1 ? 0 : idx[R - 1 - k];
    off += i * stride;
    stride *= ins[d];
  }
  return off;
}

void unflatten(int64_t flat, const Shape& s, std::vector<int64_t>& idx) {
  idx.resize(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; d--) {
    idx[d] = s[d] ? flat % s[d] : 0;
    flat = s[d] ? flat / s[d] : 0;
  }
}

// out[i] = f(a[..], b[..], c[..]) with broadcasting; values travel as double except for
// int64 inputs, which keep exact integer arithmetic.
Tensor broadcast_map(const std::vector<const Tensor*>& ins, DType out_type, const Node& n,
                     const std::function<double(const std::vector<double>&)>& ff,
                     const std::function<int64_t(const std::vector<int64_t>&)>& fi) {
  Shape out_shape = ins[0]->shape;
  for (size_t i = 1; i < ins.size(); i++) out_shape = broadcast_shapes(out_shape, ins[i]->shape, n.describe());
  Tensor out(out_type, out_shape);
  bool use_int = fi && !dtype_is_float(ins.back()->dtype) && !dtype_is_float(ins[0]->dtype);
  std::vector<int64_t> idx;
  std::vector<double> vf(ins.size());
  std::vector<int64_t> vi(ins.size());
  for (int64_t f = 0; f < out.size(); f++) {
    unflatten(f, out_shape, idx);
    for (size_t i = 0; i < ins.size(); i++) {
      int64_t o = broadcast_offset(idx, ins[i]->shape);
      if (use_int) vi[i] = ins[i]->get_i64(o); else vf[i] = ins[i]->get_f64(o);
    }
    if (use_int) {
      int64_t v = fi(vi);
      if (out_type == DType::Int64) out.data<int64_t>()[f] = v; else out.set_f64(f, static_cast<double>(v));
    } else {
      out.set_f64(f, ff(vf));
    }
  }
  return out;
}

// Gathers elements of `in` into a tensor of shape `out_shape`: src(idx) gives the flat source.
Tensor gather_elements(const Tensor& in, const Shape& out_shape,
                       const std::function<int64_t(const std::vector<int64_t>&)>& src) {
  Tensor out(in.dtype, out_shape);
  const size_t es = dtype_size(in.dtype);
  std::vector<int64_t> idx;
  for (int64_t f = 0; f < out.size(); f++) {
    unflatten(f, out_shape, idx);
    std::memcpy(out.bytes.data() + f * es, in.bytes.data() + src(idx) * es, es);
  }
  return out;
}

Tensor reshaped(const Tensor& t, Shape s) {
  Tensor r = t;
  r.shape = std::move(s);
  return r;
}

Shape reshape_target(const Node& n, const Shape& in, const std::vector<int64_t>& spec, bool allowzero) {
  Shape out(spec.begin(), spec.end());
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); i++) {
    if (out[i] == 0 && !allowzero) {
      if (i >= in.size()) throw Error(fmt::format("{}: shape entry {} is 0 but input has rank {}", n.describe(), i, in.size()));
      out[i] = in[i];
    }
    if (out[i] == -1) {
      if (infer >= 0) throw Error(fmt::format("{}: more than one -1 in target shape", n.describe()));
      infer = static_cast<int64_t>(i);
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) out[infer] = known ? num_elements(in) / known : 0;
  if (num_elements(out) != num_elements(in))
    throw Error(fmt::format("{}: cannot reshape {} to {}", n.describe(), shape_str(in), shape_str(out)));
  return out;
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& where) {
  Shape r(std::max(a.size(), b.size()));
  for (size_t k = 0; k < r.size(); k++) {
    int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
    int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1)
      throw Error(fmt::format("{}: shapes {} and {} do not broadcast", where, shape_str(a), shape_str(b)));
    r[r.size() - 1 - k] = da == 1 ? db : da;
  }
  return r;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& n) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw Error(fmt::format("{}: axis {} is out of range for rank {}", n.describe(), axis, rank));
  return axis < 0 ? axis + rank : axis;
}

SliceWindow slice_window(const Node& n, const Shape& in, const std::vector<int64_t>& starts,
                         const std::vector<int64_t>& ends, std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); k++) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error(fmt::format("{}: starts, ends, axes and steps differ in length", n.describe()));
  SliceWindow w{std::vector<int64_t>(r, 0), std::vector<int64_t>(r, 1), in};
  for (size_t k = 0; k < axes.size(); k++) {
    const int64_t a = normalize_axis(axes[k], r, n), dim = in[a], s = steps[k];
    if (s == 0) throw Error(fmt::format("{}: slice step 0", n.describe()));
    int64_t b = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    // The spec's clamping: a negative step walks from dim-1 down to (exclusive) -1.
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    const int64_t len = s > 0 ? (e - b + s - 1) / s : (b - e - s - 1) / -s;
    w.begin[a] = b;
    w.step[a] = s;
    w.shape[a] = std::max<int64_t>(len, 0);
  }
  return w;
}

std::optional<std::vector<Tensor>> eval_constant_node(const Node& n, int opset,
                                                      const std::vector<const Tensor*>& in,
                                                      const std::vector<std::optional<Shape>>& shapes) {
  const std::string& op = n.op;
  auto have = [&](size_t i) { return i < in.size() && in[i] != nullptr; };
  auto absent = [&](size_t i) { return i >= n.inputs.size() || n.inputs[i].empty(); };
  auto all_const = [&]() {
    for (size_t i = 0; i < n.inputs.size(); i++)
      if (!absent(i) && !have(i)) return false;
    return true;
  };
  using R = std::optional<std::vector<Tensor>>;

  if (op == "Constant") {
    if (const Tensor* t = n.attr_tensor("value")) return R{{*t}};
    if (n.has("value_float")) return R{{Tensor::scalar_f32(static_cast<float>(n.attr_float("value_float", 0)))}};
    if (n.has("value_int")) return R{{Tensor::from_i64({n.attr_int("value_int", 0)}, {})}};
    if (n.has("value_ints")) { auto v = n.attr_ints("value_ints"); return R{{Tensor::from_i64(v, {int64_t(v.size())})}}; }
    if (n.has("value_floats")) {
      auto v = n.attr_floats("value_floats");
      Tensor t(DType::Float32, {int64_t(v.size())});
      for (size_t i = 0; i < v.size(); i++) t.set_f64(i, v[i]);
      return R{{t}};
    }
    throw Unsupported(fmt::format("{}: only tensor, float and int values are supported", n.describe()));
  }
  if (op == "Shape" || op == "Size") {
    if (shapes.empty() || !shapes[0]) return std::nullopt;
    const Shape& s = *shapes[0];
    if (op == "Size") return R{{Tensor::from_i64({num_elements(s)}, {})}};
    int64_t r = static_cast<int64_t>(s.size());
    int64_t start = n.attr_int("start", 0), end = n.attr_int("end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, start, r);
    std::vector<int64_t> v(s.begin() + start, s.begin() + end);
    return R{{Tensor::from_i64(v, {int64_t(v.size())})}};
  }
  if (!all_const()) return std::nullopt;

  if (op == "Identity") return R{{*in[0]}};
  if (op == "ConstantOfShape") {
    Shape s = in[0]->to_i64_vector();
    if (num_elements(s) > kMaxFoldElements) return std::nullopt;
    const Tensor* v = n.attr_tensor("value");
    Tensor out(v ? v->dtype : DType::Float32, s);
    double fill = v ? v->get_f64(0) : 0.0;
    for (int64_t i = 0; i < out.size(); i++) out.set_f64(i, fill);
    return R{{out}};
  }
  if (op == "Cast") return R{{in[0]->cast(dtype_from_onnx(static_cast<int>(n.attr_int("to", 1)), n.describe()))}};
  if (op == "Reshape") {
    return R{{reshaped(*in[0], reshape_target(n, in[0]->shape, in[1]->to_i64_vector(), n.attr_int("allowzero", 0)))}};
  }
  if (op == "Flatten") {
    int64_t r = in[0]->shape.size();
    int64_t axis = normalize_axis(n.attr_int("axis", 1), r + 1, n);
    int64_t a = 1;
    for (int64_t i = 0; i < axis; i++) a *= in[0]->shape[i];
    return R{{reshaped(*in[0], {a, in[0]->size() / std::max<int64_t>(a, 1)})}};
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> axes = opset >= 13 ? (have(1) ? in[1]->to_i64_vector() : std::vector<int64_t>{})
                                            : n.attr_ints("axes");
    Shape s = in[0]->shape;
    if (op == "Unsqueeze") {
      int64_t r = s.size() + axes.size();
      for (auto& a : axes) a = normalize_axis(a, r, n);
      std::sort(axes.begin(), axes.end());
      for (int64_t a : axes) s.insert(s.begin() + a, 1);
    } else {
      Shape o;
      for (auto& a : axes) a = normalize_axis(a, s.size(), n);
      for (size_t d = 0; d < s.size(); d++) {
        bool drop = axes.empty() ? s[d] == 1 : std::count(axes.begin(), axes.end(), int64_t(d)) > 0;
        if (!drop) o.push_back(s[d]);
      }
      s = o;
    }
    return R{{reshaped(*in[0], s)}};
  }
  if (op == "Concat") {
    int64_t r = in[0]->shape.size();
    int64_t axis = normalize_axis(n.attr_int("axis", 0), r, n);
    Shape out_shape = in[0]->shape;
    out_shape[axis] = 0;
    for (auto* t : in) out_shape[axis] += t->shape[axis];
    Tensor out(in[0]->dtype, out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; d++) outer *= out_shape[d];
    for (int64_t d = axis + 1; d < r; d++) inner *= out_shape[d];
    const size_t es = dtype_size(out.dtype);
    size_t pos = 0;
    for (int64_t o = 0; o < outer; o++)
      for (auto* t : in) {
        size_t chunk = t->shape[axis] * inner * es;
        std::memcpy(out.bytes.data() + pos, t->bytes.data() + o * chunk, chunk);
        pos += chunk;
      }
    return R{{out}};
  }
  if (op == "Gather") {
    const Tensor& data = *in[0];
    int64_t r = data.shape.size();
    int64_t axis = normalize_axis(n.attr_int("axis", 0), r, n);
    std::vector<int64_t> ind = in[1]->to_i64_vector();
    for (auto& i : ind) {
      if (i < 0) i += data.shape[axis];
      if (i < 0 || i >= data.shape[axis]) throw Error(fmt::format("{}: index out of range", n.describe()));
    }
    Shape out_shape(data.shape.begin(), data.shape.begin() + axis);
    out_shape.insert(out_shape.end(), in[1]->shape.begin(), in[1]->shape.end());
    out_shape.insert(out_shape.end(), data.shape.begin() + axis + 1, data.shape.end());
    auto st = strides_of(data.shape);
    int64_t ir = in[1]->shape.size();
    auto ist = strides_of(in[1]->shape);
    return R{{gather_elements(data, out_shape, [&](const std::vector<int64_t>& idx) {
      int64_t off = 0, k = 0;
      for (int64_t d = 0; d < axis; d++) off += idx[d] * st[d];
      for (int64_t d = 0; d < ir; d++) k += idx[axis + d] * ist[d];
      off += ind[k] * st[axis];
      for (int64_t d = axis + 1; d < r; d++) off += idx[d + ir - 1] * st[d];
      return off;
    })}};
  }
  if (op == "Slice") {
    const Tensor& data = *in[0];
    int64_t r = data.shape.size();
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset < 10) {
      starts = n.attr_ints("starts"); ends = n.attr_ints("ends"); axes = n.attr_ints("axes");
    } else {
      starts = in[1]->to_i64_vector(); ends = in[2]->to_i64_vector();
      if (have(3)) axes = in[3]->to_i64_vector();
      if (have(4)) steps = in[4]->to_i64_vector();
    }
    const SliceWindow w = slice_window(n, data.shape, starts, ends, axes, steps);
    const std::vector<int64_t>& lo = w.begin;
    const std::vector<int64_t>& step = w.step;
    const Shape& out_shape = w.shape;
    auto st = strides_of(data.shape);
    return R{{gather_elements(data, out_shape, [&](const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; d++) off += (lo[d] + idx[d] * step[d]) * st[d];
      return off;
    })}};
  }
  if (op == "Transpose") {
    const Tensor& data = *in[0];
    int64_t r = data.shape.size();
    std::vector<int64_t> perm = n.attr_ints("perm");
    if (perm.empty()) for (int64_t d = r - 1; d >= 0; d--) perm.push_back(d);
    if (data.size() > kMaxFoldElements) return std::nullopt;
    Shape out_shape(r);
    for (int64_t d = 0; d < r; d++) out_shape[d] = data.shape[perm[d]];
    auto st = strides_of(data.shape);
    return R{{gather_elements(data, out_shape, [&](const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (int64_t d = 0; d < r; d++) off += idx[d] * st[perm[d]];
      return off;
    })}};
  }
  if (op == "Expand") {
    Shape target = in[1]->to_i64_vector();
    Shape out_shape = broadcast_shapes(in[0]->shape, target, n.describe());
    if (num_elements(out_shape) > kMaxFoldElements) return std::nullopt;
    return R{{gather_elements(*in[0], out_shape, [&](const std::vector<int64_t>& idx) {
      return broadcast_offset(idx, in[0]->shape);
    })}};
  }
  if (op == "Range") {
    double start = in[0]->get_f64(0), limit = in[1]->get_f64(0), delta = in[2]->get_f64(0);
    int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
    Tensor out(in[0]->dtype, {count});
    for (int64_t i = 0; i < count; i++) out.set_f64(i, start + i * delta);
    return R{{out}};
  }

  if (op == "ScatterND") {
    // Exporters build masks by slice assignment (`mask[:, a:b] = v`) on constants.
    const Tensor &data = *in[0], &ind = *in[1], &upd = *in[2];
    const std::string red = n.attr_string("reduction", "none");
    if ((red != "none" && red != "add" && red != "mul") || data.size() > kMaxFoldElements || ind.shape.empty())
      return std::nullopt;
    const int64_t k = ind.shape.back(), r = static_cast<int64_t>(data.shape.size());
    if (k < 1 || k > r) throw Error(fmt::format("{}: index tuples of {} entries for data rank {}", n.describe(), k, r));
    const int64_t inner = num_elements(Shape(data.shape.begin() + k, data.shape.end()));
    const auto st = strides_of(data.shape);
    Tensor out = data;
    for (int64_t row = 0; row < ind.size() / k; row++) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; j++) {
        int64_t v = ind.get_i64(row * k + j);
        if (v < 0) v += data.shape[j];
        if (v < 0 || v >= data.shape[j]) throw Error(fmt::format("{}: index out of range", n.describe()));
        off += v * st[j];
      }
      for (int64_t e = 0; e < inner; e++) {
        const double u = upd.get_f64(row * inner + e), d = out.get_f64(off + e);
        out.set_f64(off + e, red == "add" ? d + u : red == "mul" ? d * u : u);
      }
    }
    return R{{out}};
  }

  using VF = std::vector<double>;
  using VI = std::vector<int64_t>;
  DType t0 = in.empty() ? DType::Float32 : in[0]->dtype;
  auto map = [&](DType out_type, std::function<double(const VF&)> ff, std::function<int64_t(const VI&)> fi) {
    return R{{broadcast_map(in, out_type, n, ff, fi)}};
  };
  if (op == "Add") return map(t0, [](const VF& v) { return v[0] + v[1]; }, [](const VI& v) { return v[0] + v[1]; });
  if (op == "Sub") return map(t0, [](const VF& v) { return v[0] - v[1]; }, [](const VI& v) { return v[0] - v[1]; });
  if (op == "Mul") return map(t0, [](const VF& v) { return v[0] * v[1]; }, [](const VI& v) { return v[0] * v[1]; });
  if (op == "Div")
    return map(t0, [](const VF& v) { return v[0] / v[1]; },
               [&](const VI& v) {
                 if (v[1] == 0) throw Error(fmt::format("{}: integer division by zero", n.describe()));
                 return v[0] / v[1];
               });
  if (op == "Mod") {
    // fmod = 0 (integers only): the remainder takes the divisor's sign, as Python's %; fmod = 1: C's.
    const bool c_style = n.attr_int("fmod", 0) != 0;
    return map(t0, [c_style](const VF& v) { const double r = std::fmod(v[0], v[1]); return c_style || r == 0 || (r < 0) == (v[1] < 0) ? r : r + v[1]; },
               [&, c_style](const VI& v) {
                 if (v[1] == 0) throw Error(fmt::format("{}: integer modulo by zero", n.describe()));
                 const int64_t r = v[0] % v[1];
                 return c_style || r == 0 || (r < 0) == (v[1] < 0) ? r : r + v[1];
               });
  }
  if (op == "Equal") return map(DType::Bool, [](const VF& v) { return double(v[0] == v[1]); }, [](const VI& v) { return int64_t(v[0] == v[1]); });
  if (op == "Less") return map(DType::Bool, [](const VF& v) { return double(v[0] < v[1]); }, [](const VI& v) { return int64_t(v[0] < v[1]); });
  if (op == "Greater") return map(DType::Bool, [](const VF& v) { return double(v[0] > v[1]); }, [](const VI& v) { return int64_t(v[0] > v[1]); });
  if ((op == "Min" || op == "Max") && in.size() == 2) {
    bool mx = op == "Max";
    return map(t0, [mx](const VF& v) { return mx ? std::max(v[0], v[1]) : std::min(v[0], v[1]); },
               [mx](const VI& v) { return mx ? std::max(v[0], v[1]) : std::min(v[0], v[1]); });
  }
  if (op == "Where") {
    std::vector<const Tensor*> xs = {in[0], in[1], in[2]};
    return R{{broadcast_map(xs, in[1]->dtype, n, [](const VF& v) { return v[0] != 0 ? v[1] : v[2]; }, nullptr)}};
  }
  if (op == "Neg") return map(t0, [](const VF& v) { return -v[0]; }, [](const VI& v) { return -v[0]; });
  if (op == "Abs") return map(t0, [](const VF& v) { return std::fabs(v[0]); }, [](const VI& v) { return v[0] < 0 ? -v[0] : v[0]; });
  if (op == "Not") return map(DType::Bool, [](const VF& v) { return double(v[0] == 0); }, [](const VI& v) { return int64_t(v[0] == 0); });
  if (op == "Floor") return map(t0, [](const VF& v) { return std::floor(v[0]); }, nullptr);
  if (op == "Ceil") return map(t0, [](const VF& v) { return std::ceil(v[0]); }, nullptr);
  if (op == "Sqrt") return map(t0, [](const VF& v) { return std::sqrt(v[0]); }, nullptr);
  return std::nullopt;
}

}  // namespace ts
