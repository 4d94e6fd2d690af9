#pragma once
// Transcendentals as explicit arithmetic. Halide 14 lowers exp/log/tanh/erf on float32 to
// scalar libm calls that do not vectorize and whose cost the op-count features cannot see, so
// float32 uses the polynomial forms below (max relative error ~1e-6 in the ranges used by
// networks); other float types call Halide's (libm) versions.
#include <Halide.h>

namespace ts {

Halide::Expr ts_exp(Halide::Expr x);      // Cody-Waite range reduction + degree-6 polynomial
// exp(x) for x <= 0 (a softmax's x - max): below -87 it returns exp(-87) = 1.6e-38 instead of
// the denormal or 0 (negligible next to the row's sum, which is >= 1), so no edge cases remain
// but NaN, which stays NaN; positive x is outside its contract.
Halide::Expr ts_exp_nonpositive(Halide::Expr x);
Halide::Expr ts_log(Halide::Expr x);      // exponent split + degree-8 polynomial of log(1+f)
Halide::Expr ts_tanh(Halide::Expr x);     // odd Taylor polynomial near 0, exp form elsewhere
Halide::Expr ts_erf(Halide::Expr x);      // Abramowitz-Stegun 7.1.26 (abs error < 1.5e-7)
Halide::Expr ts_sigmoid(Halide::Expr x);  // 1 / (1 + exp(-x))

// Whether x is NaN, tested on its bits: Halide compiles float arithmetic as never NaN, so LLVM
// folds a float NaN test of a value computed in the same loop (an inlined Add before a Relu) to
// false. Non-float types: false.
Halide::Expr ts_is_nan(Halide::Expr x);

// max and min that return NaN when either operand is NaN (numpy's, PyTorch's, and ONNX
// Runtime's Max and Min), for elementwise ops and reductions' updates alike: the vector
// instructions return one operand or the other by their order. Other types: plain max and min.
Halide::Expr nan_max(Halide::Expr a, Halide::Expr b);
Halide::Expr nan_min(Halide::Expr a, Halide::Expr b);

}  // namespace ts
