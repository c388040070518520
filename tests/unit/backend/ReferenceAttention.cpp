//===- ReferenceAttention.cpp - float64 attention for tests -------------===//
//
// One query row at a time: scores, visibility, a max-shifted softmax over the
// visible keys, then the weighted sum of values. Rows with no visible key get
// out = 0, weights = 0, lse = -inf.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/backend/ReferenceAttention.h"

#include <cmath>
#include <limits>

namespace attnc::test {

RefOutputs referenceAttention(const halide_backend::KernelDesc &spec, double scale, const RefSizes &s,
                              const RefInputs &in) {
  bool bshd = spec.layout == Layout::BSHD;
  auto qAt = [&](int b, int h, int i, int d) {
    size_t idx = bshd ? (((size_t)b * s.Lq + i) * s.H + h) * s.D + d
                      : (((size_t)b * s.H + h) * s.Lq + i) * s.D + d;
    return (double)in.q[idx];
  };
  auto kvAt = [&](const float *t, int width, int b, int g, int j, int d) {
    size_t idx = bshd ? (((size_t)b * s.Lk + j) * s.G + g) * width + d
                      : (((size_t)b * s.G + g) * s.Lk + j) * width + d;
    return (double)t[idx];
  };
  RefOutputs r;
  r.out.assign((size_t)s.B * s.H * s.Lq * s.Dv, 0.0);
  r.weights.assign((size_t)s.B * s.H * s.Lq * s.Lk, 0.0);
  r.lse.assign((size_t)s.B * s.H * s.Lq, 0.0);
  std::vector<double> sc(s.Lk);
  std::vector<char> vis(s.Lk);
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H; ++h) {
      int g = h / (s.H / s.G);
      for (int i = 0; i < s.Lq; ++i) {
        long ip = i + (long)s.Lk - s.Lq;
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < s.Lk; ++j) {
          double dot = 0;
          if (spec.score == ScoreKind::General) {
            for (int d1 = 0; d1 < s.D; ++d1)
              for (int d2 = 0; d2 < s.D; ++d2)
                dot += qAt(b, h, i, d1) * in.scoreW[d1 * s.D + d2] * kvAt(in.k, s.D, b, g, j, d2);
          } else {
            for (int d = 0; d < s.D; ++d)
              dot += qAt(b, h, i, d) * kvAt(in.k, s.D, b, g, j, d);
          }
          double v = scale * dot;
          if (spec.softcap)
            v = *spec.softcap * std::tanh(v / *spec.softcap);
          if (spec.bias == BiasKind::Alibi)
            v += -alibiSlope(h, s.H) * (double)(ip - j);
          auto sees = [&](const halide_backend::MaskTermDesc &t) {
            switch (t.kind) {
            case MaskKind::Causal: return j <= ip;
            case MaskKind::Window: return j <= ip && j > ip - t.width;
            case MaskKind::Sink: return j < t.width;
            case MaskKind::ValidLen: return j < in.validLen[b];
            case MaskKind::Prefix: return j < in.prefixLen[b];
            case MaskKind::KeyPadding: return in.keyPadding[(size_t)b * s.Lk + j] == 0;
            case MaskKind::Input: return in.mask[((size_t)b * s.Lq + i) * s.Lk + j] != 0;
            case MaskKind::Custom: break;
            }
            return true;
          };
          // Some group (all terms when there are no groups) sees every term.
          bool visible = spec.maskGroups.empty();
          for (const halide_backend::MaskTermDesc &t : spec.masks)
            visible = visible && sees(t);
          for (const std::vector<int> &group : spec.maskGroups) {
            bool all = true;
            for (int n : group)
              all = all && sees(spec.masks[(size_t)n]);
            visible = visible || all;
          }
          sc[j] = v;
          vis[j] = visible;
          if (visible)
            m = std::max(m, v);
        }
        double l = 0;
        for (int j = 0; j < s.Lk; ++j)
          if (vis[j])
            l += std::exp(sc[j] - m);
        size_t row = ((size_t)b * s.H + h) * s.Lq + i;
        r.lse[row] = l > 0 ? m + std::log(l) : -std::numeric_limits<double>::infinity();
        for (int j = 0; j < s.Lk; ++j) {
          double p = (vis[j] && l > 0) ? std::exp(sc[j] - m) / l : 0.0;
          r.weights[row * s.Lk + j] = p;
          for (int d = 0; d < s.Dv; ++d) {
            size_t o = bshd ? (((size_t)b * s.Lq + i) * s.H + h) * s.Dv + d
                            : row * s.Dv + d;
            r.out[o] += p * kvAt(in.v, s.Dv, b, g, j, d);
          }
        }
      }
    }
  return r;
}

} // namespace attnc::test
