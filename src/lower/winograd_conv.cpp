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
  if (x.rank() != 4 || x.layout.axis != 1 || out.layout.axis != 1)
    c.fail("a Winograd conv needs a 4-D input and output blocked by channel");
  const int64_t n = x.shape[0], cin = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t cout = out.shape[1], bi = x.layout.block, bo = out.layout.block;
  if (u.shape != Shape{cout, A, A, cin} || out.shape[0] != n)
    c.fail(fmt::format("Winograd weight {} does not fit input {} and output {}", shape_str(u.shape),
                       shape_str(x.shape), shape_str(out.shape)));
  if (c.has_input(2) && c.in(2).shape != Shape{cout})
    c.fail(fmt::format("bias shape {} is not [{}]", shape_str(c.in(2).shape), cout));
  const auto pads = attr_dims(c, "pads", 4, 0, 0);
  const auto dilations = attr_dims(c, "dilations", 2, 1, 1);
  const int pad_top = static_cast<int>(pads[0]), pad_left = static_cast<int>(pads[1]);
  const int dy = static_cast<int>(dilations[0]), dx = static_cast<int>(dilations[1]);
  const int64_t oh = out.shape[2], ow = out.shape[3];
  if (oh != h + pads[0] + pads[2] - 2 * dy || ow != w + pads[1] + pads[3] - 2 * dx)
    c.fail(fmt::format("output {} is not a 3x3 conv of input {} with pads [{}] and dilations [{}]",
                       shape_str(out.shape), shape_str(x.shape), fmt::join(pads, ","), fmt::join(dilations, ",")));
  const int64_t tw = winograd_tiles(ow, dx), th = winograd_tiles(oh, dy), cbs = cin / bi, cobs = cout / bo;

  Var il("il"), ol("ol"), tx("tx"), ty("ty"), i("i"), j("j"), jj("jj"), a("a"), cb("cb"), cob("cob"), b("b");
  // The input, zero outside (clamped reads, so bounds stay exact).
  auto input = [&](Expr row, Expr col) {
    Expr inside = row >= 0 && row < static_cast<int>(h) && col >= 0 && col < static_cast<int>(w);
    Expr v = x.at_split({b, Expr(0), Halide::clamp(row, 0, static_cast<int>(h - 1)), Halide::clamp(col, 0, static_cast<int>(w - 1))},
                        cb, il);
    return Halide::select(inside, v, Halide::cast(x.type(), 0));
  };
  Func t(c.name("_wino_t")), v(c.name("_wino_v")), mr(c.name("_wino_mr")), m(c.name("_wino_m")), y(c.name("_wino_y"));
  t(il, tx, j, i, ty, cb, b) = transform_row(i, kWinogradBT, [&](int k) {
    return input(grid_index(ty, k, dy) - pad_top, grid_index(tx, j, dx) - pad_left);
  });
  set_estimates(t, {bi, tw, A, A, th, cbs, n});
  v(il, tx, jj, i, ty, cb, b) = transform_row(jj, kWinogradBT, [&](int k) { return t(il, tx, k, i, ty, cb, b); });
  set_estimates(v, {bi, tw, A, A, th, cbs, n});

  Halide::RDom r({{0, static_cast<int>(bi)}, {0, static_cast<int>(cbs)}}, c.name("_wino_r"));
  Expr ci = r[1] * static_cast<int>(bi) + r[0];
  Expr weight = u.layout.blocked() ? u.at_split({Expr(0), i, jj, ci}, cob, ol) : u.at({cob * static_cast<int>(bo) + ol, i, jj, ci});
  mr(ol, tx, cob, jj, i, ty, b) = Halide::cast(x.type(), 0);
  mr(ol, tx, cob, jj, i, ty, b) += v(r[0], tx, jj, i, ty, r[1], b) * weight;
  set_estimates(mr, {bo, tw, cobs, A, A, th, n});
  m(ol, tx, jj, i, ty, cob, b) = mr(ol, tx, cob, jj, i, ty, b);
  set_estimates(m, {bo, tw, A, A, th, cobs, n});
  y(ol, a, i, tx, ty, cob, b) = transform_row(a, kWinogradAT, [&](int k) { return m(ol, tx, k, i, ty, cob, b); });
  set_estimates(y, {bo, T, A, tw, th, cobs, n});

  return {c.output([&](const std::vector<Expr>& o) {
    auto [q, lane] = split_blocked(o[1], bo);
    Expr row = o[2], col = o[3];
    Expr value = transform_row(position_of(row, dy), kWinogradAT, [&](int k) {
      return y(lane, position_of(col, dx), k, tile_of(col, dx), tile_of(row, dy), q, o[0]);
    });
    return c.has_input(2) ? value + c.in(2).at({o[1]}) : value;
  })};
}

}  // namespace ts
