// The op makers of the random network generator: each draws legal parameters for one op over
// the shapes of a stage's tensors and adds the node, or returns false when none fits.
#include <fmt/format.h>

#include <numeric>

#include "dataset/random_network_builder.h"
#include "graph/error.h"

namespace ts::random_net {

namespace {

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

}  // namespace

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

}  // namespace ts::random_net
