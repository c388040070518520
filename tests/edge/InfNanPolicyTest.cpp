//===- InfNanPolicyTest.cpp - What non-finite inputs may and may not do ----===//
//
// The policy of docs/robustness.md ("inf and NaN"): kernels do not scan
// their inputs for inf or NaN. An output row that reads a non-finite value
// is unspecified (NaN, inf, or finite but wrong: a NaN score is dropped like
// a masked key); every other row is exact. Which rows read what: q[b,h,i]
// feeds row (b,h,i) only; k[b,g,j] the rows of batch b and kv head g that see
// key j; v[b,g,j] any row of batch b and kv head g. Nothing crashes and the
// call still succeeds. Each case plants one value and checks the rest.
//
//===----------------------------------------------------------------------===//
#include "tests/edge/EdgeSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <string>

using namespace attnc::edge;

namespace {

enum class Where { Q, K, V };

struct PolicyCase {
  const char *name;
  Where where;
  float value;
};

/// Names the case in test output (instead of its bytes).
void PrintTo(const PolicyCase &c, std::ostream *os) { *os << c.name; }

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

class InfNanPolicy : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(InfNanPolicy, OnlyRowsThatReadTheValueAreAffected) {
  const PolicyCase &c = GetParam();
  // masked kernel: H = 4, G = 2 (heads 0, 1 read kv head 0), causal.
  Problem p;
  p.B = 2, p.H = 4, p.G = 2, p.Lq = 5, p.Lk = 7, p.D = 4, p.Dv = 4, p.scale = 0.5;
  p.causal = true;
  p.validLen = {7, 7};
  p.q = uniform(size_t(p.B) * p.H * p.Lq * p.D, 70);
  p.k = uniform(size_t(p.B) * p.G * p.Lk * p.D, 71);
  p.v = uniform(size_t(p.B) * p.G * p.Lk * p.Dv, 72);
  Reference clean = reference(p);

  // Plant the value in batch 0: query row (h 1, i 2), or key / value row
  // (g 0, j 6), which causal alignment (ip = i + 2) shows to row i = 4 only.
  const int plantedRow = 2, plantedKey = 6;
  switch (c.where) {
  case Where::Q:
    p.q[((size_t(0) * p.H + 1) * p.Lq + plantedRow) * p.D + 3] = c.value;
    break;
  case Where::K:
    p.k[(size_t(0) * p.Lk + plantedKey) * p.D + 1] = c.value;
    break;
  case Where::V:
    p.v[(size_t(0) * p.Lk + plantedKey) * p.Dv + 2] = c.value;
    break;
  }
  Result r = run(edgeKernel("masked"), p, true);

  double bound = errorBound(p);
  for (int b = 0; b < p.B; ++b)
    for (int h = 0; h < p.H; ++h)
      for (int i = 0; i < p.Lq; ++i) {
        bool reads = false;
        if (b == 0 && c.where == Where::Q)
          reads = h == 1 && i == plantedRow;
        if (b == 0 && c.where == Where::K)
          reads = h / 2 == 0 && i + 2 >= plantedKey;
        if (b == 0 && c.where == Where::V)
          reads = h / 2 == 0;
        if (reads)
          continue; // unspecified
        size_t row = (size_t(b) * p.H + h) * p.Lq + i;
        SCOPED_TRACE("b=" + std::to_string(b) + " h=" + std::to_string(h) +
                     " i=" + std::to_string(i));
        for (int d = 0; d < p.Dv; ++d)
          ASSERT_NEAR(r.out[row * p.Dv + d], clean.out[row * p.Dv + d], bound);
        ASSERT_NEAR(r.lse[row], clean.lse[row], 1e-4 * std::max(1.0, std::fabs(clean.lse[row])));
        for (int j = 0; j < p.Lk; ++j)
          ASSERT_NEAR(r.weights[row * p.Lk + j], clean.weights[row * p.Lk + j], 1e-4);
      }
}

INSTANTIATE_TEST_SUITE_P(
    Edge, InfNanPolicy,
    ::testing::Values(PolicyCase{"nan_in_q", Where::Q, kNan}, PolicyCase{"inf_in_q", Where::Q, kInf},
                      PolicyCase{"minus_inf_in_q", Where::Q, -kInf},
                      PolicyCase{"nan_in_k", Where::K, kNan}, PolicyCase{"inf_in_k", Where::K, kInf},
                      PolicyCase{"minus_inf_in_k", Where::K, -kInf},
                      PolicyCase{"nan_in_v", Where::V, kNan}, PolicyCase{"inf_in_v", Where::V, kInf},
                      PolicyCase{"minus_inf_in_v", Where::V, -kInf}),
    [](const ::testing::TestParamInfo<PolicyCase> &info) { return std::string(info.param.name); });

} // namespace
