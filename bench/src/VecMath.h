//===- VecMath.h - Vectorized softmax pieces for the OpenBLAS baseline -*- C++ -*-===//
//
// The OpenBLAS baseline's non-GEMM work, vectorized so that the baseline is a
// fair one: row maximum, exp(x - m) with its sum, and tanh. AVX-512 and AVX2
// versions are chosen by cpuid at first use; a scalar version covers the rest.
// exp is a Cephes-style range-reduced polynomial (relative error ~2e-7).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace attnc_bench {

/// max over x[0, n); -inf when n == 0.
float vecMax(const float *x, int64_t n);

/// x[j] = exp(x[j] - shift) for j in [0, n); returns the sum of the results.
float vecExpShiftSum(float *x, int64_t n, float shift);

/// x[j] = tanh(x[j]).
void vecTanh(float *x, int64_t n);

/// sum of a[j] * b[j].
float vecDot(const float *a, const float *b, int64_t n);

/// Which implementation the dispatcher picked: "avx512f", "avx2" or "scalar".
const char *vecMathIsa();

} // namespace attnc_bench
