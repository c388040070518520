//===- DecodeDispatch.h - A decode variant of cache kernels, picked by Lq -*- C++ -*-===//
//
// A KV-cache kernel with a run-time seq_q serves chunked prefill (Lq > 1) and
// decode (Lq = 1), as examples/generate does. Compiled for a run-time Lq it
// has prefill's tiles: a decode step filled 4 rows of a 32-row query tile
// and ran 3.5x slower than the same kernel with `seq_q = 1` (H=32, G=8,
// D=128, 8192 cached keys). Such kernels get a second variant compiled with
// seq_q = 1 (decode's schedule: a GQA group's query heads as the tile's rows,
// keys split across the threads), and NAME / NAME_argv call it when the
// call's Lq is 1. The price is a second lowering, about twice the compile.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include <vector>

namespace llvm {
class Module;
}

namespace attnc::halide_backend {

/// The decode variants of `configs` (named NAME__lq1): one for each forward
/// kernel with a KV cache and a run-time seq_q.
std::vector<AttentionConfig> decodeVariants(const std::vector<AttentionConfig> &configs);

/// In one target's module holding NAME and NAME__lq1 for each kernel of
/// `configs` that has a decode variant: renames NAME and NAME_argv to
/// NAME__lqn... and adds NAME and NAME_argv that call NAME__lq1... when the
/// call's Lq (an extent of the first argument that has it) is 1 and
/// NAME__lqn... otherwise. NAME_metadata stays the general kernel's.
void addDecodeDispatch(llvm::Module &module, const std::vector<AttentionConfig> &configs);

} // namespace attnc::halide_backend
