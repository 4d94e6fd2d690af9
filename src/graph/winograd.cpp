#include "graph/winograd.h"

#include <algorithm>

#include "graph/passes.h"

namespace ts {

const float kWinogradBT[kWinogradAlpha][kWinogradAlpha] = {
    {4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
    {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
const float kWinogradG[kWinogradAlpha][3] = {
    {1.f / 4, 0, 0}, {-1.f / 6, -1.f / 6, -1.f / 6}, {-1.f / 6, 1.f / 6, -1.f / 6},
    {1.f / 24, 1.f / 12, 1.f / 6}, {1.f / 24, -1.f / 12, 1.f / 6}, {0, 0, 1}};
const float kWinogradAT[kWinogradTile][kWinogradAlpha] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

int64_t winograd_tiles(int64_t out, int64_t d) {
  const int64_t grid = (out + d - 1) / d;
  return d * ((grid + kWinogradTile - 1) / kWinogradTile);
}

bool is_winograd_conv(const Node& n) { return n.op == "Conv" && n.attr_int(kWinogradAttr, 0) == kWinogradTile; }

Tensor winograd_weights(const Tensor& w) {
  const bool temporal = w.shape.size() == 5;
  const int64_t cout = w.shape[0], cin = w.shape[1], taps = temporal ? w.shape[2] : 1;
  constexpr int A = kWinogradAlpha;
  Tensor u(DType::Float32, temporal ? Shape{cout, taps, A, A, cin} : Shape{cout, A, A, cin});
  const float* src = w.data<float>();
  float* dst = u.data<float>();
  for (int64_t co = 0; co < cout; co++)
    for (int64_t ci = 0; ci < cin; ci++)
      for (int64_t f = 0; f < taps; f++) {
        const float* g = src + ((co * cin + ci) * taps + f) * 9;
        double gg[A][3];  // G g: rows transformed
        for (int i = 0; i < A; i++)
          for (int kx = 0; kx < 3; kx++) {
            double s = 0;
            for (int ky = 0; ky < 3; ky++) s += double(kWinogradG[i][ky]) * g[ky * 3 + kx];
            gg[i][kx] = s;
          }
        for (int i = 0; i < A; i++)
          for (int j = 0; j < A; j++) {
            double s = 0;
            for (int kx = 0; kx < 3; kx++) s += gg[i][kx] * double(kWinogradG[j][kx]);
            dst[(((co * taps + f) * A + i) * A + j) * cin + ci] = static_cast<float>(s);
          }
      }
  return u;
}

namespace {

// Whether conv n qualifies on `threads` cores (see plan_winograd).
bool winograd_pays(const Graph& g, const Node& n, int threads) {
  if (n.op != "Conv" || n.inputs.size() < 2 || n.outputs.size() != 1 || !g.is_constant(n.inputs[1])) return false;
  if (n.attr_int("group", 1) != 1) return false;
  const std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  const TensorInfo &x = g.tensor(n.inputs[0]), &y = g.tensor(n.outputs[0]), &w = g.tensor(n.inputs[1]);
  const size_t rank = w.shape.size();  // 4: a 2-D conv, 5: a 3-D one (frames first)
  if (w.dtype != DType::Float32 || (rank != 4 && rank != 5) || w.shape[rank - 2] != 3 || w.shape[rank - 1] != 3) return false;
  if (x.shape.size() != rank || y.shape.size() != rank || x.layout.axis != 1 || y.layout.axis != 1) return false;
  if (y.shape[1] % y.layout.block != 0 || x.shape[1] % x.layout.block != 0) return false;
  const size_t dims = rank - 2;
  for (int64_t v : n.attr_ints("strides", std::vector<int64_t>(dims, 1)))
    if (v != 1) return false;
  std::vector<int64_t> dilations = n.attr_ints("dilations", std::vector<int64_t>(dims, 1));
  std::vector<int64_t> pads = n.attr_ints("pads", std::vector<int64_t>(2 * dims, 0));
  if (dilations.size() != dims || pads.size() != 2 * dims) return false;
  int64_t frames = 1;
  if (rank == 5) {
    // Temporal taps: unit dilations (not measured dilated), pads that leave each output frame a tap.
    const int64_t kd = w.shape[2];
    for (int64_t d : dilations)
      if (d != 1) return false;
    if (pads[0] < 0 || pads[3] < 0 || pads[0] >= kd || pads[3] >= kd) return false;
    frames = y.shape[2];
    dilations.erase(dilations.begin());
    pads = {pads[1], pads[2], pads[4], pads[5]};
  }
  if (dilations[0] < 1 || dilations[1] < 1) return false;
  for (size_t i = 0; i < 4; i++)
    if (pads[i] < 0 || pads[i] > 2 * dilations[i % 2]) return false;
  const int64_t oh = y.shape[rank - 2], ow = y.shape[rank - 1];
  const bool dilated = dilations[0] > 1 || dilations[1] > 1;
  const int64_t tiles = frames * winograd_tiles(oh, dilations[0]) * winograd_tiles(ow, dilations[1]);
  if (dilated) {
    if (!winograd_weights_once(winograd_weight_bytes(w.shape[0], w.shape[1]), tiles)) return false;
    const double tile_products = static_cast<double>(tiles) * kWinogradAlpha * kWinogradAlpha;  // per (Cin, Cout)
    const double direct_products = static_cast<double>(frames * oh * ow) * 9 * conv_tap_read_fraction(g, n);
    if (tile_products > kWinogradMostDilatedWork * direct_products) return false;
  }
  const double min_pixels = 8.0 * std::max(threads, 1) * kDirectConvFlopsPerCore / kWinogradWeightStreamBytesPerSecond;
  return tiles >= kWinogradMinTiles && double(frames * oh * ow) > min_pixels;
}

}  // namespace

int plan_winograd(Graph& g, int threads) {
  int marked = 0;
  for (Node& n : g.nodes) {
    if (is_winograd_conv(n) || !winograd_pays(g, n, threads)) continue;
    const std::string w = n.inputs[1], u = w + "::winograd4";
    if (!g.tensors.count(u)) {
      TensorInfo info{u, DType::Float32, {}, winograd_weights(*g.tensor(w).value), {}};
      info.shape = info.value->shape;
      info.layout = Layout{0, g.tensor(n.outputs[0]).layout.block};
      g.tensors[u] = std::move(info);
    }
    n.inputs[1] = u;
    n.attrs[kWinogradAttr] = Attribute{int64_t{kWinogradTile}};
    const Shape& ws = g.tensor(w).shape;
    n.attrs["kernel_shape"] = Attribute{ws.size() == 5 ? std::vector<int64_t>{ws[2], 3, 3} : std::vector<int64_t>{3, 3}};
    if (g.consumers(w).empty()) g.tensors.erase(w);
    marked++;
  }
  return marked;
}

}  // namespace ts
