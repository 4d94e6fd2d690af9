#include "dataset/random_network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>

#include "graph/error.h"

namespace ts {

namespace {

using Ints = std::vector<int64_t>;

// The network being built, with the generator every choice comes from.
struct Net {
  std::mt19937_64 rng;
  const RandomNetworkOptions& o;
  Graph g;
  int ops = 0;                          // operators added
  std::map<std::string, int> depth;     // tensor -> nodes on the longest path to it (inputs: 0)
  std::vector<std::string> used;        // activations the stage's nodes read
  std::vector<std::string> made;        // activations the stage's nodes wrote
  std::set<std::string> favoured;       // favoured ops present

  Net(uint64_t seed, const RandomNetworkOptions& opts) : rng(seed), o(opts) { g.opset = 17; }

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
  double unit() { return std::uniform_real_distribution<double>(0, 1)(rng); }
  bool chance(double p) { return unit() < p; }
  // Log-uniform in [lo, hi]: small sizes as likely per octave as large ones.
  int64_t log_uniform(int64_t lo, int64_t hi) {
    const double v = std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi + 1.0))(rng));
    return std::clamp<int64_t>(static_cast<int64_t>(v), lo, hi);
  }
  template <typename T>
  T pick(const std::vector<T>& v) { return v[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.size()) - 1))]; }

  // A tensor of `pool` as a node's input, most often one no node of the stage read yet: the
  // stage then consumes its inputs and fewer tensors are left over as outputs.
  std::string pick_tensor(const std::vector<std::string>& pool) {
    std::vector<std::string> unread;
    for (const auto& t : pool)
      if (std::find(used.begin(), used.end(), t) == used.end()) unread.push_back(t);
    return !unread.empty() && chance(0.85) ? pick(unread) : pick(pool);
  }
  const Shape& shape(const std::string& t) const { return g.tensors.at(t).shape; }
  int rank(const std::string& t) const { return static_cast<int>(shape(t).size()); }
  bool fits(const Shape& s) const { return num_elements(s) >= 1 && num_elements(s) <= o.max_tensor_elements; }

  std::string new_name(const char* prefix) { return fmt::format("{}{}", prefix, g.tensors.size()); }
  std::string activation(const Shape& s, DType t = DType::Float32) {
    const std::string name = new_name("t");
    g.tensors[name] = TensorInfo{name, t, s, std::nullopt, {}};
    return name;
  }
  std::string constant(Tensor value) {
    const std::string name = new_name("w");
    TensorInfo info{name, value.dtype, value.shape, std::nullopt, {}};
    info.value = std::move(value);
    g.tensors[name] = std::move(info);
    return name;
  }
  // Weights uniform in +-1/sqrt(fan_in): activations keep their scale through a chain of layers.
  std::string weight(const Shape& s, int64_t fan_in) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1)));
    return constant(random_tensor(DType::Float32, s, rng(), -bound, bound));
  }
  std::string values(const Shape& s, double lo, double hi) { return constant(random_tensor(DType::Float32, s, rng(), lo, hi)); }
  std::string ints(const Ints& v) { return constant(Tensor::from_i64(v, {static_cast<int64_t>(v.size())})); }

  // Adds a node reading `inputs` (activations first, then constants) and writing `outputs`.
  void node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
            std::map<std::string, Attribute> attrs = {}) {
    int d = 0;
    for (const auto& i : inputs)
      if (auto it = depth.find(i); it != depth.end()) {
        d = std::max(d, it->second);
        if (std::find(used.begin(), used.end(), i) == used.end()) used.push_back(i);
      }
    Node n;
    n.name = fmt::format("n{}_{}", g.nodes.size(), op);
    n.op = op;
    n.inputs = inputs;
    n.outputs = outputs;
    n.attrs = std::move(attrs);
    g.nodes.push_back(std::move(n));
    for (const auto& out : outputs) depth[out] = d + 1;
    ops++;
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") favoured.insert(op);
  }
  // A float activation output of a node: joins the stage's tensors.
  std::string output(const Shape& s) {
    const std::string t = activation(s);
    made.push_back(t);
    return t;
  }
};

Attribute attr(int64_t v) { return Attribute{v}; }
Attribute attr(double v) { return Attribute{v}; }
Attribute attr(const std::string& v) { return Attribute{v}; }
Attribute attr(const Ints& v) { return Attribute{v}; }

// The candidates of `pool` that satisfy `ok`.
std::vector<std::string> where(const Net& n, const std::vector<std::string>& pool, const std::function<bool(const Shape&)>& ok) {
  std::vector<std::string> out;
  for (const auto& t : pool)
    if (ok(n.shape(t))) out.push_back(t);
  return out;
}

// The shape a and b broadcast to (numpy rules), nullopt when they do not.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); k++) {
    const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1, db = k < b.size() ? b[b.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[out.size() - 1 - k] = std::max(da, db);
  }
  return out;
}

using Pool = std::vector<std::string>;

// A node's input among the tensors of `pool` that satisfy `ok` (Net::pick_tensor), "" for none.
std::string pick_where(Net& n, const Pool& pool, const std::function<bool(const Shape&)>& ok) {
  const Pool xs = where(n, pool, ok);
  return xs.empty() ? "" : n.pick_tensor(xs);
}

using OpMaker = std::function<bool(Net&, const Pool&)>;

// ---- unary elementwise ----

OpMaker elementwise(const std::string& op) {
  return [op](Net& n, const Pool& pool) {
    const std::string x = n.pick_tensor(pool);
    std::map<std::string, Attribute> a;
    if (op == "LeakyRelu" || op == "Elu" || op == "Celu") a["alpha"] = attr(0.05 + n.unit());
    if (op == "HardSigmoid") a["alpha"] = attr(0.1 + 0.2 * n.unit());
    std::vector<std::string> in = {x};
    if (op == "Clip") {
      const double lo = -n.unit(), hi = n.unit();
      in.push_back(n.constant(Tensor::scalar_f32(static_cast<float>(lo))));
      in.push_back(n.constant(Tensor::scalar_f32(static_cast<float>(hi))));
    }
    n.node(op, in, {n.output(n.shape(x))}, a);
    return true;
  };
}

// ---- convolutions and pooling ----

// One spatial dimension of a sliding window.
struct Window {
  int64_t k = 1, s = 1, d = 1, pb = 0, pe = 0;
  int64_t effective() const { return (k - 1) * d + 1; }
  int64_t out(int64_t in) const { return (in + pb + pe - effective()) / s + 1; }
};

// A window over an input extent `in`: kernel from `kernels`, stride, dilation (up to 36, even past
// the input where padding allows), padding "same" half the time, else random or none.
std::optional<Window> draw_window(Net& n, int64_t in, const Ints& kernels, bool dilate) {
  for (int tries = 0; tries < 8; tries++) {
    Window w;
    w.k = n.pick(kernels);
    w.s = n.pick(Ints{1, 1, 1, 2, 2, 3});
    if (dilate && n.chance(0.25)) w.d = n.chance(0.8) ? n.uniform(2, 4) : n.uniform(5, 36);
    const int64_t e = w.effective();
    const double mode = n.unit();
    if (mode < 0.5) w.pb = (e - 1) / 2, w.pe = e - 1 - w.pb;
    else if (mode < 0.8) w.pb = n.uniform(0, e - 1), w.pe = n.uniform(0, e - 1);
    if (in + w.pb + w.pe >= e) return w;
  }
  return std::nullopt;
}

Attribute window_attr(const std::vector<Window>& ws, int64_t Window::*f) {
  Ints v;
  for (const auto& w : ws) v.push_back(w.*f);
  return attr(v);
}
Attribute pads_attr(const std::vector<Window>& ws) {
  Ints v;
  for (const auto& w : ws) v.push_back(w.pb);
  for (const auto& w : ws) v.push_back(w.pe);
  return attr(v);
}

bool is_spatial(const Shape& s) { return s.size() == 3 || s.size() == 4; }

bool make_conv(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, is_spatial);
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  const int64_t C = s[1];
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= C; d++)
    if (C % d == 0) divisors.push_back(d);
  const double gmode = n.unit();
  const int64_t group = gmode < 0.6 ? 1 : gmode < 0.85 ? C : n.pick(divisors);
  int64_t M = group == C && C > 1 ? C * n.pick(Ints{1, 1, 2}) : group * n.log_uniform(1, std::max<int64_t>(1, 256 / group));
  std::vector<Window> ws;
  Shape out = {s[0], M};
  for (size_t k = 2; k < s.size(); k++) {
    auto w = draw_window(n, s[k], {1, 1, 3, 3, 3, 5, 7}, true);
    if (!w) return false;
    ws.push_back(*w);
    out.push_back(w->out(s[k]));
  }
  int64_t taps = C / group;
  for (const auto& w : ws) taps *= w.k;
  // Fewer output channels until the conv fits the budgets.
  auto too_big = [&] { return 2 * num_elements(out) * taps > n.o.max_node_flops || !n.fits(out) || M * taps > n.o.max_tensor_elements; };
  while (M > group && too_big()) {
    M = std::max(group, (M / 2) / group * group);
    out[1] = M;
  }
  if (too_big()) return false;
  Shape wshape = {M, C / group};
  for (const auto& w : ws) wshape.push_back(w.k);
  std::vector<std::string> in = {x, n.weight(wshape, taps)};
  if (n.chance(0.7)) in.push_back(n.values({M}, -0.1, 0.1));
  std::map<std::string, Attribute> a = {{"kernel_shape", window_attr(ws, &Window::k)},
                                        {"strides", window_attr(ws, &Window::s)},
                                        {"dilations", window_attr(ws, &Window::d)},
                                        {"pads", pads_attr(ws)}};
  if (group > 1) a["group"] = attr(group);
  n.node("Conv", in, {n.output(out)}, a);
  return true;
}

bool make_conv_transpose(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, is_spatial);
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  const int64_t C = s[1];
  const bool depthwise = C > 1 && n.chance(0.2);
  const int64_t group = depthwise ? C : 1;
  int64_t M = depthwise ? C : n.log_uniform(1, 128);
  std::vector<Window> ws;
  Ints output_padding;
  Shape out = {s[0], M};
  for (size_t k = 2; k < s.size(); k++) {
    Window w;
    w.k = n.pick(Ints{1, 2, 3, 3, 4, 5});
    w.s = n.pick(Ints{1, 2, 2, 3});
    if (n.chance(0.1)) w.d = 2;
    w.pb = n.uniform(0, w.effective() - 1);
    w.pe = n.uniform(0, w.effective() - 1);
    const int64_t op = n.chance(0.2) ? n.uniform(0, std::max(w.s, w.d) - 1) : 0;
    const int64_t extent = w.s * (s[k] - 1) + op + w.effective() - w.pb - w.pe;
    if (extent < 1) return false;
    ws.push_back(w);
    output_padding.push_back(op);
    out.push_back(extent);
  }
  int64_t taps = 1;
  for (const auto& w : ws) taps *= w.k;
  auto flops = [&] { return 2 * num_elements(s) * (M / group) * taps; };
  auto too_big = [&] { return flops() > n.o.max_node_flops || !n.fits(out) || C * (M / group) * taps > n.o.max_tensor_elements; };
  while (!depthwise && M > 1 && too_big()) out[1] = M = M / 2;
  if (too_big()) return false;
  Shape wshape = {C, M / group};
  for (const auto& w : ws) wshape.push_back(w.k);
  std::vector<std::string> in = {x, n.weight(wshape, C / group * taps)};
  if (n.chance(0.5)) in.push_back(n.values({M}, -0.1, 0.1));
  std::map<std::string, Attribute> a = {{"kernel_shape", window_attr(ws, &Window::k)},
                                        {"strides", window_attr(ws, &Window::s)},
                                        {"dilations", window_attr(ws, &Window::d)},
                                        {"pads", pads_attr(ws)}};
  if (std::any_of(output_padding.begin(), output_padding.end(), [](int64_t p) { return p > 0; }))
    a["output_padding"] = attr(output_padding);
  if (group > 1) a["group"] = attr(group);
  n.node("ConvTranspose", in, {n.output(out)}, a);
  return true;
}

OpMaker pool(const std::string& op) {
  return [op](Net& n, const Pool& p) {
    const std::string x = pick_where(n, p, is_spatial);
    if (x.empty()) return false;
    const Shape& s = n.shape(x);
    std::vector<Window> ws;
    Shape out = {s[0], s[1]};
    for (size_t k = 2; k < s.size(); k++) {
      Window w;
      w.k = std::min<int64_t>(s[k], n.pick(Ints{2, 2, 3, 3, 5}));
      w.s = n.pick(Ints{1, 2, 2, w.k});
      if (op == "MaxPool" && n.chance(0.15) && s[k] >= 2 * w.k) w.d = 2;
      // Padding smaller than the kernel, so no window lies in the padding alone.
      if (n.chance(0.5)) w.pb = n.uniform(0, w.k - 1), w.pe = n.uniform(0, w.k - 1);
      if (s[k] + w.pb + w.pe < w.effective()) return false;
      ws.push_back(w);
      out.push_back(w.out(s[k]));
    }
    std::map<std::string, Attribute> a = {{"kernel_shape", window_attr(ws, &Window::k)},
                                          {"strides", window_attr(ws, &Window::s)},
                                          {"pads", pads_attr(ws)}};
    if (op == "MaxPool") a["dilations"] = window_attr(ws, &Window::d);
    if (op == "AveragePool" && n.chance(0.3)) a["count_include_pad"] = attr(int64_t{1});
    n.node(op, {x}, {n.output(out)}, a);
    return true;
  };
}

OpMaker global_pool(const std::string& op) {
  return [op](Net& n, const Pool& p) {
    const std::string x = pick_where(n, p, is_spatial);
    if (x.empty()) return false;
    Shape out = n.shape(x);
    for (size_t k = 2; k < out.size(); k++) out[k] = 1;
    n.node(op, {x}, {n.output(out)});
    return true;
  };
}

// ---- matrix products and normalizations ----

bool make_gemm(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() == 2; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  const bool trans_a = n.chance(0.2), trans_b = n.chance(0.5);
  const int64_t M = trans_a ? s[1] : s[0], K = trans_a ? s[0] : s[1];
  int64_t N = n.log_uniform(1, 512);
  auto too_big = [&] { return 2 * M * K * N > n.o.max_node_flops || std::max(M, K) * N > n.o.max_tensor_elements; };
  while (N > 1 && too_big()) N /= 2;
  if (too_big()) return false;
  std::vector<std::string> in = {x, n.weight(trans_b ? Shape{N, K} : Shape{K, N}, K)};
  if (n.chance(0.7)) in.push_back(n.values(n.chance(0.8) ? Shape{N} : Shape{M, N}, -0.1, 0.1));
  std::map<std::string, Attribute> a;
  if (trans_a) a["transA"] = attr(int64_t{1});
  if (trans_b) a["transB"] = attr(int64_t{1});
  if (n.chance(0.3)) a["alpha"] = attr(0.5 + n.unit());
  if (in.size() == 3 && n.chance(0.3)) a["beta"] = attr(0.5 + n.unit());
  n.node("Gemm", in, {n.output({M, N})}, a);
  return true;
}

// MatMul by a weight matrix: [..., K] x [K, N].
bool make_matmul_weight(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() >= 2; });
  if (x.empty()) return false;
  Shape out = n.shape(x);
  const int64_t K = out.back(), rows = num_elements(out) / K;
  int64_t N = n.log_uniform(1, 512);
  auto too_big = [&] { return 2 * rows * K * N > n.o.max_node_flops || std::max(rows, K) * N > n.o.max_tensor_elements; };
  while (N > 1 && too_big()) N /= 2;
  out.back() = N;
  if (too_big()) return false;
  n.node("MatMul", {x, n.weight({K, N}, K)}, {n.output(out)});
  return true;
}

// MatMul of two activations: [..., M, K] x [..., K, N], batch dimensions broadcast.
bool make_matmul(Net& n, const Pool& pool) {
  const Pool as = where(n, pool, [](const Shape& s) { return s.size() >= 2; });
  if (as.empty()) return false;
  const std::string a = n.pick_tensor(as);
  const Shape& sa = n.shape(a);
  std::vector<std::pair<std::string, Shape>> bs;
  for (const auto& b : as) {
    const Shape& sb = n.shape(b);
    if (sb[sb.size() - 2] != sa.back()) continue;
    const auto batch = broadcast(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
    if (!batch) continue;
    Shape out = *batch;
    out.push_back(sa[sa.size() - 2]);
    out.push_back(sb.back());
    if (n.fits(out) && 2 * num_elements(out) * sa.back() <= n.o.max_node_flops) bs.emplace_back(b, out);
  }
  if (bs.empty()) return false;
  const auto& [b, out] = bs[static_cast<size_t>(n.uniform(0, static_cast<int64_t>(bs.size()) - 1))];
  n.node("MatMul", {a, b}, {n.output(out)});
  return true;
}

bool make_batch_norm(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() >= 2; });
  if (x.empty()) return false;
  const int64_t C = n.shape(x)[1];
  n.node("BatchNormalization",
         {x, n.values({C}, 0.5, 1.5), n.values({C}, -0.5, 0.5), n.values({C}, -0.5, 0.5), n.values({C}, 0.5, 2.0)},
         {n.output(n.shape(x))}, {{"epsilon", attr(1e-5)}});
  return true;
}

bool make_instance_norm(Net& n, const Pool& pool) {
  // Over at least 2 values per channel, or the variance is 0 and the output its bias alone.
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() >= 3 && num_elements(s) / (s[0] * s[1]) >= 2; });
  if (x.empty()) return false;
  const int64_t C = n.shape(x)[1];
  n.node("InstanceNormalization", {x, n.values({C}, 0.5, 1.5), n.values({C}, -0.5, 0.5)}, {n.output(n.shape(x))});
  return true;
}

bool make_layer_norm(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() >= 2 && s.back() >= 2; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  const int64_t axis = n.chance(0.7) ? static_cast<int64_t>(s.size()) - 1 : n.uniform(1, static_cast<int64_t>(s.size()) - 1);
  const Shape normalized(s.begin() + axis, s.end());
  n.node("LayerNormalization", {x, n.values(normalized, 0.5, 1.5), n.values(normalized, -0.5, 0.5)}, {n.output(s)},
         {{"axis", attr(axis)}});
  return true;
}

bool make_prelu(Net& n, const Pool& pool) {
  const std::string x = n.pick_tensor(pool);
  const Shape& s = n.shape(x);
  Shape slope = {1};
  if (s.size() >= 2 && n.chance(0.7)) {
    slope = Shape(s.size() - 1, 1);
    slope[0] = s[1];
  }
  n.node("PRelu", {x, n.values(slope, 0.0, 0.5)}, {n.output(s)});
  return true;
}

// ---- layout-changing ops ----

bool make_transpose(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() >= 2; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  Ints perm(s.size());
  std::iota(perm.begin(), perm.end(), 0);
  while (std::is_sorted(perm.begin(), perm.end())) std::shuffle(perm.begin(), perm.end(), n.rng);
  Shape out;
  for (int64_t p : perm) out.push_back(s[p]);
  n.node("Transpose", {x}, {n.output(out)}, {{"perm", attr(perm)}});
  return true;
}

bool make_reshape(Net& n, const Pool& pool) {
  const std::string x = n.pick_tensor(pool);
  int64_t rest = num_elements(n.shape(x));
  // The elements' prime factors dealt to 1-4 dimensions.
  Ints factors;
  for (int64_t f = 2; f * f <= rest; f++)
    while (rest % f == 0) factors.push_back(f), rest /= f;
  if (rest > 1) factors.push_back(rest);
  Shape out(static_cast<size_t>(n.uniform(1, n.o.max_rank)), 1);
  for (int64_t f : factors) out[static_cast<size_t>(n.uniform(0, static_cast<int64_t>(out.size()) - 1))] *= f;
  Ints spec = out;
  if (n.chance(0.3)) spec[static_cast<size_t>(n.uniform(0, static_cast<int64_t>(spec.size()) - 1))] = -1;
  n.node("Reshape", {x, n.ints(spec)}, {n.output(out)});
  return true;
}

bool make_flatten(Net& n, const Pool& pool) {
  const std::string x = n.pick_tensor(pool);
  const Shape& s = n.shape(x);
  const int64_t axis = n.uniform(0, static_cast<int64_t>(s.size()));
  const int64_t outer = num_elements(Shape(s.begin(), s.begin() + axis));
  n.node("Flatten", {x}, {n.output({outer, num_elements(s) / outer})}, {{"axis", attr(axis)}});
  return true;
}

bool make_squeeze(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() >= 2 && std::count(s.begin(), s.end(), 1) > 0; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  Ints axes;
  Shape out;
  for (size_t k = 0; k < s.size(); k++) {
    if (s[k] == 1 && (axes.empty() || n.chance(0.5)) && axes.size() + 1 < s.size()) axes.push_back(static_cast<int64_t>(k));
    else out.push_back(s[k]);
  }
  n.node("Squeeze", {x, n.ints(axes)}, {n.output(out)});
  return true;
}

bool make_unsqueeze(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [&](const Shape& s) { return static_cast<int>(s.size()) < n.o.max_rank; });
  if (x.empty()) return false;
  Shape out = n.shape(x);
  const int64_t axis = n.uniform(0, static_cast<int64_t>(out.size()));
  out.insert(out.begin() + axis, 1);
  n.node("Unsqueeze", {x, n.ints({axis})}, {n.output(out)});
  return true;
}

bool make_slice(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return *std::max_element(s.begin(), s.end()) >= 2; });
  if (x.empty()) return false;
  Shape out = n.shape(x);
  Ints starts, ends, axes, steps;
  for (size_t k = 0; k < out.size(); k++) {
    const int64_t d = out[k];
    if (d < 2 || !(axes.empty() || n.chance(0.3))) continue;
    const int64_t step = n.pick(Ints{1, 1, 1, 2, -1});
    int64_t start, end, len;
    if (step > 0) {
      start = n.uniform(0, d - 1);
      end = n.uniform(start + 1, d);
      len = (end - start + step - 1) / step;
    } else {
      start = n.uniform(1, d - 1);
      end = n.uniform(0, start - 1);
      len = start - end;
    }
    if (n.chance(0.3)) start -= d;  // a negative index counts from the end
    axes.push_back(n.chance(0.3) ? static_cast<int64_t>(k) - static_cast<int64_t>(out.size()) : static_cast<int64_t>(k));
    starts.push_back(start);
    ends.push_back(end);
    steps.push_back(step);
    out[k] = len;
  }
  if (axes.empty()) return false;
  n.node("Slice", {x, n.ints(starts), n.ints(ends), n.ints(axes), n.ints(steps)}, {n.output(out)});
  return true;
}

bool make_pad(Net& n, const Pool& pool) {
  const std::string x = n.pick_tensor(pool);
  const Shape& s = n.shape(x);
  const std::string mode = n.pick(std::vector<std::string>{"constant", "constant", "reflect", "edge"});
  Ints pads(2 * s.size(), 0);
  Shape out = s;
  // The innermost two dimensions (a feature map's), as exporters pad.
  for (size_t k = s.size() >= 2 ? s.size() - 2 : 0; k < s.size(); k++) {
    const int64_t most = mode == "reflect" ? std::min<int64_t>(3, s[k] - 1) : 3;
    if (most <= 0) continue;
    pads[k] = n.uniform(0, most);
    pads[k + s.size()] = n.uniform(0, most);
    out[k] += pads[k] + pads[k + s.size()];
  }
  if (!n.fits(out)) return false;
  std::vector<std::string> in = {x, n.ints(pads)};
  if (mode == "constant" && n.chance(0.5)) in.push_back(n.constant(Tensor::scalar_f32(static_cast<float>(n.unit() - 0.5))));
  n.node("Pad", in, {n.output(out)}, {{"mode", attr(mode)}});
  return true;
}

OpMaker softmax(const std::string& op) {
  return [op](Net& n, const Pool& pool) {
    const std::string x = n.pick_tensor(pool);
    const int64_t r = n.rank(x);
    n.node(op, {x}, {n.output(n.shape(x))}, {{"axis", attr(n.uniform(-r, r - 1))}});
    return true;
  };
}

OpMaker reduce(const std::string& op) {
  return [op](Net& n, const Pool& pool) {
    const std::string x = n.pick_tensor(pool);
    const Shape& s = n.shape(x);
    const bool keep = n.chance(0.5);
    Ints axes;
    Shape out;
    for (size_t k = 0; k < s.size(); k++) {
      const bool reduced = (axes.empty() && n.chance(1.0 / static_cast<double>(s.size() - k))) || n.chance(0.2);
      if (reduced) axes.push_back(static_cast<int64_t>(k));
      if (!reduced) out.push_back(s[k]);
      else if (keep) out.push_back(1);
    }
    if (axes.empty() || out.empty()) return false;  // every tensor keeps a rank of at least 1
    std::vector<std::string> in = {x};
    std::map<std::string, Attribute> a = {{"keepdims", attr(int64_t{keep})}};
    if (op == "ReduceSum") in.push_back(n.ints(axes));  // an input since opset 13
    else a["axes"] = attr(axes);
    n.node(op, in, {n.output(out)}, a);
    return true;
  };
}

bool make_split(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return *std::max_element(s.begin(), s.end()) >= 2; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  Ints axes;
  for (size_t k = 0; k < s.size(); k++)
    if (s[k] >= 2) axes.push_back(static_cast<int64_t>(k));
  const int64_t axis = n.pick(axes), d = s[axis];
  const int64_t parts = std::min<int64_t>(d, n.uniform(2, 3));
  Ints sizes(parts, 1);
  for (int64_t left = d - parts; left > 0; left--) sizes[n.uniform(0, parts - 1)]++;
  std::vector<std::string> outs;
  for (int64_t size : sizes) {
    Shape out = s;
    out[axis] = size;
    outs.push_back(n.output(out));
  }
  n.node("Split", {x, n.ints(sizes)}, outs, {{"axis", attr(axis)}});
  return true;
}

bool make_resize(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() == 4; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  const std::string mode = n.pick(std::vector<std::string>{"nearest", "nearest", "linear"});
  const double scale = n.pick(std::vector<double>{0.5, 2.0, 2.0, 3.0});
  Shape out = s;
  out[2] = static_cast<int64_t>(std::floor(static_cast<double>(s[2]) * scale));
  out[3] = static_cast<int64_t>(std::floor(static_cast<double>(s[3]) * scale));
  if (!n.fits(out)) return false;
  std::map<std::string, Attribute> a = {{"mode", attr(mode)}};
  a["coordinate_transformation_mode"] = attr(n.pick(std::vector<std::string>{"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}));
  if (mode == "nearest")
    a["nearest_mode"] = attr(n.pick(std::vector<std::string>{"round_prefer_floor", "floor", "ceil", "round_prefer_ceil"}));
  Tensor scales(DType::Float32, {4});
  for (int k = 0; k < 4; k++) scales.data<float>()[k] = k < 2 ? 1.0f : static_cast<float>(scale);
  if (n.chance(0.5)) n.node("Resize", {x, "", n.constant(scales)}, {n.output(out)}, a);
  else n.node("Resize", {x, "", "", n.ints(out)}, {n.output(out)}, a);
  return true;
}

bool make_depth_to_space(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() == 4 && s[1] % 4 == 0; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  const int64_t b = s[1] % 9 == 0 && n.chance(0.3) ? 3 : 2;
  if (s[1] % (b * b) != 0) return false;
  n.node("DepthToSpace", {x}, {n.output({s[0], s[1] / (b * b), s[2] * b, s[3] * b})},
         {{"blocksize", attr(b)}, {"mode", attr(n.pick(std::vector<std::string>{"DCR", "CRD"}))}});
  return true;
}

bool make_space_to_depth(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return s.size() == 4 && s[2] % 2 == 0 && s[3] % 2 == 0; });
  if (x.empty()) return false;
  const Shape& s = n.shape(x);
  n.node("SpaceToDepth", {x}, {n.output({s[0], s[1] * 4, s[2] / 2, s[3] / 2})}, {{"blocksize", attr(int64_t{2})}});
  return true;
}

bool make_gather(Net& n, const Pool& pool) {
  const std::string x = n.pick_tensor(pool);
  const Shape& s = n.shape(x);
  const int64_t axis = n.uniform(0, static_cast<int64_t>(s.size()) - 1);
  const int64_t count = n.uniform(1, std::max<int64_t>(1, std::min<int64_t>(8, s[axis])));
  Ints idx;
  for (int64_t k = 0; k < count; k++) idx.push_back(n.uniform(-s[axis], s[axis] - 1));
  Shape out = s;
  out[axis] = count;
  n.node("Gather", {x, n.ints(idx)}, {n.output(out)}, {{"axis", attr(axis)}});
  return true;
}

bool make_expand(Net& n, const Pool& pool) {
  const std::string x = pick_where(n, pool, [](const Shape& s) { return std::count(s.begin(), s.end(), 1) > 0; });
  if (x.empty()) return false;
  Shape out = n.shape(x);
  for (auto& d : out)
    if (d == 1 && n.chance(0.6)) d = n.uniform(2, 6);
  if (out == n.shape(x) || !n.fits(out)) return false;
  n.node("Expand", {x, n.ints(out)}, {n.output(out)});
  return true;
}

// ---- binary and n-ary ----

// `a` and up to `most` - 1 more tensors (repeats allowed) that broadcast with it.
std::vector<std::string> broadcast_group(Net& n, const Pool& pool, int most, Shape& out) {
  const std::string a = n.pick_tensor(pool);
  std::vector<std::string> group = {a};
  out = n.shape(a);
  const int want = static_cast<int>(n.uniform(2, most));
  for (int tries = 0; tries < 16 && static_cast<int>(group.size()) < want; tries++) {
    const std::string b = n.pick_tensor(pool);
    const auto both = broadcast(out, n.shape(b));
    if (both && n.fits(*both)) group.push_back(b), out = *both;
  }
  return group;
}

OpMaker broadcast_op(const std::string& op, int most) {
  return [op, most](Net& n, const Pool& pool) {
    Shape out;
    const std::vector<std::string> in = broadcast_group(n, pool, most, out);
    if (in.size() < 2) return false;
    n.node(op, in, {n.output(out)});
    return true;
  };
}

// Where(a > b, a, b): a comparison feeding a select.
bool make_where(Net& n, const Pool& pool) {
  Shape out;
  const std::vector<std::string> in = broadcast_group(n, pool, 2, out);
  if (in.size() < 2) return false;
  const std::string cond = n.activation(out, DType::Bool);
  n.node(n.chance(0.5) ? "Greater" : "Less", in, {cond});
  n.node("Where", {cond, in[0], in[1]}, {n.output(out)});
  return true;
}

bool make_concat(Net& n, const Pool& pool) {
  const std::string a = n.pick_tensor(pool);
  const Shape& s = n.shape(a);
  const int64_t axis = n.uniform(0, static_cast<int64_t>(s.size()) - 1);
  std::vector<std::string> in = {a};
  Shape out = s;
  const int want = static_cast<int>(n.uniform(2, 4));
  for (const auto& b : pool) {
    if (static_cast<int>(in.size()) >= want) break;
    const Shape& sb = n.shape(b);
    if (sb.size() != s.size()) continue;
    bool same = true;
    for (size_t k = 0; k < s.size(); k++) same = same && (static_cast<int64_t>(k) == axis || sb[k] == s[k]);
    Shape grown = out;
    grown[axis] += sb[axis];
    if (same && n.fits(grown)) in.push_back(b), out = grown;
  }
  if (in.size() < 2) {  // the tensor with itself
    Shape twice = out;
    twice[axis] *= 2;
    if (!n.fits(twice)) return false;
    in.push_back(a);
    out = twice;
  }
  n.node("Concat", in, {n.output(out)}, {{"axis", attr(axis - (n.chance(0.3) ? static_cast<int64_t>(s.size()) : 0))}});
  return true;
}

// ---- the op table ----

struct OpChoice {
  int type;       // activation inputs: 1 unary, 2 binary, 3 n-ary
  double weight;  // relative odds within its type
  OpMaker make;
};

const std::vector<OpChoice>& op_table() {
  static const std::vector<OpChoice> table = [] {
    std::vector<OpChoice> t;
    for (const char* op : {"Relu", "Relu", "Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Softplus", "Softsign", "Erf", "Sin",
                           "Cos", "Exp", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Clip"})
      t.push_back({1, 0.5, elementwise(op)});
    t.push_back({1, 6.0, make_conv});
    t.push_back({1, 1.5, make_conv_transpose});
    t.push_back({1, 1.2, pool("MaxPool")});
    t.push_back({1, 1.0, pool("AveragePool")});
    t.push_back({1, 0.6, global_pool("GlobalAveragePool")});
    t.push_back({1, 0.3, global_pool("GlobalMaxPool")});
    t.push_back({1, 2.0, make_gemm});
    t.push_back({1, 2.0, make_matmul_weight});
    t.push_back({1, 1.0, make_batch_norm});
    t.push_back({1, 0.4, make_instance_norm});
    t.push_back({1, 0.6, make_layer_norm});
    t.push_back({1, 0.4, make_prelu});
    t.push_back({1, 1.0, make_transpose});
    t.push_back({1, 1.0, make_reshape});
    t.push_back({1, 0.5, make_flatten});
    t.push_back({1, 0.4, make_squeeze});
    t.push_back({1, 0.4, make_unsqueeze});
    t.push_back({1, 0.8, make_slice});
    t.push_back({1, 0.8, make_pad});
    t.push_back({1, 0.5, softmax("Softmax")});
    t.push_back({1, 0.2, softmax("LogSoftmax")});
    for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceL2"}) t.push_back({1, 0.25, reduce(op)});
    t.push_back({1, 0.3, make_split});
    t.push_back({1, 0.8, make_resize});
    t.push_back({1, 0.3, make_depth_to_space});
    t.push_back({1, 0.3, make_space_to_depth});
    t.push_back({1, 0.4, make_gather});
    t.push_back({1, 0.3, make_expand});
    for (const char* op : {"Add", "Add", "Mul", "Sub", "Max", "Min"}) t.push_back({2, 1.0, broadcast_op(op, 2)});
    t.push_back({2, 2.0, make_matmul});
    t.push_back({2, 0.5, make_where});
    t.push_back({3, 2.0, make_concat});
    for (const char* op : {"Sum", "Mean", "Max"}) t.push_back({3, 0.5, broadcast_op(op, 4)});
    return t;
  }();
  return table;
}

// Draws a node's type, then its op, until one fits `pool`. A stage of several tensors draws
// binary and n-ary nodes more often (0.4 and 0.2, else 0.1 and 0.05): branches merge, as in the
// networks people write, and fewer tensors are left over as outputs.
// `merge`: binary and n-ary nodes only (closing a network). Returns whether a node was added.
bool add_random_node(Net& n, const Pool& pool, bool merge = false) {
  const auto& table = op_table();
  const double binary = merge ? 0.6 : pool.size() >= 2 ? 0.4 : 0.1, nary = merge ? 0.4 : pool.size() >= 2 ? 0.2 : 0.05;
  for (int tries = 0; tries < 24; tries++) {
    const double t = n.unit();
    const int type = t < nary ? 3 : t < nary + binary ? 2 : 1;
    std::vector<double> weights;
    for (const auto& c : table) weights.push_back(c.type == type ? c.weight : 0.0);
    std::discrete_distribution<size_t> which(weights.begin(), weights.end());
    if (table[which(n.rng)].make(n, pool)) return true;
  }
  return false;
}

// One input: rank 1..max_rank, dimensions log-uniform in 1..max_dim, halved (largest first) to
// fit the tensor budget. Feature maps (rank 3-4) keep a batch of 1-2.
Shape draw_input(Net& n) {
  const int rank = static_cast<int>(n.uniform(1, n.o.max_rank));
  Shape s;
  for (int k = 0; k < rank; k++) s.push_back(n.log_uniform(1, n.o.max_dim));
  if (rank >= 3) s[0] = n.uniform(1, 2);
  while (num_elements(s) > n.o.max_tensor_elements) {
    auto largest = std::max_element(s.begin() + (rank >= 3 ? 1 : 0), s.end());
    *largest = (*largest + 1) / 2;
  }
  return s;
}

// The next stage's tensors: what the stage's nodes wrote, and the tensors they did not read.
Pool next_stage(const Net& n, const Pool& stage) {
  Pool next = n.made;
  for (const auto& t : stage)
    if (std::find(n.used.begin(), n.used.end(), t) == n.used.end()) next.push_back(t);
  return next;
}

// One network (Algorithm 1's body), or nullopt when a filter rejects it.
std::optional<RandomNetwork> try_network(uint64_t seed, const RandomNetworkOptions& o) {
  Net n(seed, o);
  const int64_t target = n.uniform(o.min_ops, o.max_ops);
  Pool stage;
  const int inputs = static_cast<int>(n.uniform(1, o.max_inputs));
  for (int k = 0; k < inputs; k++) {
    const std::string name = fmt::format("in{}", k);
    n.g.tensors[name] = TensorInfo{name, DType::Float32, draw_input(n), std::nullopt, {}};
    n.g.inputs.push_back(name);
    n.depth[name] = 0;
    stage.push_back(name);
  }
  for (int stalls = 0; n.ops < target && stalls < 8;) {
    n.used.clear();
    n.made.clear();
    // Mostly no more nodes than the stage has tensors; one more (a branch) a fifth of the time.
    const int64_t size = static_cast<int64_t>(stage.size());
    const int64_t width = std::min<int64_t>(o.max_width, n.chance(0.2) ? size + 1 : n.uniform(1, size));
    for (int64_t k = 0; k < width && n.ops < target; k++) add_random_node(n, stage);
    stalls = n.made.empty() ? stalls + 1 : 0;
    stage = next_stage(n, stage);
  }
  // Closing: leftover branches merged by binary and n-ary nodes while their shapes allow.
  for (int k = 0; k < 8 && static_cast<int>(stage.size()) > o.output_thresh; k++) {
    n.used.clear();
    n.made.clear();
    if (add_random_node(n, stage, true)) stage = next_stage(n, stage);
  }
  // Inputs no node read are dropped; what the last stage holds are the outputs.
  std::vector<std::string> outputs;
  for (const auto& t : stage)
    if (n.depth.at(t) > 0) outputs.push_back(t);
  std::erase_if(n.g.inputs, [&](const std::string& in) {
    const bool read = std::any_of(n.g.nodes.begin(), n.g.nodes.end(), [&](const Node& node) {
      return std::find(node.inputs.begin(), node.inputs.end(), in) != node.inputs.end();
    });
    if (!read) n.g.tensors.erase(in);
    return !read;
  });
  if (outputs.empty() || static_cast<int>(outputs.size()) > o.max_outputs) return std::nullopt;
  int depth = 0;
  for (const auto& t : outputs) depth = std::max(depth, n.depth.at(t));
  // The paper's filters: one output, depth, favoured ops; each kept with small odds when missed.
  if (static_cast<int>(outputs.size()) > o.output_thresh && !n.chance(o.keep_many_outputs)) return std::nullopt;
  if (depth < std::min<int64_t>(o.depth_thresh, n.ops)) return std::nullopt;
  if (n.favoured.empty() && !n.chance(o.keep_unfavoured)) return std::nullopt;
  n.g.outputs = outputs;
  RandomNetwork r;
  r.graph = std::move(n.g);
  r.depth = depth;
  return r;
}

void check_options(const RandomNetworkOptions& o) {
  auto need = [](bool ok, const char* what) {
    if (!ok) throw Error(fmt::format("random networks: {}", what));
  };
  need(o.min_ops >= 1 && o.min_ops <= o.max_ops, "min_ops must be in 1..max_ops");
  need(o.max_inputs >= 1, "max_inputs must be at least 1");
  need(o.max_outputs >= 1, "max_outputs must be at least 1");
  need(o.max_rank >= 1 && o.max_rank <= 6, "max_rank must be in 1..6");
  need(o.max_dim >= 1, "max_dim must be at least 1");
  need(o.max_width >= 1, "max_width must be at least 1");
  need(o.max_tensor_elements >= 1, "max_tensor_elements must be at least 1");
  need(o.max_attempts >= 1, "max_attempts must be at least 1");
}

}  // namespace

uint64_t network_seed(uint64_t seed, uint64_t index) {
  // splitmix64 of both: nearby seeds and indices give unrelated networks.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

RandomNetwork random_network(uint64_t seed, const RandomNetworkOptions& options) {
  check_options(options);
  for (int attempt = 0; attempt < options.max_attempts; attempt++)
    if (auto net = try_network(network_seed(seed, static_cast<uint64_t>(attempt)), options)) {
      net->attempts = attempt + 1;
      net->graph.path = fmt::format("random network {}", seed);
      return std::move(*net);
    }
  throw Error(fmt::format("random network {}: none of {} networks drawn passed the filters", seed, options.max_attempts));
}

}  // namespace ts
