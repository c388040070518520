//===- HalideText.h - A readable print of algorithm and schedule -*- C++ -*-===//
//
// `attnc --emit=halide`: every Func's definition (pure and update, with its
// reduction domains), then the schedule that was chosen (policy, tiles, what
// is parallel and vectorized) and Halide's own loop-nest summary.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionAlgorithm.h"

#include <string>

namespace attnc::halide_backend {

/// The print of one scheduled kernel.
std::string printHalide(const AlgorithmFuncs &funcs);

} // namespace attnc::halide_backend
