#include "lower/math.h"

#include <initializer_list>
#include <limits>

namespace ts {

using Halide::Expr;

static bool is_f32(const Expr& x) { return x.type() == Halide::Float(32); }

// exp(xc) = 2^k * exp(r) with k = round(xc / ln2): returns exp(r), r = xc - k*ln2 split in two
// parts for accuracy, as 1 + r + r^2 P(r) with P the minimax polynomial of Cephes' expf (within
// 1 ulp on [-ln2/2, ln2/2]; the Taylor series of the same degree is off by up to 3).
static Expr exp_of_remainder(const Expr& xc, const Expr& k) {
  // strict_float: Halide's simplifier would fold the two parts of ln2 back into one constant.
  Expr r = Halide::strict_float(xc - k * 0.693145752f - k * 1.42860677e-6f);
  Expr p = 1.9875691500e-4f;
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f}) p = p * r + c;
  return (p * (r * r) + r) + 1.0f;
}

Expr ts_exp(Expr x) {
  if (!is_f32(x)) return Halide::exp(x);
  Expr xc = Halide::clamp(x, -87.0f, 88.72f);
  Expr k = Halide::round(xc * 1.44269504f);
  Expr p = exp_of_remainder(xc, k);
  // 2^k for k in [-126, 128]: 2^128 is not a float, so k = 128 (x near 88.7) scales by 2^127 * 2.
  Expr bits = Halide::cast<int32_t>(Halide::min(k, 127.0f) + 127.0f) << 23;
  Expr y = p * Halide::reinterpret(Halide::Float(32), bits);
  y = Halide::select(k > 127.0f, y * 2.0f, y);
  y = Halide::select(x < -87.0f, 0.0f, y);
  y = Halide::select(x > 88.72f, std::numeric_limits<float>::infinity(), y);
  return Halide::select(ts_is_nan(x), x, y);  // NaN stays NaN
}

Expr ts_log(Expr x) {
  if (!is_f32(x)) return Halide::log(x);
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(x) = e*ln2 + log(m), log(m) via atanh series
  // on s = (m-1)/(m+1): log(m) = 2(s + s^3/3 + s^5/5 + s^7/7 + s^9/9).
  Expr bits = Halide::reinterpret(Halide::Int(32), x);
  Expr e = ((bits >> 23) & 0xff) - 127;
  Expr m = Halide::reinterpret(Halide::Float(32), (bits & 0x007fffff) | 0x3f800000);
  Expr big = m > 1.41421356f;
  m = Halide::select(big, m * 0.5f, m);
  Expr ef = Halide::cast<float>(Halide::select(big, e + 1, e));
  Expr s = (m - 1.0f) / (m + 1.0f);
  Expr s2 = s * s;
  Expr poly = 2.0f * s * (1.0f + s2 * (0.333333333f + s2 * (0.2f + s2 * (0.142857143f + s2 * 0.111111111f))));
  Expr y = ef * 0.693147181f + poly;
  // Denormals, zero, negatives, infinity and NaN keep IEEE semantics.
  y = Halide::select(x < 1.17549435e-38f, Halide::log(x), y);
  return Halide::select(x > 3.4e38f || ts_is_nan(x), x, y);
}

Expr ts_tanh(Expr x) {
  if (!is_f32(x)) return Halide::tanh(x);
  Expr ax = Halide::abs(x);
  Expr x2 = x * x;
  Expr small = x * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * (-0.0539682540f + x2 * 0.0218694885f))));
  Expr e = ts_exp(-2.0f * ax);
  Expr large = (1.0f - e) / (1.0f + e);
  large = Halide::select(x < 0, -large, large);
  return Halide::select(ax < 0.25f, small, large);
}

// 1 / d for d >= 1: the hardware's reciprocal estimate refined by one Newton step (about 23
// bits), a fraction of a true division's cost in an epilogue.
static Expr refined_inverse(const Expr& d) {
  Expr inv = Halide::fast_inverse(d);
  return inv * (2.0f - d * inv);
}

// exp(t) for t already within [-87, 88], where 2^k stays a normal float: no edge cases.
static Expr exp_in_range(const Expr& t) {
  Expr k = Halide::round(t * 1.44269504f);
  return exp_of_remainder(t, k) * Halide::reinterpret(Halide::Float(32), Halide::cast<int32_t>(k + 127.0f) << 23);
}

// p(v) = c[0] + v * (c[1] + v * (...)), Horner's rule.
static Expr horner(const Expr& v, std::initializer_list<float> c) {
  const float* last = c.end() - 1;
  Expr p = *last;
  for (const float* k = last; k-- != c.begin();) p = p * v + *k;
  return p;
}

Expr ts_erf(Expr x) {
  if (!is_f32(x)) return Halide::cast(x.type(), ts_erf(Halide::cast<float>(x)));
  // Within 1.6 ulp of erf over all floats (ONNX Runtime's is within 1; the Abramowitz-Stegun form
  // this replaces was off by 27 ulp near 0.1, which a Sin of a sum far from 0 made visible), from
  // least-squares fits of the relative error on two ranges:
  //   |x| < 0.875   x + x * p(x^2), p's constant 2/sqrt(pi) - 1: x carries the leading digits;
  //   |x| >= 0.875  1 - exp(-x^2) * q(1 / (1 + |x|/2)), q fit to erfc(x) exp(x^2) on [0.875, 4].
  // |x| is clamped to 4, where erf is 1 in float (1 - 1.5e-8): exp(-x^2) then needs no edge cases
  // and 1 / (1 + |x|/2) no true division (a GELU epilogue: ViT's MLP, ConvNeXt).
  // strict_float: Halide's simplifier would fold x + x * p into x * (p + 1).
  Expr small = Halide::strict_float(x + x * horner(x * x, {0.1283791669f, -0.3761263671f, 0.112837438f, -0.02686223597f,
                                                           0.005208509379f, -0.0008232935708f, 8.776289129e-05f}));
  Expr ax = Halide::min(Halide::abs(x), 4.0f);
  Expr t = refined_inverse(1.0f + 0.5f * ax);
  Expr q = horner(t, {-0.0001591348238f, 0.284985242f, 0.2592359719f, 0.3493411243f, -0.1067143504f,
                      0.5669760532f, -0.4736311675f, 0.1200241656f});
  Expr big = 1.0f - q * exp_in_range(-ax * ax);
  Expr y = Halide::select(ax < 0.875f, small, Halide::select(x < 0, -big, big));
  return Halide::select(ts_is_nan(x), x, y);  // NaN stays NaN
}

Expr ts_exp_nonpositive(Expr x) {
  if (!is_f32(x)) return ts_exp(x);
  return Halide::select(ts_is_nan(x), x, exp_in_range(Halide::max(x, -87.0f)));
}

Expr ts_sigmoid(Expr x) {
  if (!is_f32(x)) {
    Expr one = Halide::cast(x.type(), 1);
    return one / (one + ts_exp(-x));
  }
  // A SiLU epilogue (x * sigmoid(x)) after a short reduction (EfficientNet's 1x1 convs over 16
  // channels) cost more than the conv's FMAs with ts_exp's edge cases and a true division.
  // Here -x is clamped to exp_in_range's [-87, 88], where sigmoid has long saturated (1 - 2^-24
  // at x = 17, below float's smallest normal at x = -87), and 1 / d is refined_inverse's.
  Expr inv = refined_inverse(1.0f + exp_in_range(Halide::clamp(-x, -87.0f, 88.0f)));
  return Halide::select(ts_is_nan(x), x, inv);
}

Halide::Expr ts_is_nan(Halide::Expr x) {
  const Halide::Type t = x.type();
  if (!t.is_float()) return Halide::Internal::make_const(Halide::Bool(t.lanes()), false);
  if (t.bits() != 32 && t.bits() != 64) return Halide::is_nan(x);
  // NaN: every exponent bit set and a mantissa that is not 0, so |bits| > the bits of Inf.
  const Halide::Type u = Halide::UInt(t.bits(), t.lanes());
  const uint64_t abs_mask = t.bits() == 32 ? 0x7fffffffull : 0x7fffffffffffffffull;
  const uint64_t inf = t.bits() == 32 ? 0x7f800000ull : 0x7ff0000000000000ull;
  return (Halide::reinterpret(u, x) & Halide::Internal::make_const(u, abs_mask)) > Halide::Internal::make_const(u, inf);
}

Halide::Expr nan_max(Halide::Expr a, Halide::Expr b) {
  if (!a.type().is_float()) return Halide::max(a, b);
  return Halide::select(ts_is_nan(a), a, ts_is_nan(b), b, Halide::max(a, b));
}

Halide::Expr nan_min(Halide::Expr a, Halide::Expr b) {
  if (!a.type().is_float()) return Halide::min(a, b);
  return Halide::select(ts_is_nan(a), a, ts_is_nan(b), b, Halide::min(a, b));
}

}  // namespace ts
