//===- HalfFloatTest.cpp - f32 <-> f16 / bf16 conversions -----------------===//
//
// runtime/HalfFloat.h against references written differently: widening from
// the formats' definitions with ldexp, narrowing by picking the nearest
// representable value in double (ties to the even bit pattern). Every 16-bit
// value, every midpoint between neighbours and the floats on either side of
// it are checked, plus a sweep over all float exponents.
//
//===----------------------------------------------------------------------===//
#include "runtime/HalfFloat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace attnc::runtime;

namespace {

bool isNan16(uint16_t h, int exponentBits) {
  int mantissaBits = 15 - exponentBits;
  uint16_t exponentMask = uint16_t(((1u << exponentBits) - 1) << mantissaBits);
  return (h & exponentMask) == exponentMask && (h & ((1u << mantissaBits) - 1));
}

/// f16 from its definition: (-1)^s 2^(e-15) 1.m, or 2^-14 0.m when e = 0.
double referenceF16(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double magnitude = e == 0    ? std::ldexp(m, -24)
                     : e == 31 ? (m ? NAN : INFINITY)
                               : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

/// All finite non-negative f16 values in increasing order (index = bits).
const std::vector<double> &positiveF16() {
  static std::vector<double> values = [] {
    std::vector<double> v;
    for (uint32_t h = 0; h < 0x7c00; ++h)
      v.push_back(referenceF16(uint16_t(h)));
    return v;
  }();
  return values;
}

/// Nearest f16 to a non-NaN float, ties to the even bit pattern; beyond the
/// largest finite value the boundary is 65520 (where 65504 + half an ulp would be).
uint16_t referenceToF16(float f) {
  double x = std::fabs(double(f));
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (x >= 65520.0)
    return sign | 0x7c00;
  const std::vector<double> &v = positiveF16();
  size_t hi = size_t(std::lower_bound(v.begin(), v.end(), x) - v.begin());
  if (hi == v.size())
    return sign | 0x7bff;
  if (v[hi] == x || hi == 0)
    return uint16_t(sign | hi);
  size_t lo = hi - 1;
  double below = x - v[lo], above = v[hi] - x;
  size_t pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
  return uint16_t(sign | pick);
}

/// Nearest bf16 to a non-NaN float: the two bf16 around it are its upper
/// half truncated and that plus one; ties to the even one.
uint16_t referenceToBf16(float f) {
  uint32_t u = floatBits(f);
  uint16_t lo = uint16_t(u >> 16);
  if ((u & 0xffff) == 0)
    return lo;
  uint16_t hi = uint16_t(lo + 1); // away from zero; 0x7f7f + 1 is infinity
  double x = f, below = std::fabs(x - double(bf16ToFloat(lo)));
  double above = std::fabs(double(bf16ToFloat(hi)) - x);
  if ((hi & 0x7fff) == 0x7f80) // the next step would be infinity: halfway at 2^128 - 2^119
    above = std::fabs(std::ldexp(1.0, 128) - std::fabs(x));
  return below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
}

/// Floats just below, at and above `x`.
std::vector<float> around(double x) {
  float f = float(x);
  return {std::nextafter(f, -INFINITY), f, std::nextafter(f, INFINITY)};
}

} // namespace

TEST(HalfFloat, EveryF16WidensExactlyAndNarrowsBack) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16ToFloat(uint16_t(h));
    double ref = referenceF16(uint16_t(h));
    if (isNan16(uint16_t(h), 5)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      uint16_t back = floatToF16(f);
      EXPECT_TRUE(isNan16(back, 5)) << std::hex << h;
      EXPECT_EQ(back & 0x8000, h & 0x8000);
      EXPECT_EQ(back & 0x3ff, (h & 0x3ff) | 0x200) << "the payload is kept, quieted";
      continue;
    }
    ASSERT_EQ(double(f), ref) << std::hex << h;
    ASSERT_EQ(floatToF16(f), h) << std::hex << h;
  }
}

TEST(HalfFloat, EveryBf16WidensExactlyAndNarrowsBack) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = bf16ToFloat(uint16_t(h));
    EXPECT_EQ(floatBits(f), h << 16);
    if (isNan16(uint16_t(h), 8)) {
      uint16_t back = floatToBf16(f);
      EXPECT_TRUE(isNan16(back, 8)) << std::hex << h;
      EXPECT_EQ(back, h | 0x40) << "sign and payload kept, quieted";
      continue;
    }
    ASSERT_EQ(floatToBf16(f), h) << std::hex << h;
  }
}

TEST(HalfFloat, F16RoundsEveryMidpointAndItsNeighboursToNearestEven) {
  const std::vector<double> &v = positiveF16();
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    double mid = 0.5 * (v[i] + v[i + 1]); // exact in double and in float
    for (float f : around(mid)) {
      ASSERT_EQ(floatToF16(f), referenceToF16(f)) << f;
      ASSERT_EQ(floatToF16(-f), referenceToF16(-f)) << -f;
    }
  }
  // The midpoint is a tie: it goes to the even neighbour.
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f), 0x3c00);             // 1 + half an ulp -> 1
  EXPECT_EQ(floatToF16(1.0f + 3 * 0x1p-11f), 0x3c02);         // 1 + 1.5 ulp -> up
  EXPECT_EQ(floatToF16(std::nextafter(1.0f + 0x1p-11f, 2.f)), 0x3c01);
}

TEST(HalfFloat, F16SubnormalsUnderflowAndOverflow) {
  EXPECT_EQ(floatToF16(0x1p-24f), 0x0001);                      // smallest subnormal
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000);                      // tie to even: 0
  EXPECT_EQ(floatToF16(std::nextafter(0x1p-25f, 1.f)), 0x0001); // just above: up
  EXPECT_EQ(floatToF16(-0x1p-25f), 0x8000);                     // -0 keeps its sign
  EXPECT_EQ(floatToF16(3 * 0x1p-25f), 0x0002);                  // 1.5 units: to even 2
  EXPECT_EQ(floatToF16(0x1p-14f - 0x1p-25f), 0x0400);           // rounds up into normals
  EXPECT_EQ(floatToF16(1e-30f), 0x0000);
  EXPECT_EQ(floatToF16(0.0f), 0x0000);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65519.99f), 0x7bff);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00); // the tie above 65504 goes to infinity
  EXPECT_EQ(floatToF16(-1e10f), 0xfc00);
  EXPECT_EQ(floatToF16(INFINITY), 0x7c00);
  EXPECT_EQ(floatToF16(-INFINITY), 0xfc00);
  EXPECT_TRUE(isNan16(floatToF16(NAN), 5));
  EXPECT_EQ(floatToF16(-NAN) & 0x8000, 0x8000);
  // A NaN whose payload sits only in the low bits must not become infinity.
  EXPECT_TRUE(isNan16(floatToF16(bitsFloat(0x7f800001u)), 5));
}

TEST(HalfFloat, Bf16RoundsEveryMidpointAndItsNeighboursToNearestEven) {
  for (uint32_t h = 0; h < 0x7f80; ++h) {
    // The midpoint above h is h's bits with the lower half 0x8000.
    float mid = bitsFloat((h << 16) | 0x8000u);
    for (float f : around(double(mid))) {
      ASSERT_EQ(floatToBf16(f), referenceToBf16(f)) << std::hex << h;
      ASSERT_EQ(floatToBf16(-f), referenceToBf16(-f)) << std::hex << h;
    }
  }
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f808000u)), 0x3f80); // tie, even below
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f818000u)), 0x3f82); // tie, even above
}

TEST(HalfFloat, Bf16ZerosInfinitiesOverflowAndNaN) {
  EXPECT_EQ(floatToBf16(0.0f), 0x0000);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(INFINITY), 0x7f80);
  EXPECT_EQ(floatToBf16(-INFINITY), 0xff80);
  EXPECT_EQ(floatToBf16(bitsFloat(0x7f7fffffu)), 0x7f80); // FLT_MAX rounds up to infinity
  EXPECT_EQ(floatToBf16(bitsFloat(0x7f7f7fffu)), 0x7f7f); // below the tie: largest finite
  EXPECT_EQ(floatToBf16(bitsFloat(0x00000001u)), 0x0000); // float subnormals round too
  EXPECT_EQ(floatToBf16(bitsFloat(0x00008001u)), 0x0001);
  // Payload only in the low half: truncation would give infinity.
  EXPECT_TRUE(isNan16(floatToBf16(bitsFloat(0x7f800001u)), 8));
  EXPECT_TRUE(isNan16(floatToBf16(bitsFloat(0xffffffffu)), 8));
  EXPECT_EQ(floatToBf16(-NAN) & 0x8000, 0x8000);
}

TEST(HalfFloat, SweepOverAllFloatsAgreesWithTheReferences) {
  // A prime stride visits every exponent and many mantissas of both signs.
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 257) {
    float f = bitsFloat(uint32_t(u));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(floatToF16(f), referenceToF16(f)) << std::hex << u;
    ASSERT_EQ(floatToBf16(f), referenceToBf16(f)) << std::hex << u;
  }
}

TEST(HalfFloat, ArrayFormsConvertEveryElement) {
  float in[4] = {1.0f, -2.5f, 0x1p-24f, 70000.0f};
  uint16_t h[4], b[4];
  float back[4];
  narrowToF16(in, h, 4);
  narrowToBf16(in, b, 4);
  EXPECT_EQ(h[3], 0x7c00);
  EXPECT_EQ(b[1], 0xc020);
  widenF16(h, back, 4);
  EXPECT_EQ(back[2], 0x1p-24f);
  widenBf16(b, back, 4);
  EXPECT_EQ(back[1], -2.5f);
}
