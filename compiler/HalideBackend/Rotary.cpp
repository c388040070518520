//===- Rotary.cpp - Rotary position embeddings in Halide ------------------===//
//
// docs/language.md, rotary embeddings. The angles depend on (pair, position) alone, so their
// cosines and sines form one table per call, shared by every head and batch
// row. The table is computed in float64 with our own range reduction and
// series: Halide lowers sin/cos to scalar libm calls, and a float32 angle
// t * f is off by ~t * 6e-8 radians at long positions (2e-3 at t = 32768),
// which a float64 reference sees. The rows themselves turn in float32.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"

using namespace Halide;

namespace attnc::halide_backend {

using Halide::Expr;

namespace {

Expr f64(double v) { return Halide::Internal::make_const(Float(64), v); }

/// sin and cos of r, |r| <= pi/4, in float64: Taylor series whose first
/// omitted terms are below 1e-11 there.
std::pair<Expr, Expr> sinCosSmall(const Expr &r) {
  Expr r2 = r * r;
  Expr s = f64(1.0); // sin(r) / r = 1 - r^2/(2*3) (1 - r^2/(4*5) (...))
  for (int n = 11; n >= 3; n -= 2)
    s = f64(1.0) - r2 * f64(1.0 / ((n - 1) * n)) * s;
  Expr c = f64(1.0); // cos(r) = 1 - r^2/(1*2) (1 - r^2/(3*4) (...))
  for (int n = 12; n >= 2; n -= 2)
    c = f64(1.0) - r2 * f64(1.0 / ((n - 1) * n)) * c;
  return {r * s, c};
}

} // namespace

RotaryTable makeRotaryTable(const RotarySpec &rotary) {
  RotaryTable t;
  Var c("c"), p("p");
  const double half = (double)(rotary.dims / 2);
  t.invFreq = Func("rope_inv_freq");
  t.invFreq(c) = Halide::pow(f64(rotary.base), -cast<double>(c) / f64(half));
  // angle = p * f = k * pi/2 + r with |r| <= pi/4, all in float64: for any
  // int32 position the reduction errs by < 1e-9 radians (float32 needs 6e-8).
  Expr angle = cast<double>(p) * t.invFreq(c);
  Expr k = Halide::round(angle * f64(2.0 / 3.141592653589793));
  Expr r = angle - k * f64(1.5707963267948966);
  auto [s, co] = sinCosSmall(r);
  Expr quadrant = cast<int32_t>(k) & 3;
  Expr sinA = select(quadrant == 0, s, quadrant == 1, co, quadrant == 2, -s, -co);
  Expr cosA = select(quadrant == 0, co, quadrant == 1, -s, quadrant == 2, -co, s);
  t.cosSin = Func("rope_cos_sin");
  t.cosSin(c, p) = Tuple(cast<float>(cosA), cast<float>(sinA));
  return t;
}

void rotateRows(Func out, Func in, const RotaryTable &table, const RotarySpec &rotary,
                const Expr &position, bool transposed) {
  std::vector<Var> args = in.args(); // (d, row, head, b)
  Var d = args[0];
  const int32_t dims = (int32_t)rotary.dims, half = dims / 2;
  Expr pair, partner, sign;
  if (rotary.style == RotaryStyle::Half) {
    Expr low = d < half;
    pair = select(low, d, d - half);
    partner = select(low, d + half, d - half);
    sign = select(low, -1.0f, 1.0f);
  } else {
    pair = d / 2;
    partner = d + 1 - 2 * (d % 2);
    sign = select(d % 2 == 0, -1.0f, 1.0f);
  }
  if (transposed) // the rotation by -angle: the gradient's way back
    sign = -sign;
  pair = clamp(pair, 0, half - 1);
  partner = clamp(partner, 0, dims - 1);
  std::vector<Expr> at(args.begin(), args.end()), partnerAt = at;
  partnerAt[0] = partner;
  Expr cosSin0 = table.cosSin(pair, position)[0], cosSin1 = table.cosSin(pair, position)[1];
  Expr turned = in(at) * cosSin0 + sign * in(partnerAt) * cosSin1;
  out(args) = select(d < dims, turned, in(at));
}

} // namespace attnc::halide_backend
