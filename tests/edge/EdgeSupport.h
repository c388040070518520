//===- EdgeSupport.h - Shared pieces of the edge-case tests -------*- C++ -*-===//
//
// The kernels of edge.attn, compiled by attnc at build time into one shared
// library (ATTN_EDGE_LIB) and run through libattnrt; a float64 reference of
// docs/language.md §2 for the masks they use (causal, valid_len, GQA); and
// the spec's error bound, max |out - ref| <= 1e-4 * max(1, max |v|).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "attn/runtime.hpp"

#include <cstdint>
#include <string>
#include <vector>

// Defined in AddressSanitizer builds (clang and gcc spell it differently),
// where RLIMIT_AS and resident-memory checks do not apply.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ATTNC_EDGE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ATTNC_EDGE_ASAN 1
#endif

namespace attnc::edge {

/// The library compiled from edge.attn, opened once per process.
const attn::Library &edgeLibrary();
attn::Kernel edgeKernel(const std::string &name);

/// One problem in bhsd layout. validLen empty = no valid_len input.
struct Problem {
  int B = 1, H = 1, G = 1, Lq = 1, Lk = 1, D = 1, Dv = 1;
  double scale = 1.0;
  bool causal = false;
  std::vector<int32_t> validLen;
  std::vector<float> q, k, v;
};

struct Result {
  std::vector<float> out, weights, lse; // weights empty when not an output
};

struct Reference {
  std::vector<double> out, weights, lse;
};

/// Runs `kernel` on `p` (inputs in contract order, then out, [weights,] lse);
/// throws attn::Error on refusal or kernel failure.
Result run(const attn::Kernel &kernel, const Problem &p, bool withWeights);

/// docs/language.md §2 in float64: fully masked rows give out = 0,
/// weights = 0 and lse = -inf.
Reference reference(const Problem &p);

/// max |a - b| over finite values; +inf when one side is not finite where
/// the other is, or the sizes differ.
double maxAbsDiff(const std::vector<float> &got, const std::vector<double> &want);

/// The spec's bound for this problem's values.
double errorBound(const Problem &p);

/// GoogleTest checks of `got` against reference(p): out within errorBound,
/// weights within 1e-4, lse within 1e-4 * max(1, |lse|), non-finite values
/// (lse = -inf of masked rows) exactly equal.
void expectMatchesReference(const Problem &p, const Result &got);

/// Uniform [-1, 1] values, deterministic in `seed`.
std::vector<float> uniform(size_t n, uint32_t seed);

} // namespace attnc::edge
