//===- Naive.cpp - The naive C++ loop baseline ----------------------------===//
//
// One function per kind of configuration. The softmax is the textbook
// three-pass one (max, exp and sum, normalise), in float32 like the kernels;
// a row without visible keys gets zeros, as docs/language.md §2 says.
//
//===----------------------------------------------------------------------===//
#include "bench/src/Naive.h"

#include "bench/src/Rotary.h"

#include <cmath>
#include <limits>
#include <vector>

namespace attnc_bench {

// Calls f(j) for the visible keys of a row: [0, sinkEnd) then [lo, hi).
template <typename F> static void forVisible(int64_t sinkEnd, int64_t lo, int64_t hi, F f) {
  for (int64_t j = 0; j < sinkEnd; ++j)
    f(j);
  for (int64_t j = lo; j < hi; ++j)
    f(j);
}

// o = softmax(s) v over the visible keys of a row whose maximum score is m;
// o starts at 0.
static void softmaxWeightedSum(std::vector<float> &s, int64_t sinkEnd, int64_t lo,
                               int64_t hi, float m, const float *v, int64_t ldv,
                               int64_t Dv, float *o) {
  float sum = 0.f;
  forVisible(sinkEnd, lo, hi, [&](int64_t j) {
    s[j] = std::exp(s[j] - m);
    sum += s[j];
  });
  forVisible(sinkEnd, lo, hi, [&](int64_t j) {
    for (int64_t d = 0; d < Dv; ++d)
      o[d] += s[j] * v[j * ldv + d];
  });
  for (int64_t d = 0; d < Dv; ++d)
    o[d] /= sum;
}

// One query row against keys [0, sinkEnd) and [lo, hi) of k/v (row strides
// ldk, ldv): o = softmax(s) v.
static void attendRow(const float *q, const float *k, int64_t ldk, const float *v,
                      int64_t ldv, int64_t D, int64_t Dv, int64_t sinkEnd, int64_t lo,
                      int64_t hi, float scale, std::vector<float> &s, float *o) {
  for (int64_t d = 0; d < Dv; ++d)
    o[d] = 0.f;
  if (hi <= lo && sinkEnd == 0)
    return;
  float m = -std::numeric_limits<float>::infinity();
  forVisible(sinkEnd, lo, hi, [&](int64_t j) {
    float dot = 0.f;
    for (int64_t d = 0; d < D; ++d)
      dot += q[d] * k[j * ldk + d];
    s[j] = scale * dot;
    m = std::fmax(m, s[j]);
  });
  softmaxWeightedSum(s, sinkEnd, lo, hi, m, v, ldv, Dv, o);
}

static void naiveSdpa(const Config &c, const std::vector<Tensor> &in, float *out,
                      ThreadPool &pool, int64_t r0, int64_t r1) {
  const float *q = in[0].data.data(), *k = in[1].data.data(), *v = in[2].data.data();
  std::vector<float> qRot, kRot;
  if (c.rotary) {
    qRot.resize(in[0].data.size());
    kRot.resize(in[1].data.size());
    rotateQueryKey(c, RotaryTable(c.Lk, c.D, pool), in, qRot.data(), kRot.data(), pool);
    q = qRot.data(), k = kRot.data();
  }
  const int64_t groupSize = c.H / c.G;
  pool.parallelFor(c.B * c.H, [&](int64_t bh, int) {
    int64_t b = bh / c.H, h = bh % c.H, g = h / groupSize;
    const float *kb = k + (b * c.G + g) * c.Lk * c.D;
    const float *vb = v + (b * c.G + g) * c.Lk * c.Dv;
    std::vector<float> s(c.Lk);
    for (int64_t i = r0; i < r1; ++i) {
      int64_t lo, hi;
      c.visibleRange(i, lo, hi);
      attendRow(q + (bh * c.Lq + i) * c.D, kb, c.D, vb, c.Dv, c.D, c.Dv, c.sinkEnd(i), lo,
                hi, c.scale(), s, out + (bh * c.Lq + i) * c.Dv);
    }
  });
}

// score(q, k) = w_v . tanh(W_q q + W_k k); one head (d2l's AdditiveAttention).
static void naiveAdditive(const Config &c, const std::vector<Tensor> &in,
                          float *out, ThreadPool &pool) {
  const float *q = in[0].data.data(), *k = in[1].data.data(), *v = in[2].data.data();
  const float *wq = in[3].data.data(), *wk = in[4].data.data(), *wv = in[5].data.data();
  const int64_t N = c.hidden, Dk = c.keyDim();
  pool.parallelFor(c.B * c.H, [&](int64_t bh, int) {
    int64_t b = bh / c.H, g = (bh % c.H) / (c.H / c.G);
    const float *kb = k + (b * c.G + g) * c.Lk * Dk;
    const float *vb = v + (b * c.G + g) * c.Lk * c.Dv;
    std::vector<float> qp(N), kp(N), s(c.Lk);
    for (int64_t i = 0; i < c.Lq; ++i) {
      const float *qi = q + (bh * c.Lq + i) * c.D;
      for (int64_t u = 0; u < N; ++u) {
        qp[u] = 0.f;
        for (int64_t d = 0; d < c.D; ++d)
          qp[u] += wq[u * c.D + d] * qi[d];
      }
      int64_t lo, hi;
      c.visibleRange(i, lo, hi);
      float *o = out + (bh * c.Lq + i) * c.Dv;
      for (int64_t d = 0; d < c.Dv; ++d)
        o[d] = 0.f;
      if (hi <= lo)
        continue;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t j = lo; j < hi; ++j) {
        for (int64_t u = 0; u < N; ++u) {
          kp[u] = 0.f;
          for (int64_t d = 0; d < Dk; ++d)
            kp[u] += wk[u * Dk + d] * kb[j * Dk + d];
        }
        float score = 0.f;
        for (int64_t u = 0; u < N; ++u)
          score += wv[u] * std::tanh(qp[u] + kp[u]);
        s[j] = c.scale() * score;
        m = std::fmax(m, s[j]);
      }
      softmaxWeightedSum(s, 0, lo, hi, m, vb, c.Dv, c.Dv, o);
    }
  });
}

// y[rows, cols] = x[rows, inner] @ w[cols, inner]^T (nn.Linear's layout),
// rows split over the pool.
static void naiveMatmul(const float *x, const float *w, float *y, int64_t rows,
                        int64_t inner, int64_t cols, ThreadPool &pool) {
  pool.parallelFor(rows, [&](int64_t r, int) {
    for (int64_t col = 0; col < cols; ++col) {
      float acc = 0.f;
      for (int64_t e = 0; e < inner; ++e)
        acc += x[r * inner + e] * w[col * inner + e];
      y[r * cols + col] = acc;
    }
  });
}

// self_qkv_out: project, attend per head (PyTorch's column-per-head layout),
// concatenate heads and project out.
static void naiveProjection(const Config &c, const std::vector<Tensor> &in,
                            float *out, ThreadPool &pool) {
  const int64_t L = c.Lq, M = c.modelDim, HD = c.H * c.D, GD = c.G * c.D,
                GDv = c.G * c.Dv, HDv = c.H * c.Dv;
  std::vector<float> Q(c.B * L * HD), K(c.B * L * GD), V(c.B * L * GDv),
      A(c.B * L * HDv);
  const float *x = in[0].data.data();
  naiveMatmul(x, in[1].data.data(), Q.data(), c.B * L, M, HD, pool);
  naiveMatmul(x, in[2].data.data(), K.data(), c.B * L, M, GD, pool);
  naiveMatmul(x, in[3].data.data(), V.data(), c.B * L, M, GDv, pool);
  const int64_t groupSize = c.H / c.G;
  pool.parallelFor(c.B * c.H, [&](int64_t bh, int) {
    int64_t b = bh / c.H, h = bh % c.H, g = h / groupSize;
    std::vector<float> s(c.Lk);
    for (int64_t i = 0; i < L; ++i) {
      int64_t lo, hi;
      c.visibleRange(i, lo, hi);
      attendRow(&Q[(b * L + i) * HD + h * c.D], &K[b * L * GD + g * c.D], GD,
                &V[b * L * GDv + g * c.Dv], GDv, c.D, c.Dv, 0, lo, hi, c.scale(), s,
                &A[(b * L + i) * HDv + h * c.Dv]);
    }
  });
  naiveMatmul(A.data(), in[4].data.data(), out, c.B * L, HDv, M, pool);
}

// Packed tokens [T, heads, width]: each sequence on its own, causal within it.
static void naivePacked(const Config &c, const std::vector<Tensor> &in, float *out,
                        ThreadPool &pool) {
  const std::vector<int32_t> cu = cuSeqlens(c);
  const float *q = in[0].data.data(), *k = in[1].data.data(), *v = in[2].data.data();
  const int64_t groupSize = c.H / c.G;
  pool.parallelFor(int64_t(c.seqLens.size()) * c.H, [&](int64_t bh, int) {
    int64_t b = bh / c.H, h = bh % c.H, g = h / groupSize, t0 = cu[b], L = c.seqLens[b];
    std::vector<float> s(L);
    for (int64_t i = 0; i < L; ++i)
      attendRow(q + ((t0 + i) * c.H + h) * c.D, k + (t0 * c.G + g) * c.D, c.G * c.D,
                v + (t0 * c.G + g) * c.Dv, c.G * c.Dv, c.D, c.Dv, 0, 0,
                c.mask == Mask::Causal ? i + 1 : L, c.scale(), s,
                out + ((t0 + i) * c.H + h) * c.Dv);
  });
}

void naiveAttention(const Config &c, const std::vector<Tensor> &in, float *out,
                    ThreadPool &pool, int64_t rowBegin, int64_t rowEnd) {
  switch (c.kind) {
  case Kind::Packed:
    return naivePacked(c, in, out, pool);
  case Kind::Sdpa:
    return naiveSdpa(c, in, out, pool, rowBegin, rowEnd);
  case Kind::Additive:
    return naiveAdditive(c, in, out, pool);
  case Kind::Projection:
    return naiveProjection(c, in, out, pool);
  }
}

} // namespace attnc_bench
