//===- HalfFloat.h - f32 <-> f16 / bf16 conversions ----------------*- C++ -*-===//
//
// The conversions between float and the two 16-bit storage types (docs/
// language.md, storage types): IEEE binary16 (f16) and bfloat16 (bf16, the
// upper half of a float). Widening is exact; narrowing rounds to nearest
// even once, with f16 subnormals rounded correctly, overflow to infinity and
// NaN kept a (quiet) NaN of the same sign. Header-only and bit-exact, so
// attnc-run, the tests and any app share one definition without linking
// libattnrt, and without relying on the compiler's _Float16 or F16C.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace attnc::runtime {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// bf16 bits -> float: the bits are the float's upper half, so exact.
inline float bf16ToFloat(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

/// float -> bf16 bits, round to nearest even. A NaN keeps its sign and upper
/// payload with the quiet bit set: truncating could turn it into infinity.
inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x0040u);
  // Adding 0x7fff plus the kept LSB rounds ties to even; a carry into the
  // exponent is the correct rounding up, up to infinity.
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

/// f16 bits -> float, exact (subnormal f16 are normal floats).
inline float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) // infinity, or NaN with its payload kept
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0)
      return bitsFloat(sign);
    // Subnormal: mantissa * 2^-24, exact in float.
    float magnitude = float(mantissa) * bitsFloat(0x33800000u); // 2^-24
    return sign ? -magnitude : magnitude;
  }
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// float -> f16 bits, round to nearest even: subnormal results rounded at
/// their own precision, values from 65520 up (the midpoint to the next power)
/// to infinity, NaN to a quiet NaN of the same sign.
inline uint16_t floatToF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x1ffu));
  if (magnitude >= 0x477ff000u) // 65520 and up, infinity included
    return uint16_t(sign | 0x7c00u);
  if (magnitude >= 0x38800000u) { // 2^-14 and up: normal f16
    // Rebias the exponent (127 -> 15) in place, then round the 13 dropped
    // bits to nearest even; a carry moves into the exponent correctly.
    uint32_t rebased = magnitude - (uint32_t(112) << 23);
    rebased += 0xfffu + ((rebased >> 13) & 1u);
    return uint16_t(sign | (rebased >> 13));
  }
  if (magnitude < 0x33000000u) // below 2^-25, half the smallest subnormal
    return sign;
  // Subnormal: the 24-bit significand shifted so that one unit is 2^-24,
  // rounded to nearest even on the bits shifted out.
  uint32_t exponent = magnitude >> 23;
  uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126 - exponent; // 14..24 for 2^-25 <= |f| < 2^-14
  uint32_t kept = significand >> shift;
  uint32_t rest = significand & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1u)))
    ++kept; // may become 0x400, the smallest normal: still the right bits
  return uint16_t(sign | kept);
}

/// Array forms, for converting whole tensors.
inline void narrowToF16(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatToF16(in[i]);
}
inline void narrowToBf16(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatToBf16(in[i]);
}
inline void widenF16(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = f16ToFloat(in[i]);
}
inline void widenBf16(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = bf16ToFloat(in[i]);
}

} // namespace attnc::runtime
