//===- Rotary.cpp - Rotary position embeddings for the baselines ----------===//
#include "bench/src/Rotary.h"

#include <cmath>
#include <vector>

namespace attnc_bench {

// Rows [B, heads, L, D]: row r sits at position r % L + offset; channel c
// pairs with c + D/2 (Hugging Face's rotate_half), angle t * 10000^(-2c/D).
static void rotateRows(const float *in, float *out, int64_t rows, int64_t L, int64_t D,
                       int64_t offset, ThreadPool &pool) {
  const int64_t half = D / 2;
  std::vector<double> invFreq(half);
  for (int64_t c = 0; c < half; ++c)
    invFreq[c] = std::pow(10000.0, -2.0 * double(c) / double(D));
  pool.parallelFor(rows, [&](int64_t r, int) {
    double t = double(r % L + offset);
    const float *x = in + r * D;
    float *y = out + r * D;
    for (int64_t c = 0; c < half; ++c) {
      float cs = float(std::cos(t * invFreq[c])), sn = float(std::sin(t * invFreq[c]));
      y[c] = x[c] * cs - x[c + half] * sn;
      y[c + half] = x[c + half] * cs + x[c] * sn;
    }
  });
}

void rotateQueryKey(const Config &c, const std::vector<Tensor> &in, float *q, float *k,
                    ThreadPool &pool) {
  rotateRows(in[0].data.data(), q, c.B * c.H * c.Lq, c.Lq, c.D, c.Lk - c.Lq, pool);
  rotateRows(in[1].data.data(), k, c.B * c.G * c.Lk, c.Lk, c.D, 0, pool);
}

} // namespace attnc_bench
