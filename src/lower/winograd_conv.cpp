// Winograd F(4x4, 3x3) convolution over channel-blocked tensors (graph/winograd.h: which convs,
// the transforms, the weight transformed at load). With tx, ty the 4x4 output tile, cb / cob the
// input / output channel blocks and il / ol their lanes, the stages are:
//   <node>_wino_t   the 6x6 input tile with its rows transformed (BT d):
//                   t(il, tx, j, i, ty, cb, n) = sum_k BT[i][k] x(n, cb, 4ty + k - pad_top, 4tx + j - pad_left, il)
//   <node>_wino_v   its columns too (BT d B): v(il, tx, jj, i, ty, cb, n) = sum_j BT[jj][j] t(.., j, i, ..)
//   <node>_wino_mr  the 36 matmuls over input channels, one register tile each:
//                   mr(ol, tx, cob, jj, i, ty, n) = sum_ci v(ci, tx, jj, i, ty, n) U[cob, ol][i][jj][ci]
//   <node>_wino_m   mr stored: m(ol, tx, jj, i, ty, cob, n) (a tile row's products, read by the output)
//   <node>_wino_y   the output transform's first half (AT M): y(ol, a, i, tx, ty, cob, n)
//   <node>          the output: sum_i AT[b][i] y(.., x mod 4, i, x / 4, y / 4, ..) + bias
// Transforms are written out with their constant coefficients (zeros dropped), selected per
// tile position with mux: once the schedule unrolls the position, each is a few adds.
// A dilated conv (dilation d on an axis, FCN's and DeepLab's d = 2, 4) is d interleaved plain 3x3
// convs, one per grid of outputs r, r + d, r + 2d, ... reading the input grid r - pad, r - pad +
// d, ...: tile t along that axis is tile t / d of grid t % d (grid_index below), so the stages
// are the same, and so is their schedule; the output's unrolled positions then select their
// transform rows at run time (a mux over the 4 rows), a few percent of the products' work.
// A 3-D conv (input [n, c, d, h, w], weight U [Cout, KD, 6, 6, Cin]) is KD 2-D Winograd convs
// summed per output frame: the stages' last argument b runs over (batch, frame) pairs, the
// input's frames in t and v, the output's in mr, m and y, and the products reduce over the KD
// temporal taps too, skipping those that read a padded frame (mr(.., b) += v(.., frame b + kd -
// pad) U[kd]): each frame's input transform serves KD output frames, and the register tile
// accumulates KD x Cin products.
// schedule/winograd_schedule.h schedules these stages; any other schedule computes the same.
#include <fmt/format.h>

#include "graph/winograd.h"
#include "lower/window.h"

namespace ts {

using Halide::Expr;
using Halide::Func;
using Halide::Var;

namespace {

// sum_k coef[k] * value(k), zero coefficients left out, +-1 without a multiply.
Expr linear_combination(const float* coef, int n, const std::function<Expr(int)>& value) {
  Expr e;
  for (int k = 0; k < n; k++) {
    if (coef[k] == 0) continue;
    Expr t = coef[k] == 1 ? value(k) : coef[k] == -1 ? -value(k) : value(k) * coef[k];
    e = e.defined() ? e + t : t;
  }
  return e;
}

// mux over `rows` of a transform matrix: entry r is linear_combination(matrix row r).
template <int Rows, int Cols>
Expr transform_row(Expr row, const float (&m)[Rows][Cols], const std::function<Expr(int)>& value) {
  std::vector<Expr> rows;
  for (int r = 0; r < Rows; r++) rows.push_back(linear_combination(m[r], Cols, value));
  return Halide::mux(row, rows);
}

// Along an axis of dilation d: the index on the whole axis of position k of tile t, and the tile
// and position of index e.
Expr grid_index(Expr t, Expr k, int d) { return ((t / d) * kWinogradTile + k) * d + t % d; }
Expr tile_of(Expr e, int d) { return (e / d / kWinogradTile) * d + e % d; }
Expr position_of(Expr e, int d) { return (e / d) % kWinogradTile; }

void set_estimates(Func f, const std::vector<int64_t>& extents_innermost_first) {
  Shape onnx_order(extents_innermost_first.rbegin(), extents_innermost_first.rend());
  set_shape_estimates(f, onnx_order);
}

}  // namespace

std::vector<LTensor> lower_winograd_conv(const LowerContext& c) {
  const LTensor &x = c.in(0), &u = c.in(1);
  const TensorInfo& out = c.out_info();
  constexpr int A = kWinogradAlpha, T = kWinogradTile;
  const bool temporal = x.rank() == 5;  // a 3-D conv: frames at axis 2
  if ((x.rank() != 4 && !temporal) || out.shape.size() != x.shape.size() || x.layout.axis != 1 || out.layout.axis != 1)
    c.fail("a Winograd conv needs a 4-D or 5-D input and output blocked by channel");
  const int64_t n = x.shape[0], cin = x.shape[1], frames = temporal ? x.shape[2] : 1;
  const int64_t h = x.shape[x.rank() - 2], w = x.shape[x.rank() - 1];
  const int64_t cout = out.shape[1], bi = x.layout.block, bo = out.layout.block;
  const int64_t kd = temporal && u.rank() == 5 ? u.shape[1] : 1, oframes = temporal ? out.shape[2] : 1;
  const Shape weight_shape = temporal ? Shape{cout, kd, A, A, cin} : Shape{cout, A, A, cin};
  if (u.shape != weight_shape || out.shape[0] != n)
    c.fail(fmt::format("Winograd weight {} does not fit input {} and output {}", shape_str(u.shape),
                       shape_str(x.shape), shape_str(out.shape)));
  if (c.has_input(2) && c.in(2).shape != Shape{cout})
    c.fail(fmt::format("bias shape {} is not [{}]", shape_str(c.in(2).shape), cout));
  auto pads = attr_dims(c, "pads", temporal ? 6 : 4, 0, 0);
  auto dilations = attr_dims(c, "dilations", temporal ? 3 : 2, 1, 1);
  int64_t pad_front = 0;
  if (temporal) {
    if (dilations[0] != 1 || oframes != frames + pads[0] + pads[3] - (kd - 1))
      c.fail(fmt::format("output {} is not a {}-frame conv of input {} with pads [{}] and unit frame dilation",
                         shape_str(out.shape), kd, shape_str(x.shape), fmt::join(pads, ",")));
    pad_front = pads[0];
    pads = {pads[1], pads[2], pads[4], pads[5]};
    dilations.erase(dilations.begin());
  }
  const int pad_top = static_cast<int>(pads[0]), pad_left = static_cast<int>(pads[1]);
  const int dy = static_cast<int>(dilations[0]), dx = static_cast<int>(dilations[1]);
  const int64_t oh = out.shape[out.shape.size() - 2], ow = out.shape[out.shape.size() - 1];
  if (oh != h + pads[0] + pads[2] - 2 * dy || ow != w + pads[1] + pads[3] - 2 * dx)
    c.fail(fmt::format("output {} is not a 3x3 conv of input {} with pads [{}] and dilations [{}]",
                       shape_str(out.shape), shape_str(x.shape), fmt::join(pads, ","), fmt::join(dilations, ",")));
  const int64_t tw = winograd_tiles(ow, dx), th = winograd_tiles(oh, dy), cbs = cin / bi, cobs = cout / bo;

  Var il("il"), ol("ol"), tx("tx"), ty("ty"), i("i"), j("j"), jj("jj"), a("a"), cb("cb"), cob("cob"), b("b");
  // The input, zero outside (clamped reads, so bounds stay exact). b: the batch and (3-D) frame.
  auto input = [&](Expr row, Expr col) {
    Expr inside = row >= 0 && row < static_cast<int>(h) && col >= 0 && col < static_cast<int>(w);
    Expr r = Halide::clamp(row, 0, static_cast<int>(h - 1)), q = Halide::clamp(col, 0, static_cast<int>(w - 1));
    const int f = static_cast<int>(frames);
    Expr v = temporal ? x.at_split({b / f, Expr(0), b % f, r, q}, cb, il) : x.at_split({b, Expr(0), r, q}, cb, il);
    return Halide::select(inside, v, Halide::cast(x.type(), 0));
  };
  Func t(c.name("_wino_t")), v(c.name("_wino_v")), mr(c.name("_wino_mr")), m(c.name("_wino_m")), y(c.name("_wino_y"));
  t(il, tx, j, i, ty, cb, b) = transform_row(i, kWinogradBT, [&](int k) {
    return input(grid_index(ty, k, dy) - pad_top, grid_index(tx, j, dx) - pad_left);
  });
  set_estimates(t, {bi, tw, A, A, th, cbs, n * frames});
  v(il, tx, jj, i, ty, cb, b) = transform_row(jj, kWinogradBT, [&](int k) { return t(il, tx, k, i, ty, cb, b); });
  set_estimates(v, {bi, tw, A, A, th, cbs, n * frames});

  // Over input channels (lane, block) and, for a 3-D conv, the temporal taps that read a frame.
  Halide::RDom r = temporal ? Halide::RDom({{0, static_cast<int>(bi)}, {0, static_cast<int>(cbs)}, {0, static_cast<int>(kd)}},
                                           c.name("_wino_r"))
                            : Halide::RDom({{0, static_cast<int>(bi)}, {0, static_cast<int>(cbs)}}, c.name("_wino_r"));
  Expr ci = r[1] * static_cast<int>(bi) + r[0];
  Expr vb = b;  // the input frame (with its batch) that tap r[2] of output frame b reads
  if (temporal) {
    const int of = static_cast<int>(oframes);
    Expr frame = b % of + r[2] - static_cast<int>(pad_front);
    r.where(frame >= 0 && frame < static_cast<int>(frames));
    // Clamped too, so bounds inference (which may not read the predicate) keeps v in the input.
    vb = b / of * static_cast<int>(frames) + Halide::clamp(frame, 0, static_cast<int>(frames - 1));
  }
  std::vector<Expr> weight_idx = temporal ? std::vector<Expr>{Expr(0), r[2], i, jj, ci} : std::vector<Expr>{Expr(0), i, jj, ci};
  Expr weight;
  if (u.layout.blocked()) {
    weight = u.at_split(weight_idx, cob, ol);
  } else {
    weight_idx[0] = cob * static_cast<int>(bo) + ol;
    weight = u.at(weight_idx);
  }
  mr(ol, tx, cob, jj, i, ty, b) = Halide::cast(x.type(), 0);
  mr(ol, tx, cob, jj, i, ty, b) += v(r[0], tx, jj, i, ty, r[1], vb) * weight;
  set_estimates(mr, {bo, tw, cobs, A, A, th, n * oframes});
  m(ol, tx, jj, i, ty, cob, b) = mr(ol, tx, cob, jj, i, ty, b);
  set_estimates(m, {bo, tw, A, A, th, cobs, n * oframes});
  y(ol, a, i, tx, ty, cob, b) = transform_row(a, kWinogradAT, [&](int k) { return m(ol, tx, k, i, ty, cob, b); });
  set_estimates(y, {bo, T, A, tw, th, cobs, n * oframes});

  return {c.output([&](const std::vector<Expr>& o) {
    auto [q, lane] = split_blocked(o[1], bo);
    Expr row = o[o.size() - 2], col = o[o.size() - 1];
    Expr batch = temporal ? o[0] * static_cast<int>(oframes) + o[2] : o[0];
    Expr value = transform_row(position_of(row, dy), kWinogradAT, [&](int k) {
      return y(lane, position_of(col, dx), k, tile_of(col, dx), tile_of(row, dy), q, batch);
    });
    return c.has_input(2) ? value + c.in(2).at({o[1]}) : value;
  })};
}

}  // namespace ts
