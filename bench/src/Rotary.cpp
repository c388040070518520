//===- Rotary.cpp - Rotary position embeddings for the baselines ----------===//
#include "bench/src/Rotary.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnc_bench {

/// cos and sin of t * 10000^(-2c/D) for positions t in [0, L), pairs c in
/// [0, D/2): one row per position, as Hugging Face builds its cache.
RotaryTable::RotaryTable(int64_t L, int64_t D, ThreadPool &pool)
    : half(D / 2), cosT(L * half), sinT(L * half) {
    std::vector<double> invFreq(half);
    for (int64_t c = 0; c < half; ++c)
      invFreq[c] = std::pow(10000.0, -2.0 * double(c) / double(D));
    const int64_t chunk = 64;
    pool.parallelFor((L + chunk - 1) / chunk, [&](int64_t n, int) {
      for (int64_t t = n * chunk; t < std::min(L, (n + 1) * chunk); ++t)
        for (int64_t c = 0; c < half; ++c) {
          double angle = double(t) * invFreq[c];
          cosT[t * half + c] = float(std::cos(angle));
          sinT[t * half + c] = float(std::sin(angle));
        }
    });
}

namespace {
// Rows [B, heads, L, D]: row t of a head sits at position t + offset;
// channel c pairs with c + D/2 (Hugging Face's rotate_half).
void rotateRows(const RotaryTable &table, const float *in, float *out, int64_t heads, int64_t L,
                int64_t D, int64_t offset, ThreadPool &pool) {
  const int64_t half = table.half;
  pool.parallelFor(heads, [&](int64_t head, int) { // one item per head, not per row
    for (int64_t t = 0; t < L; ++t) {
      const float *x = in + (head * L + t) * D;
      const float *cs = &table.cosT[(t + offset) * half], *sn = &table.sinT[(t + offset) * half];
      float *y = out + (head * L + t) * D;
      for (int64_t c = 0; c < half; ++c) {
        y[c] = x[c] * cs[c] - x[c + half] * sn[c];
        y[c + half] = x[c + half] * cs[c] + x[c] * sn[c];
      }
    }
  });
}
} // namespace

void rotateQueryKey(const Config &c, const RotaryTable &table, const std::vector<Tensor> &in,
                    float *q, float *k, ThreadPool &pool) {
  // Query positions ip = i + Lk - Lq lie in [0, Lk) (the configurations have Lq <= Lk).
  rotateRows(table, in[0].data.data(), q, c.B * c.H, c.Lq, c.D, c.Lk - c.Lq, pool);
  rotateRows(table, in[1].data.data(), k, c.B * c.G, c.Lk, c.D, 0, pool);
}

} // namespace attnc_bench
