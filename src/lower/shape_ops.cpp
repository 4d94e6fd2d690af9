// Data-movement ops: Reshape/Flatten/Squeeze/Unsqueeze, Transpose, Concat, Split, Slice,
// Expand, Tile, Pad, Gather, GatherElements, GatherND, ScatterND, ScatterElements. Output shapes come from shape inference
// (c.out_info), so most ops only need the index mapping from output to input element; every
// input index is kept inside the input's shape.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "graph/const_eval.h"
#include "lower/lower.h"

namespace ts {

using Halide::Expr;
using Idx = std::vector<Expr>;

namespace {

std::vector<LTensor> one(LTensor t) { return {std::move(t)}; }

// Input index of output element `out` when both shapes hold the same elements in row-major
// order (Reshape, Flatten, Squeeze, Unsqueeze). Unit dims are dropped, and the remaining dims
// are cut into the smallest groups whose sizes agree on both sides; only a group that really
// merges or splits dims pays for flat-index math, so [N,C,H,W] -> [N,C,H*W] divides once.
Idx reshape_index(const Idx& out, const Shape& os, const Shape& is) {
  Idx in(is.size(), Expr(0));
  if (num_elements(os) == 0) return in;  // nothing is read
  std::vector<size_t> od, id;
  for (size_t d = 0; d < os.size(); d++)
    if (os[d] != 1) od.push_back(d);
  for (size_t d = 0; d < is.size(); d++)
    if (is[d] != 1) id.push_back(d);
  size_t a = 0, b = 0;
  while (a < od.size() && b < id.size()) {
    const size_t a0 = a++, b0 = b++;
    int64_t po = os[od[a0]], pi = is[id[b0]];
    while (po != pi) {
      if (po < pi) po *= os[od[a++]];
      else pi *= is[id[b++]];
    }
    if (a - a0 == 1 && b - b0 == 1) {
      in[id[b0]] = out[od[a0]];
      continue;
    }
    Expr flat = 0;
    for (size_t k = a0; k < a; k++) flat = flat * static_cast<int>(os[od[k]]) + out[od[k]];
    for (size_t k = b; k-- > b0;) {
      const int dim = static_cast<int>(is[id[k]]);
      in[id[k]] = k == b0 ? flat : flat % dim;
      flat = flat / dim;
    }
  }
  return in;
}

LTensor reshape_like_output(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const Shape& os = c.out_info().shape;
  if (num_elements(os) != num_elements(x.shape))
    c.fail(fmt::format("cannot reshape {} to {}", shape_str(x.shape), shape_str(os)));
  return c.output([&](const Idx& i) { return x.at(reshape_index(i, os, x.shape)); });
}

std::vector<LTensor> lower_transpose(const LowerContext& c) {
  const LTensor& x = c.in(0);
  std::vector<int64_t> perm = c.node.attr_ints("perm");
  if (perm.empty())
    for (int d = x.rank() - 1; d >= 0; d--) perm.push_back(d);
  if (static_cast<int>(perm.size()) != x.rank()) c.fail(fmt::format("perm has {} entries for rank {}", perm.size(), x.rank()));
  std::vector<int> source_of(x.rank(), -1);  // output axis that indexes each input axis
  for (int d = 0; d < x.rank(); d++) {
    int& s = source_of[normalize_axis(perm[d], x.rank(), c.node)];
    if (s >= 0) c.fail("perm repeats an axis");
    s = d;
  }
  return one(c.output([&](const Idx& i) {
    Idx src(x.rank());
    for (int d = 0; d < x.rank(); d++) src[d] = i[source_of[d]];
    return x.at(src);
  }));
}

std::vector<LTensor> lower_concat(const LowerContext& c) {
  const int r = c.in(0).rank();
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", 0), r, c.node));
  // (input, offset along axis) of every non-empty input
  std::vector<std::pair<const LTensor*, int>> parts;
  int offset = 0;
  for (size_t k = 0; k < c.inputs.size(); k++) {
    const LTensor& t = c.in(k);
    if (t.shape[axis] > 0) parts.emplace_back(&t, offset);
    offset += static_cast<int>(t.shape[axis]);
  }
  if (parts.empty()) return one(c.output([](const Idx&) { return Expr(0); }));  // empty output
  // Blocked along the axis with every offset a whole block: parts are picked and clamped by
  // block index, so a vector of lanes reads one part with no division.
  const Layout out_layout = c.out_info().layout;
  bool by_block = out_layout.axis == axis;
  for (const auto& [t, off] : parts) by_block = by_block && t->layout == out_layout && off % out_layout.block == 0;
  const int b = static_cast<int>(out_layout.block);
  return one(c.output([&](const Idx& i) {
    auto read = [&](const std::pair<const LTensor*, int>& p) {
      Idx src = i;
      const int extent = static_cast<int>(p.first->shape[axis]);
      if (by_block) {
        auto [q, lane] = split_blocked(i[axis] - p.second, b);
        return p.first->at_split(src, Halide::clamp(q, 0, extent / b - 1), lane);
      }
      src[axis] = Halide::clamp(i[axis] - p.second, 0, extent - 1);
      return p.first->at(src);
    };
    const Expr pos = by_block ? split_blocked(i[axis], b).first : i[axis];
    // Last part is the fallback; walk backwards so the select chain tests offsets in order.
    Expr v = read(parts.back());
    for (size_t k = parts.size() - 1; k-- > 0;)
      v = Halide::select(pos < parts[k + 1].second / (by_block ? b : 1), read(parts[k]), v);
    return v;
  }));
}

// Split sizes are the output extents along the axis, which shape inference already derived
// from the 'split' attribute/input or an equal split.
std::vector<LTensor> lower_split(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", 0), x.rank(), c.node));
  std::vector<LTensor> outs;
  int64_t offset = 0;
  for (size_t k = 0; k < c.node.outputs.size(); k++) {
    if (c.node.outputs[k].empty()) c.unsupported(fmt::format("unnamed output {}", k));
    const int64_t len = c.out_info(k).shape.at(axis);
    const int off = static_cast<int>(offset);
    outs.push_back(c.output([&](const Idx& i) {
      Idx src = i;
      src[axis] = i[axis] + off;
      return x.at(src);
    }, k));
    offset += len;
  }
  if (offset != x.shape[axis]) c.fail(fmt::format("split sizes sum to {}, axis has {}", offset, x.shape[axis]));
  return outs;
}

std::vector<LTensor> lower_slice(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int r = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.node.attr_ints("starts");
    ends = c.node.attr_ints("ends");
    axes = c.node.attr_ints("axes");
  } else {
    starts = c.require_constant(1, "starts").to_i64_vector();
    ends = c.require_constant(2, "ends").to_i64_vector();
    if (c.has_input(3)) axes = c.require_constant(3, "axes").to_i64_vector();
    if (c.has_input(4)) steps = c.require_constant(4, "steps").to_i64_vector();
  }
  const SliceWindow w = slice_window(c.node, x.shape, starts, ends, axes, steps);
  const std::vector<int64_t>& lo = w.begin;
  const std::vector<int64_t>& step = w.step;
  const Shape& shape = w.shape;
  if (shape != c.out_info().shape) c.fail(fmt::format("slice gives {}, shape inference says {}", shape_str(shape), shape_str(c.out_info().shape)));
  return one(c.output([&](const Idx& i) {
    Idx src(r);
    for (int d = 0; d < r; d++) {
      src[d] = static_cast<int>(lo[d]) + i[d] * static_cast<int>(step[d]);
      // A reversed axis is read through a clamp: a guarded vector tail of a reversed load at a
      // constant index (ramp(12, -1, 16) over lanes 12 .. -3, the negative ones masked) stops
      // Halide 14's code generator (an internal assert on the ramp's lowest lane).
      if (step[d] < 0) src[d] = Halide::clamp(src[d], 0, static_cast<int>(x.shape[d] - 1));
    }
    return x.at(src);
  }));
}

std::vector<LTensor> lower_tile(const LowerContext& c) {
  const LTensor& x = c.in(0);
  return one(c.output([&](const Idx& i) {
    Idx src(x.rank());
    for (int d = 0; d < x.rank(); d++) src[d] = x.shape[d] == 1 ? Expr(0) : i[d] % static_cast<int>(x.shape[d]);
    return x.at(src);
  }));
}

std::vector<LTensor> lower_pad(const LowerContext& c) {
  const LTensor& x = c.in(0);
  const int r = x.rank();
  const std::string mode = c.node.attr_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") c.unsupported(fmt::format("mode '{}'", mode));
  std::vector<int64_t> pads = c.opset() < 11 ? c.node.attr_ints("pads") : c.require_constant(1, "pads").to_i64_vector();
  std::vector<int64_t> axes = c.opset() >= 18 && c.has_input(3) ? c.require_constant(3, "axes").to_i64_vector() : std::vector<int64_t>{};
  if (axes.empty())
    for (int d = 0; d < r; d++) axes.push_back(d);
  if (pads.size() != 2 * axes.size()) c.fail(fmt::format("{} pads for {} axes", pads.size(), axes.size()));
  std::vector<int64_t> begin(r, 0);
  for (size_t k = 0; k < axes.size(); k++) begin[normalize_axis(axes[k], r, c.node)] = pads[k];

  Expr fill;
  if (mode == "constant") {
    if (c.opset() < 11) fill = Expr(c.node.attr_float("value", 0.0));
    else if (c.has_input(2)) fill = c.in(2).at(Idx(c.in(2).rank(), Expr(0)));
    else fill = Expr(0);
  }
  return one(c.output([&](const Idx& i) {
    Idx src(r);
    for (int d = 0; d < r; d++) {
      const int n = static_cast<int>(x.shape[d]);
      Expr j = i[d] - static_cast<int>(begin[d]);
      // Reflect mirrors once about the edge elements; the clamp keeps over-wide pads in bounds.
      if (mode == "reflect") j = Halide::select(j < 0, -j, j >= n, 2 * (n - 1) - j, j);
      src[d] = mode == "constant" ? j : Halide::clamp(j, 0, n - 1);
    }
    return mode == "constant" ? x.at_or(src, fill) : x.at(src);
  }));
}

// A data index read from an index tensor: negative values count from the end. An index outside
// [-dim, dim) is an error, as in ONNX Runtime: constant indices are checked here, others by a
// Halide requirement that makes the call fail with this message (the clamp only keeps the
// speculative load in bounds).
Expr normalize_index(const LowerContext& c, Expr i, int64_t dim) {
  i = Halide::cast<int>(i);
  const int n = static_cast<int>(dim);
  const Expr wrapped = Halide::select(i < 0, i + n, i);
  return Halide::require(wrapped >= 0 && wrapped < n, Halide::clamp(wrapped, 0, n - 1),
                         c.node.describe() + ": index", i, "is out of range for an axis of size", n);
}

// Constant indices are checked at compile time, with the node named.
void check_constant_indices(const LowerContext& c, int slot, const std::vector<int64_t>& dims) {
  const Tensor* k = c.constant(slot);
  if (!k) return;
  const int64_t last = k->shape.empty() ? 1 : k->shape.back();
  for (int64_t e = 0; e < k->size(); e++) {
    const int64_t v = k->get_i64(e), dim = dims.size() == 1 ? dims[0] : dims[e % last];
    if (v < -dim || v >= dim) c.fail(fmt::format("index {} is out of range for an axis of size {}", v, dim));
  }
}

std::vector<LTensor> lower_gather(const LowerContext& c) {
  const LTensor &x = c.in(0), &ind = c.in(1);
  const int r = x.rank(), q = ind.rank();
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", 0), r, c.node));
  const Tensor* k = c.constant(1);
  check_constant_indices(c, 1, {x.shape[axis]});
  return one(c.output([&](const Idx& i) {
    // A constant scalar index (x[:, 3]) becomes a literal instead of a load.
    Expr at = k && k->size() == 1 ? Expr(static_cast<int>(k->get_i64(0)))
                                  : ind.at(Idx(i.begin() + axis, i.begin() + axis + q));
    Idx src(i.begin(), i.begin() + axis);
    src.push_back(normalize_index(c, at, x.shape[axis]));
    src.insert(src.end(), i.begin() + axis + q, i.end());
    return x.at(src);
  }));
}

std::vector<LTensor> lower_gather_elements(const LowerContext& c) {
  const LTensor &x = c.in(0), &ind = c.in(1);
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", 0), x.rank(), c.node));
  if (ind.rank() != x.rank()) c.fail("indices and data differ in rank");
  check_constant_indices(c, 1, {x.shape[axis]});
  return one(c.output([&](const Idx& i) {
    Idx src = i;
    src[axis] = normalize_index(c, ind.at(i), x.shape[axis]);
    return x.at(src);
  }));
}

// GatherND: output[b..., i..., rest...] = data[b..., indices[b..., i..., :], rest...], where the
// first batch_dims axes are shared by data and indices and the index tuples have k entries.
std::vector<LTensor> lower_gather_nd(const LowerContext& c) {
  const LTensor &x = c.in(0), &ind = c.in(1);
  const int r = x.rank(), q = ind.rank(), b = static_cast<int>(c.node.attr_int("batch_dims", 0));
  if (q < 1 || b < 0 || b >= std::min(r, q)) c.fail(fmt::format("batch_dims {} for data rank {}, indices rank {}", b, r, q));
  const int k = static_cast<int>(ind.shape[q - 1]);
  if (k < 1 || b + k > r) c.fail(fmt::format("index tuples of {} entries for data rank {}", k, r));
  check_constant_indices(c, 1, std::vector<int64_t>(x.shape.begin() + b, x.shape.begin() + b + k));
  return one(c.output([&](const Idx& i) {
    Idx src(i.begin(), i.begin() + b), at(i.begin(), i.begin() + q - 1);
    at.push_back(Expr(0));
    for (int j = 0; j < k; j++) {
      at.back() = j;
      src.push_back(normalize_index(c, ind.at(at), x.shape[b + j]));
    }
    src.insert(src.end(), i.begin() + q - 1, i.end());  // the trailing data axes
    return x.at(src);
  }));
}


// How a scatter folds an update into the element it lands on (the `reduction` attribute).
using Combine = std::function<Expr(Expr, Expr)>;
Combine scatter_combine(const LowerContext& c) {
  const std::string red = c.node.attr_string("reduction", "none");
  if (red == "none") return [](Expr, Expr u) { return u; };
  if (red == "add") return [](Expr d, Expr u) { return d + u; };
  if (red == "mul") return [](Expr d, Expr u) { return d * u; };
  if (red == "max") return [](Expr d, Expr u) { return Halide::max(d, u); };
  if (red == "min") return [](Expr d, Expr u) { return Halide::min(d, u); };
  c.unsupported(fmt::format("reduction '{}'", red));
}

// Which update lands on each data element, when the indices are constant: `owner` holds, per
// position of `owner_shape`, the update that writes it (its `slot` coordinate, or -1 for none).
// Two updates on one element leave no single owner for a reducing scatter: nullopt, and the
// caller scatters by an update stage instead. (With reduction none the last one wins, as in ONNX
// Runtime.)
std::optional<Tensor> scatter_owner_table(const LowerContext& c, const Shape& owner_shape, int64_t updates,
                                          const std::function<int64_t(int64_t, std::vector<int64_t>&)>& target_of) {
  Tensor owner(DType::Int32, owner_shape);
  const int64_t n = owner.size();
  for (int64_t e = 0; e < n; e++) owner.set_f64(e, -1);
  const bool reduces = c.node.attr_string("reduction", "none") != "none";
  std::vector<int64_t> target;
  for (int64_t u = 0; u < updates; u++) {
    const int64_t value = target_of(u, target);
    int64_t flat = 0;
    for (size_t d = 0; d < owner_shape.size(); d++) flat = flat * owner_shape[d] + target[d];
    if (reduces && owner.get_i64(flat) >= 0) return std::nullopt;
    owner.set_f64(flat, static_cast<double>(value));
  }
  return owner;
}

// A constant index read from `k` at flat position e, negative values counted from the end.
int64_t constant_index(const LowerContext& c, const Tensor& k, int64_t e, int64_t dim) {
  int64_t v = k.get_i64(e);
  if (v < -dim || v >= dim) c.fail(fmt::format("index {} is out of range for an axis of size {}", v, dim));
  return v < 0 ? v + dim : v;
}

// ScatterND: output = data, then output[indices[j..., :], rest...] = updates[j..., rest...] (or
// combined with it). Constant indices (`x[:, idx] = y` in an exporter) become a pure stage that
// reads, per element, its owner from a table built here; others an update stage over the index
// rows, the trailing data axes left as pure (vectorizable) loops.
std::vector<LTensor> lower_scatter_nd(const LowerContext& c) {
  const LTensor &x = c.in(0), &ind = c.in(1), &upd = c.in(2);
  const int r = x.rank(), q = ind.rank();
  const int k = q >= 1 ? static_cast<int>(ind.shape[q - 1]) : 0;
  if (q < 1 || k < 1 || k > r) c.fail(fmt::format("index tuples of {} entries for data rank {}", k, r));
  const Combine combine = scatter_combine(c);
  const Shape rows(ind.shape.begin(), ind.shape.end() - 1);
  const Shape owner_shape(x.shape.begin(), x.shape.begin() + k);
  std::optional<Tensor> owner;
  if (const Tensor* kt = c.constant(1))
    owner = scatter_owner_table(c, owner_shape, num_elements(rows), [&](int64_t row, std::vector<int64_t>& t) {
      t.resize(k);
      for (int j = 0; j < k; j++) t[j] = constant_index(c, *kt, row * k + j, x.shape[j]);
      return row;
    });
  if (owner) {
    const LTensor table = constant_tensor(c.name("_owner"), *owner);
    return one(c.output([&](const Idx& i) {
      const Expr own = table.at(Idx(i.begin(), i.begin() + k));
      Expr row = Halide::clamp(own, 0, static_cast<int>(std::max<int64_t>(num_elements(rows), 1)) - 1);
      Idx src(rows.size());
      for (int d = static_cast<int>(rows.size()) - 1; d >= 0; d--) {
        src[d] = row % static_cast<int>(rows[d]);
        row = row / static_cast<int>(rows[d]);
      }
      src.insert(src.end(), i.begin() + k, i.end());
      const Expr v = x.at(i);
      return Halide::select(own >= 0, combine(v, upd.at(src)), v);
    }));
  }
  LTensor out = define_tensor(c.name(), x.shape, x.dtype, [&](const Idx& i) { return x.at(i); });
  const std::vector<Halide::Var> args = out.func.args();
  Halide::Region extents;
  for (int64_t e : rows) extents.emplace_back(0, static_cast<int>(e));
  if (extents.empty()) extents.emplace_back(0, 1);
  Halide::RDom rd(extents, c.name("_r"));
  Idx row, at;
  for (size_t d = 0; d < rows.size(); d++) row.push_back(rd[static_cast<int>(d)]);
  Idx target(r), src = row;
  at = row;
  at.push_back(Expr(0));
  for (int j = 0; j < k; j++) {
    at.back() = j;
    target[j] = normalize_index(c, ind.at(at), x.shape[j]);
  }
  for (int d = k; d < r; d++) src.push_back(target[d] = args[r - 1 - d]);
  const std::vector<Expr> lhs(target.rbegin(), target.rend());
  out.func(lhs) = combine(out.func(lhs), upd.at(src));
  return one(out);
}

// ScatterElements (and its older name Scatter): output = data, then, for every update position
// j, output[j with axis replaced by indices[j]] = updates[j] (or combined). As ScatterND: an
// owner table for constant indices (holding the update's coordinate on the axis), else an
// update stage over every update.
std::vector<LTensor> lower_scatter_elements(const LowerContext& c) {
  const LTensor &x = c.in(0), &ind = c.in(1), &upd = c.in(2);
  const int r = x.rank();
  const int axis = static_cast<int>(normalize_axis(c.node.attr_int("axis", 0), r, c.node));
  if (ind.rank() != r || upd.shape != ind.shape) c.fail("indices and updates must have data's rank and one shape");
  const Combine combine = scatter_combine(c);
  std::optional<Tensor> owner;
  if (const Tensor* kt = c.constant(1))
    owner = scatter_owner_table(c, x.shape, num_elements(ind.shape), [&](int64_t e, std::vector<int64_t>& t) {
      t.resize(r);
      int64_t rest = e;
      for (int d = r - 1; d >= 0; d--) {
        t[d] = rest % ind.shape[d];
        rest /= ind.shape[d];
      }
      const int64_t own = t[axis];
      t[axis] = constant_index(c, *kt, e, x.shape[axis]);
      return own;
    });
  if (owner) {
    const LTensor table = constant_tensor(c.name("_owner"), *owner);
    return one(c.output([&](const Idx& i) {
      const Expr own = table.at(i);
      Idx src(r);
      for (int d = 0; d < r; d++)
        src[d] = Halide::clamp(d == axis ? own : i[d], 0, static_cast<int>(upd.shape[d]) - 1);
      const Expr v = x.at(i);
      return Halide::select(own >= 0, combine(v, upd.at(src)), v);
    }));
  }
  LTensor out = define_tensor(c.name(), x.shape, x.dtype, [&](const Idx& i) { return x.at(i); });
  Halide::Region extents;
  for (int64_t e : ind.shape) extents.emplace_back(0, static_cast<int>(e));
  Halide::RDom rd(extents, c.name("_r"));
  Idx j(r);
  for (int d = 0; d < r; d++) j[d] = rd[d];
  Idx target = j;
  target[axis] = normalize_index(c, ind.at(j), x.shape[axis]);
  const std::vector<Expr> lhs(target.rbegin(), target.rend());
  out.func(lhs) = combine(out.func(lhs), upd.at(j));
  return one(out);
}
}  // namespace

void register_shape_ops(std::map<std::string, LowerFn>& r) {
  // The target shape, axes and flatten axis all decided the inferred output shape, which is
  // all the element mapping needs.
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    r[op] = [](const LowerContext& c) { return one(reshape_like_output(c)); };
  r["Transpose"] = lower_transpose;
  r["Concat"] = lower_concat;
  r["Split"] = lower_split;
  r["Slice"] = lower_slice;
  r["Expand"] = [](const LowerContext& c) {
    const LTensor& x = c.in(0);
    return one(c.output([&](const Idx& i) { return x.at_broadcast(i); }));
  };
  r["Tile"] = lower_tile;
  r["Pad"] = lower_pad;
  r["Gather"] = lower_gather;
  r["GatherElements"] = lower_gather_elements;
  r["GatherND"] = lower_gather_nd;
  r["ScatterND"] = lower_scatter_nd;
  r["ScatterElements"] = lower_scatter_elements;
  r["Scatter"] = lower_scatter_elements;
}

}  // namespace ts
