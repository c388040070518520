//===- Limits.h - The documented sane maxima of the frontend ------*- C++ -*-===//
//
// Every size and every structure the frontend accepts is bounded, so that no
// input (however large or hostile) can overflow an integer, the stack or
// memory. The values are documented in docs/language.md ("Limits"); each
// limit, when exceeded, is a located error rather than a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace attnc {
namespace limits {

/// heads, kv_heads, head_dim, key_dim, value_dim, model_dim, additive hidden.
constexpr int64_t kMaxDim = int64_t(1) << 20;
/// batch, seq_q, seq_k, window(W) and constant dimensions of declared inputs:
/// Halide buffer extents are int32.
constexpr int64_t kMaxSeq = INT32_MAX;
/// Tokens per block of a paged KV cache (vLLM uses 8 to 32).
constexpr int64_t kMaxCacheBlock = 65536;
/// Elements of one kernel argument whose dimensions are all fixed: Halide
/// addresses a buffer with int32 strides and offsets.
constexpr int64_t kMaxElements = INT32_MAX;
/// Nesting of parentheses, calls, indexing and unary operators.
constexpr unsigned kMaxNesting = 256;
/// Nodes in one field value (bounds the depth of every tree walk).
constexpr unsigned kMaxExprNodes = 4096;
/// Kernels in one file, declared inputs per kernel, rank of an input.
constexpr unsigned kMaxKernels = 1024;
constexpr unsigned kMaxInputs = 64;
/// Fields per kernel (a valid kernel has at most 20; duplicates are errors).
constexpr unsigned kMaxFields = 256;
constexpr unsigned kMaxInputRank = 8;
/// Bytes of one source file. attnc checks the size before reading and reads
/// at most this much (a device or a pipe cannot feed it without end), and
/// the driver refuses longer text handed over by the runtime.
constexpr int64_t kMaxSourceBytes = int64_t(100) << 20;
/// Errors reported before the compiler stops.
constexpr unsigned kMaxErrors = 20;

} // namespace limits
} // namespace attnc
