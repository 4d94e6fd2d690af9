#pragma once
// Transcendentals as explicit arithmetic. Halide 14 lowers exp/log/tanh/erf on float32 to
// scalar libm calls that do not vectorize and whose cost the op-count features cannot see, so
// float32 uses the polynomial forms below (max relative error ~1e-6 in the ranges used by
// networks); other float types call Halide's (libm) versions.
#include <Halide.h>

namespace ts {

Halide::Expr ts_exp(Halide::Expr x);      // Cody-Waite range reduction + degree-6 polynomial
Halide::Expr ts_log(Halide::Expr x);      // exponent split + degree-8 polynomial of log(1+f)
Halide::Expr ts_tanh(Halide::Expr x);     // odd Taylor polynomial near 0, exp form elsewhere
Halide::Expr ts_erf(Halide::Expr x);      // Abramowitz-Stegun 7.1.26 (abs error < 1.5e-7)
Halide::Expr ts_sigmoid(Halide::Expr x);  // 1 / (1 + exp(-x))

}  // namespace ts
