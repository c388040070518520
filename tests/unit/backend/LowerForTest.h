//===- LowerForTest.h - Back-end inputs through the real path -*- C++ -*-===//
//
// The back-end tests build their AttentionConfigs the way attnc does:
// frontend (for source text) -> MLIRGen -> the default pass pipeline ->
// convert-attn-to-halide. The MLIR module is gone when these return, so
// every test also checks that the config owns all it needs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"
#include "compiler/HalideBackend/AttentionConfig.h"

#include <string>
#include <vector>

namespace attnc::test {

/// The config of a resolved kernel spec (named `name`; keyDim and valueDim
/// default to headDim). Throws std::runtime_error with the diagnostics.
halide_backend::AttentionConfig lowerSpec(KernelSpec spec, const std::string &name);

/// The configs of every kernel of `.attn` source text.
std::vector<halide_backend::AttentionConfig> lowerSource(const std::string &source);

} // namespace attnc::test
