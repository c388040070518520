//===- JitKernel.cpp - Run a back-end kernel in the tests -----------------===//
#include "tests/unit/backend/JitKernel.h"

#include "tests/unit/backend/TestBuffers.h"

#include <gtest/gtest.h>

#include <cmath>

namespace attnc::test {

using namespace halide_backend;

JitKernel::JitKernel(const AttentionConfig &config, SchedulePolicy policy)
    : funcs_(buildAlgorithm(config)) {
  applySchedule(funcs_, config, policy, Halide::get_jit_target_from_environment());
  pipeline_ = funcs_.pipeline();
}

void JitKernel::run(const NamedBuffers &inputs, std::vector<Halide::Buffer<>> outputs) {
  for (Halide::ImageParam &p : funcs_.inputs) {
    auto found = inputs.find(p.name());
    if (found == inputs.end()) {
      ADD_FAILURE() << "no buffer for the kernel's input " << p.name();
      return;
    }
    p.set(found->second);
  }
  Halide::Realization realization(outputs);
  pipeline_.realize(realization);
}

static size_t product(const std::vector<int> &shape) {
  size_t n = 1;
  for (int s : shape)
    n *= s;
  return n;
}

AttentionOutputs runAttention(JitKernel &kernel, const KernelDesc &desc, const NamedBuffers &inputs,
                              const std::vector<int> &outShape, int Lk) {
  // out is [B, H, Lq, Dv] or [B, Lq, H, Dv]; weights and lse are always head-major.
  bool bshd = desc.layout == Layout::BSHD;
  int B = outShape[0], H = outShape[bshd ? 2 : 1], Lq = outShape[bshd ? 1 : 2];
  AttentionOutputs got;
  got.out.resize(product(outShape));
  std::vector<Halide::Buffer<>> outputs{view(got.out, outShape)};
  if (desc.outputWeights) {
    got.weights.resize((size_t)B * H * Lq * Lk);
    outputs.push_back(view(got.weights, {B, H, Lq, Lk}));
  }
  if (desc.outputLse) {
    got.lse.resize((size_t)B * H * Lq);
    outputs.push_back(view(got.lse, {B, H, Lq}));
  }
  kernel.run(inputs, std::move(outputs));
  return got;
}

double maxDiff(const std::vector<float> &a, const std::vector<double> &b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t x = 0; x < std::min(a.size(), b.size()); ++x) {
    if (std::isinf(b[x]) && a[x] == b[x])
      continue;
    double diff = std::abs(a[x] - b[x]);
    worst = std::isnan(diff) ? INFINITY : std::max(worst, diff);
  }
  return worst;
}

void expectNear(const AttentionOutputs &got, const std::vector<double> &out,
                const std::vector<double> &weights, const std::vector<double> &lse,
                const KernelDesc &desc, double tolerance) {
  EXPECT_LE(maxDiff(got.out, out), tolerance) << "out";
  if (desc.outputWeights)
    EXPECT_LE(maxDiff(got.weights, weights), tolerance) << "weights";
  if (!desc.outputLse)
    return;
  ASSERT_EQ(got.lse.size(), lse.size());
  for (size_t x = 0; x < lse.size(); ++x) {
    if (std::isinf(lse[x]))
      EXPECT_TRUE(std::isinf(got.lse[x]) && got.lse[x] < 0) << "lse[" << x << "] = " << got.lse[x];
    else
      EXPECT_NEAR(got.lse[x], lse[x], tolerance * std::max(1.0, std::abs(lse[x])))
          << "lse[" << x << "]";
  }
}

} // namespace attnc::test
