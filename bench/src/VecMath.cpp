//===- VecMath.cpp - Vectorized softmax pieces for the OpenBLAS baseline --===//
//
// exp(x) = 2^n * p(r) with n = round(x log2 e) and r = x - n ln 2 (ln 2 split
// in two parts for accuracy); inputs are clamped to the float range first, so
// exp never produces inf or nan for finite inputs. tanh(x) = 1 - 2/(e^{2x}+1)
// on clamped inputs. Each ISA version is one function with a target attribute.
//
//===----------------------------------------------------------------------===//
#include "bench/src/VecMath.h"

#include <immintrin.h>

#include <cmath>
#include <limits>

namespace attnc_bench {

namespace {
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f,
                kP2 = 8.3334519073e-3f, kP3 = 4.1665795894e-2f,
                kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
constexpr float kExpLo = -87.3f, kExpHi = 88.3f;

enum class Isa { Scalar, Avx2, Avx512 };

Isa pickIsa() {
  if (__builtin_cpu_supports("avx512f"))
    return Isa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return Isa::Avx2;
  return Isa::Scalar;
}

const Isa kIsa = pickIsa();

// ---- AVX-512 ---------------------------------------------------------------
__attribute__((target("avx512f"))) inline __m512 exp512(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(kExpHi)), _mm512_set1_ps(kExpLo));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

__attribute__((target("avx512f"))) float max512(const float *x, int64_t n) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    m = _mm512_max_ps(m, _mm512_loadu_ps(x + j));
  if (j < n) {
    __mmask16 k = __mmask16((1u << (n - j)) - 1);
    m = _mm512_mask_max_ps(m, k, m, _mm512_maskz_loadu_ps(k, x + j));
  }
  return _mm512_reduce_max_ps(m);
}

__attribute__((target("avx512f"))) float expSum512(float *x, int64_t n, float shift) {
  __m512 s = _mm512_set1_ps(shift), acc = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + j), s));
    _mm512_storeu_ps(x + j, e);
    acc = _mm512_add_ps(acc, e);
  }
  if (j < n) {
    __mmask16 k = __mmask16((1u << (n - j)) - 1);
    __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), s));
    _mm512_mask_storeu_ps(x + j, k, e);
    acc = _mm512_mask_add_ps(acc, k, acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

__attribute__((target("avx512f"))) void tanh512(float *x, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f), two = _mm512_set1_ps(2.0f);
  const __m512 lim = _mm512_set1_ps(9.0f);
  int64_t j = 0;
  for (; j < n; j += 16) {
    __mmask16 k = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(k, x + j);
    v = _mm512_max_ps(_mm512_min_ps(v, lim), _mm512_sub_ps(_mm512_setzero_ps(), lim));
    __m512 e = exp512(_mm512_mul_ps(v, two));
    __m512 t = _mm512_sub_ps(one, _mm512_div_ps(two, _mm512_add_ps(e, one)));
    _mm512_mask_storeu_ps(x + j, k, t);
  }
}

__attribute__((target("avx512f"))) float dot512(const float *a, const float *b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + j), _mm512_loadu_ps(b + j), acc);
  if (j < n) {
    __mmask16 k = __mmask16((1u << (n - j)) - 1);
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + j), _mm512_maskz_loadu_ps(k, b + j), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// ---- AVX2 + FMA ------------------------------------------------------------
__attribute__((target("avx2,fma"))) inline __m256 exp256(__m256 x) {
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(kExpHi)), _mm256_set1_ps(kExpLo));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  __m256 r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) float max256(const float *x, int64_t n) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
  float lanes[8];
  _mm256_storeu_ps(lanes, m);
  float r = lanes[0];
  for (int l = 1; l < 8; ++l)
    r = std::fmax(r, lanes[l]);
  for (; j < n; ++j)
    r = std::fmax(r, x[j]);
  return r;
}

__attribute__((target("avx2,fma"))) float expSum256(float *x, int64_t n, float shift) {
  __m256 s = _mm256_set1_ps(shift), acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), s));
    _mm256_storeu_ps(x + j, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum256(acc);
  for (; j < n; ++j) {
    x[j] = std::exp(x[j] - shift);
    sum += x[j];
  }
  return sum;
}

__attribute__((target("avx2,fma"))) void tanh256(float *x, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  const __m256 lim = _mm256_set1_ps(9.0f), nlim = _mm256_set1_ps(-9.0f);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_max_ps(_mm256_min_ps(_mm256_loadu_ps(x + j), lim), nlim);
    __m256 e = exp256(_mm256_mul_ps(v, two));
    _mm256_storeu_ps(x + j, _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one))));
  }
  for (; j < n; ++j)
    x[j] = std::tanh(x[j]);
}

__attribute__((target("avx2,fma"))) float dot256(const float *a, const float *b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + j), _mm256_loadu_ps(b + j), acc);
  float sum = hsum256(acc);
  for (; j < n; ++j)
    sum += a[j] * b[j];
  return sum;
}
} // namespace

float vecMax(const float *x, int64_t n) {
  if (kIsa == Isa::Avx512)
    return max512(x, n);
  if (kIsa == Isa::Avx2)
    return max256(x, n);
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j)
    m = std::fmax(m, x[j]);
  return m;
}

float vecExpShiftSum(float *x, int64_t n, float shift) {
  if (kIsa == Isa::Avx512)
    return expSum512(x, n, shift);
  if (kIsa == Isa::Avx2)
    return expSum256(x, n, shift);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - shift);
    sum += x[j];
  }
  return sum;
}

void vecTanh(float *x, int64_t n) {
  if (kIsa == Isa::Avx512)
    return tanh512(x, n);
  if (kIsa == Isa::Avx2)
    return tanh256(x, n);
  for (int64_t j = 0; j < n; ++j)
    x[j] = std::tanh(x[j]);
}

float vecDot(const float *a, const float *b, int64_t n) {
  if (kIsa == Isa::Avx512)
    return dot512(a, b, n);
  if (kIsa == Isa::Avx2)
    return dot256(a, b, n);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j)
    sum += a[j] * b[j];
  return sum;
}

const char *vecMathIsa() {
  return kIsa == Isa::Avx512 ? "avx512f" : kIsa == Isa::Avx2 ? "avx2" : "scalar";
}

} // namespace attnc_bench
