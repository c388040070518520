//===- BlasAttention.cpp - The OpenBLAS sgemm + softmax + sgemm baseline --===//
//
// A work item is a block of query rows whose Q rows are contiguous in memory:
// a tile of one head, or (when Lq is small, as in decode) all query heads of
// one key/value group, so a GQA group reads its K and V once. Each item does
// S = scale Q K^T over the visible key range, softmax in place, O = S V, and
// divides each output row by its sum.
//
//===----------------------------------------------------------------------===//
#include "bench/src/BlasAttention.h"

#include "bench/src/Rotary.h"
#include "bench/src/VecMath.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

extern "C" char *openblas_get_corename(void);

namespace attnc_bench {

static constexpr int64_t kTileRows = 256;
// Items of this many rows (MHA decode) use sgemv: OpenBLAS's sgemm is slow
// for a single row, while several rows (a GQA group) still gain from sgemm
// reading K and V once for all of them.
static constexpr int64_t kGemvRows = 1;

void blasUseOneThreadPerCall() { openblas_set_num_threads(1); }

std::string blasDescription() {
  std::string d = openblas_get_config();
  d += "; core ";
  d += openblas_get_corename();
  // bench/run.sh forces a core when OpenBLAS falls back to a pre-AVX2 one.
  if (const char *forced = std::getenv("OPENBLAS_CORETYPE"); forced && *forced)
    d += std::string(" (OPENBLAS_CORETYPE=") + forced + ")";
  return d;
}

namespace {
struct Item {
  int64_t b, g, h0, h1, i0, i1;
};

// Softmax of row[0, kn) for query i whose keys [lo, hi) lie in [k0, k0 + kn);
// returns the factor the output row must be multiplied with.
float softmaxRow(float *row, int64_t kn, int64_t k0, int64_t lo, int64_t hi) {
  if (hi <= lo) {
    std::fill(row, row + kn, 0.f);
    return 0.f;
  }
  std::fill(row, row + (lo - k0), 0.f);
  std::fill(row + (hi - k0), row + kn, 0.f);
  float *vis = row + (lo - k0);
  float m = vecMax(vis, hi - lo);
  float sum = vecExpShiftSum(vis, hi - lo, m);
  return 1.f / sum;
}

// softmaxRow for a row that also sees the sink keys [0, sinkEnd), whose
// scores are sinkRow[0, sinkCols) (sinkEnd <= lo: the ranges never overlap).
float softmaxRowWithSinks(float *row, int64_t kn, int64_t k0, int64_t lo, int64_t hi,
                          float *sinkRow, int64_t sinkCols, int64_t sinkEnd) {
  std::fill(sinkRow + sinkEnd, sinkRow + sinkCols, 0.f);
  if (sinkEnd == 0)
    return softmaxRow(row, kn, k0, lo, hi);
  hi = std::max(hi, lo);
  std::fill(row, row + (lo - k0), 0.f);
  std::fill(row + (hi - k0), row + kn, 0.f);
  float *vis = row + (lo - k0);
  float m = vecMax(sinkRow, sinkEnd);
  if (hi > lo)
    m = std::max(m, vecMax(vis, hi - lo));
  float sum = vecExpShiftSum(sinkRow, sinkEnd, m);
  if (hi > lo)
    sum += vecExpShiftSum(vis, hi - lo, m);
  return 1.f / sum;
}
} // namespace

struct BlasAttention::Impl {
  const Config &c;
  ThreadPool &pool;
  std::vector<Item> items;
  std::vector<std::vector<float>> scores, scratch; // per thread
  std::vector<float> Q, K, V, A;                   // projection buffers
  std::vector<float> qRot, kRot;                   // rotary: rotated q and k
  std::unique_ptr<RotaryTable> rotary;             // rotary: cos/sin per position
  int64_t sinkCols = 0;                            // Mask::WindowSink: sink keys
  std::vector<int32_t> cu;                         // Kind::Packed: first token of each sequence

  Impl(const Config &config, ThreadPool &p) : c(config), pool(p) {
    int threads = pool.size();
    scores.resize(threads);
    scratch.resize(threads);
    if (c.kind == Kind::Sdpa) {
      if (c.rotary) {
        qRot.resize(c.B * c.H * c.Lq * c.D);
        kRot.resize(c.B * c.G * c.Lk * c.D);
        rotary = std::make_unique<RotaryTable>(c.Lk, c.D, pool);
      }
      if (c.mask == Mask::WindowSink)
        sinkCols = std::min(c.sink, c.Lk);
      int64_t r = c.H / c.G;
      int64_t maxRows = 0;
      for (int64_t b = 0; b < c.B; ++b) {
        if (c.Lq <= kTileRows) {
          for (int64_t g = 0; g < c.G; ++g)
            items.push_back({b, g, g * r, g * r + r, 0, c.Lq});
          maxRows = r * c.Lq;
        } else {
          for (int64_t h = 0; h < c.H; ++h)
            for (int64_t i0 = 0; i0 < c.Lq; i0 += kTileRows)
              items.push_back({b, h / r, h, h + 1, i0, std::min(c.Lq, i0 + kTileRows)});
          maxRows = kTileRows;
        }
      }
      for (auto &s : scores)
        s.resize(maxRows * (c.Lk + sinkCols) + maxRows);
    } else if (c.kind == Kind::Packed) {
      // One item per (sequence, head, tile of kTileRows queries).
      cu = cuSeqlens(c);
      for (size_t b = 0; b < c.seqLens.size(); ++b)
        for (int64_t h = 0; h < c.H; ++h)
          for (int64_t i0 = 0; i0 < c.seqLens[b]; i0 += kTileRows)
            items.push_back({int64_t(b), h / (c.H / c.G), h, h + 1,
                             i0, std::min(c.seqLens[b], i0 + kTileRows)});
      int64_t longest = 0;
      for (int64_t L : c.seqLens)
        longest = std::max(longest, L);
      for (auto &s : scores)
        s.resize(kTileRows * longest + kTileRows);
    } else if (c.kind == Kind::Additive) {
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t h = 0; h < c.H; ++h)
          items.push_back({b, h / (c.H / c.G), h, h + 1, 0, c.Lq});
      for (int t = 0; t < threads; ++t) {
        scores[t].resize(c.Lq * c.Lk + c.Lq);
        scratch[t].resize(c.Lk * c.hidden + c.Lq * c.hidden + c.hidden);
      }
    } else {
      Q.resize(c.B * c.Lq * c.H * c.D);
      K.resize(c.B * c.Lk * c.G * c.D);
      V.resize(c.B * c.Lk * c.G * c.Dv);
      A.resize(c.B * c.Lq * c.H * c.Dv);
      for (auto &s : scores)
        s.resize(c.Lq * c.Lk + c.Lq);
    }
  }

  void sdpaItem(const Item &it, const float *q, const float *k, const float *v,
                float *out, std::vector<float> &ws) {
    const int64_t rowsPerHead = it.i1 - it.i0;
    const int64_t M = (it.h1 - it.h0) * rowsPerHead;
    int64_t k0, k1, lo, hi;
    c.visibleRange(it.i0, k0, hi);
    c.visibleRange(it.i1 - 1, lo, k1);
    float *optr = out + ((it.b * c.H + it.h0) * c.Lq + it.i0) * c.Dv;
    if (k1 <= k0) {
      std::fill(optr, optr + M * c.Dv, 0.f);
      return;
    }
    const int64_t kn = k1 - k0;
    float *S = ws.data(), *inv = ws.data() + M * kn, *Ssink = inv + M;
    const float *qptr = q + ((it.b * c.H + it.h0) * c.Lq + it.i0) * c.D;
    const float *kptr = k + ((it.b * c.G + it.g) * c.Lk + k0) * c.D;
    const float *vptr = v + ((it.b * c.G + it.g) * c.Lk + k0) * c.Dv;
    const bool rowByRow = M <= kGemvRows;
    if (rowByRow)
      for (int64_t m = 0; m < M; ++m)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, kn, c.D, c.scale(), kptr, c.D,
                    qptr + m * c.D, 1, 0.f, S + m * kn, 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, kn, c.D, c.scale(),
                  qptr, c.D, kptr, c.D, 0.f, S, kn);
    const float *kbase = k + (it.b * c.G + it.g) * c.Lk * c.D;
    const float *vbase = v + (it.b * c.G + it.g) * c.Lk * c.Dv;
    if (sinkCols)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, sinkCols, c.D, c.scale(),
                  qptr, c.D, kbase, c.D, 0.f, Ssink, sinkCols);
    for (int64_t m = 0; m < M; ++m) {
      int64_t i = it.i0 + m % rowsPerHead;
      c.visibleRange(i, lo, hi);
      inv[m] = sinkCols ? softmaxRowWithSinks(S + m * kn, kn, k0, lo, hi, Ssink + m * sinkCols,
                                              sinkCols, c.sinkEnd(i))
                        : softmaxRow(S + m * kn, kn, k0, lo, hi);
    }
    if (rowByRow)
      for (int64_t m = 0; m < M; ++m)
        cblas_sgemv(CblasRowMajor, CblasTrans, kn, c.Dv, 1.f, vptr, c.Dv,
                    S + m * kn, 1, 0.f, optr + m * c.Dv, 1);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, c.Dv, kn, 1.f, S,
                  kn, vptr, c.Dv, 0.f, optr, c.Dv);
    if (sinkCols)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, c.Dv, sinkCols, 1.f, Ssink,
                  sinkCols, vbase, c.Dv, 1.f, optr, c.Dv);
    for (int64_t m = 0; m < M; ++m)
      cblas_sscal(c.Dv, inv[m], optr + m * c.Dv, 1);
  }

  /// Packed: rows i0 .. i1 of head h0 of sequence b (tokens [T, heads,
  /// width], so every leading dimension is heads x width); causal within the
  /// sequence.
  void packedItem(const Item &it, const float *q, const float *k, const float *v, float *out,
                  std::vector<float> &ws) {
    const int64_t t0 = cu[it.b], M = it.i1 - it.i0, L = c.seqLens[it.b];
    const int64_t kn = c.mask == Mask::Causal ? it.i1 : L; // keys [0, kn) of the sequence
    const int64_t ldq = c.H * c.D, ldk = c.G * c.D, ldv = c.G * c.Dv, ldo = c.H * c.Dv;
    float *S = ws.data(), *inv = ws.data() + M * kn;
    const float *qptr = q + (t0 + it.i0) * ldq + it.h0 * c.D;
    const float *kptr = k + t0 * ldk + it.g * c.D, *vptr = v + t0 * ldv + it.g * c.Dv;
    float *optr = out + (t0 + it.i0) * ldo + it.h0 * c.Dv;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, kn, c.D, c.scale(), qptr, ldq,
                kptr, ldk, 0.f, S, kn);
    for (int64_t m = 0; m < M; ++m)
      inv[m] = softmaxRow(S + m * kn, kn, 0, 0, c.mask == Mask::Causal ? it.i0 + m + 1 : kn);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, c.Dv, kn, 1.f, S, kn, vptr, ldv,
                0.f, optr, ldo);
    for (int64_t m = 0; m < M; ++m)
      cblas_sscal(c.Dv, inv[m], optr + m * ldo, 1);
  }

  void additiveItem(const Item &it, const std::vector<Tensor> &in, float *out,
                    std::vector<float> &ws, std::vector<float> &scr) {
    const int64_t N = c.hidden, Dk = c.keyDim(), bh = it.b * c.H + it.h0;
    const float *qb = in[0].data.data() + bh * c.Lq * c.D;
    const float *kb = in[1].data.data() + (it.b * c.G + it.g) * c.Lk * Dk;
    const float *vb = in[2].data.data() + (it.b * c.G + it.g) * c.Lk * c.Dv;
    const float *wq = in[3].data.data(), *wk = in[4].data.data(),
                *wv = in[5].data.data();
    float *Kp = scr.data(), *Qp = Kp + c.Lk * N, *t = Qp + c.Lq * N;
    float *S = ws.data(), *inv = ws.data() + c.Lq * c.Lk;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c.Lk, N, Dk, 1.f, kb,
                Dk, wk, Dk, 0.f, Kp, N);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c.Lq, N, c.D, 1.f, qb,
                c.D, wq, c.D, 0.f, Qp, N);
    for (int64_t i = 0; i < c.Lq; ++i) {
      int64_t lo, hi;
      c.visibleRange(i, lo, hi);
      float *row = S + i * c.Lk;
      for (int64_t j = lo; j < hi; ++j) {
        const float *kp = Kp + j * N, *qp = Qp + i * N;
        for (int64_t u = 0; u < N; ++u)
          t[u] = qp[u] + kp[u];
        vecTanh(t, N);
        row[j] = c.scale() * vecDot(wv, t, N);
      }
      inv[i] = softmaxRow(row, c.Lk, 0, lo, hi);
    }
    float *optr = out + bh * c.Lq * c.Dv;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c.Lq, c.Dv, c.Lk,
                1.f, S, c.Lk, vb, c.Dv, 0.f, optr, c.Dv);
    for (int64_t i = 0; i < c.Lq; ++i)
      cblas_sscal(c.Dv, inv[i], optr + i * c.Dv, 1);
  }

  void projection(const std::vector<Tensor> &in, float *out) {
    const int64_t L = c.Lq, Mdl = c.modelDim, HD = c.H * c.D, GD = c.G * c.D,
                  GDv = c.G * c.Dv, HDv = c.H * c.Dv, rows = c.B * L;
    const float *x = in[0].data.data();
    // Q, K, V: one item per head's column block of each projection.
    pool.parallelFor(c.H + 2 * c.G, [&](int64_t item, int) {
      const float *w;
      float *y;
      int64_t cols, width, col0;
      if (item < c.H) {
        w = in[1].data.data(), y = Q.data(), cols = HD, width = c.D, col0 = item * c.D;
      } else if (item < c.H + c.G) {
        w = in[2].data.data(), y = K.data(), cols = GD, width = c.D,
        col0 = (item - c.H) * c.D;
      } else {
        w = in[3].data.data(), y = V.data(), cols = GDv, width = c.Dv,
        col0 = (item - c.H - c.G) * c.Dv;
      }
      // w : [cols, Mdl] (nn.Linear): rows col0 .. col0 + width of it, transposed.
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, width, Mdl,
                  1.f, x, Mdl, w + col0 * Mdl, Mdl, 0.f, y + col0, cols);
    });
    pool.parallelFor(c.B * c.H, [&](int64_t bh, int t) {
      int64_t b = bh / c.H, h = bh % c.H, g = h / (c.H / c.G);
      float *S = scores[t].data(), *inv = S + L * c.Lk;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, c.Lk, c.D,
                  c.scale(), &Q[b * L * HD + h * c.D], HD, &K[b * c.Lk * GD + g * c.D],
                  GD, 0.f, S, c.Lk);
      for (int64_t i = 0; i < L; ++i) {
        int64_t lo, hi;
        c.visibleRange(i, lo, hi);
        inv[i] = softmaxRow(S + i * c.Lk, c.Lk, 0, lo, hi);
      }
      float *a = &A[b * L * HDv + h * c.Dv];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, c.Dv, c.Lk, 1.f,
                  S, c.Lk, &V[b * c.Lk * GDv + g * c.Dv], GDv, 0.f, a, HDv);
      for (int64_t i = 0; i < L; ++i)
        cblas_sscal(c.Dv, inv[i], a + i * HDv, 1);
    });
    const int64_t block = 64;
    pool.parallelFor((rows + block - 1) / block, [&](int64_t blk, int) {
      int64_t r0 = blk * block, n = std::min(block, rows - r0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, Mdl, HDv, 1.f,
                  &A[r0 * HDv], HDv, in[4].data.data(), HDv, 0.f, out + r0 * Mdl,
                  Mdl);
    });
  }
};

BlasAttention::BlasAttention(const Config &config, ThreadPool &pool)
    : impl(new Impl(config, pool)) {}
BlasAttention::~BlasAttention() = default;

void BlasAttention::run(const std::vector<Tensor> &in, float *out) {
  Impl &m = *impl;
  if (m.c.kind == Kind::Projection)
    return m.projection(in, out);
  const float *q = in[0].data.data(), *k = in[1].data.data();
  if (m.c.rotary) {
    rotateQueryKey(m.c, *m.rotary, in, m.qRot.data(), m.kRot.data(), m.pool);
    q = m.qRot.data(), k = m.kRot.data();
  }
  m.pool.parallelFor(int64_t(m.items.size()), [&](int64_t n, int t) {
    if (m.c.kind == Kind::Sdpa)
      m.sdpaItem(m.items[n], q, k, in[2].data.data(), out, m.scores[t]);
    else if (m.c.kind == Kind::Packed)
      m.packedItem(m.items[n], q, k, in[2].data.data(), out, m.scores[t]);
    else
      m.additiveItem(m.items[n], in, out, m.scores[t], m.scratch[t]);
  });
}

} // namespace attnc_bench
