//===- Bf16PairLoads.h - bf16 rows widened a 32-bit word at a time -*- C++ -*-===//
//
// A bf16 value is the high half of its float32: widening a vector of them is
// a zero-extension and a shift, two instructions per vector of float32
// (vpmovzxwd, vpslld). Read as 32-bit words, a row holds its channels in
// pairs: each word's float32 of its even channel is `word << 16`, of its odd
// channel `word & 0xffff0000`, one instruction per vector, each fed straight
// from memory. Decode with bf16 K and V rows read in place is bound by these
// instructions on Zen 4 (AlgorithmFuncs::evenOddLanes sums its channels in
// that order); this pass turns each of its widened stride-2 loads of a row
// into the word load and the one instruction.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <set>
#include <string>

namespace attnc::halide_backend {

/// A custom lowering pass (Pipeline::add_custom_lowering_pass): every
/// `float32xN(b[ramp(x, 2, N)])` of a bf16 buffer b named in `buffers` whose
/// x has a known parity (with b's mins at 0) becomes the N 32-bit words from
/// b[x - x % 2] shifted left by 16 (x even) or masked to their high halves
/// (x odd). The buffers' rows must be of an even number of channels, so
/// every word read is the pair of two channels of one row.
Halide::Internal::IRMutator *newBf16PairLoadsPass(std::set<std::string> buffers);

} // namespace attnc::halide_backend
