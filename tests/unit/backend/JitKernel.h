//===- JitKernel.h - Run a back-end kernel in the tests -----------*- C++ -*-===//
//
// The case scaffolding every back-end test shares: build a configuration's
// pipeline, schedule it for the host, bind inputs by argument name, realize
// out / weights / lse, and compare them with a float64 reference. Each test
// file keeps only what its cases are about.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionAlgorithm.h"
#include "compiler/HalideBackend/Schedules.h"

#include <Halide.h>

#include <map>
#include <string>
#include <vector>

namespace attnc::test {

/// Input buffers by argument name; names the kernel does not take are ignored.
using NamedBuffers = std::map<std::string, Halide::Buffer<>>;

/// A configuration's pipeline, built and scheduled for the host once.
class JitKernel {
public:
  explicit JitKernel(const halide_backend::AttentionConfig &config,
                     halide_backend::SchedulePolicy policy = halide_backend::SchedulePolicy::Tuned);

  const halide_backend::AlgorithmFuncs &funcs() const { return funcs_; }

  /// Binds every input of the kernel from `inputs` (a missing one is a test
  /// failure, and nothing runs) and realizes the outputs into `outputs`.
  void run(const NamedBuffers &inputs, std::vector<Halide::Buffer<>> outputs);

private:
  halide_backend::AlgorithmFuncs funcs_;
  Halide::Pipeline pipeline_;
};

/// The attention outputs of one run, in logical row-major order.
struct AttentionOutputs {
  std::vector<float> out, weights, lse;
};

/// Runs an attention kernel whose `out` has `outShape` and, when the
/// configuration returns them, weights [B, H, Lq, Lk] and lse [B, H, Lq].
AttentionOutputs runAttention(JitKernel &kernel, const halide_backend::KernelDesc &desc,
                              const NamedBuffers &inputs, const std::vector<int> &outShape,
                              int Lk);

/// The largest |a - b|. Equal infinities agree; a NaN counts as infinitely far.
double maxDiff(const std::vector<float> &a, const std::vector<double> &b);

/// Expects out, and the weights and lse the configuration returns, within
/// `tolerance` of the reference; lse is relative to max(1, |ref|), and must be
/// -inf exactly where the reference's is (fully masked rows).
void expectNear(const AttentionOutputs &got, const std::vector<double> &out,
                const std::vector<double> &weights, const std::vector<double> &lse,
                const halide_backend::KernelDesc &desc, double tolerance = 1e-4);

} // namespace attnc::test
