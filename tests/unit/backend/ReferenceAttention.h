//===- ReferenceAttention.h - float64 attention for tests -*- C++ -*-===//
//
// A direct transcription of docs/language.md §2 in double precision, on the
// logical row-major tensors of the kernel arguments. Used to check every
// pipeline the back end builds; it favours obviousness over speed.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include <functional>
#include <vector>

namespace attnc::test {

struct RefSizes {
  int B, H, G, Lq, Lk, D, Dv;
};

struct RefInputs {
  const float *q, *k, *v; // logical layouts per spec.layout
  const int32_t *validLen = nullptr;
  const uint8_t *mask = nullptr;       // [B, Lq, Lk]
  const float *scoreW = nullptr;        // general: [D, D]
  const int32_t *prefixLen = nullptr;   // [B]
  const uint8_t *keyPadding = nullptr;  // [B, Lk], nonzero = padding
};

struct RefOutputs {
  std::vector<double> out, weights, lse; // out in spec.layout; weights [B,H,Lq,Lk]; lse [B,H,Lq]
};

/// Scale, softcap, alibi, every built-in mask term and their unions (groups), general
/// and dot scores, both layouts.
RefOutputs referenceAttention(const halide_backend::KernelDesc &spec, double scale, const RefSizes &s,
                              const RefInputs &in);

} // namespace attnc::test
