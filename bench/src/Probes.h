//===- Probes.h - The machine's FP32 FMA peak and memory bandwidth -*- C++ -*-===//
//
// Measures the roofs every result is compared with, in the same run: the
// FP32 FMA peak with AVX-512 (when the CPU has it) and AVX2+FMA, and the
// STREAM triad bandwidth, each on one thread and on every thread of the pool;
// and a read-only bandwidth probe that memory-bound rows take beside them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "bench/src/ThreadPool.h"

#include <string>

namespace attnc_bench {

struct PeakResult {
  std::string isa;       // "avx512f", "avx2+fma", "avx512bf16" or "none"
  double gflops = 0;     // best of several trials
};

/// FP32 FMA peak of `isa` ("avx512f" or "avx2"), or the peak of bf16 pairs
/// summed into f32 lanes ("avx512bf16": vdpbf16ps, 4 FLOPs per lane), on
/// every worker of `pool`. Returns isa "none" when the CPU lacks the ISA.
PeakResult measureFmaPeak(const std::string &isa, ThreadPool &pool);

/// STREAM triad a[i] = b[i] + s * c[i] over arrays far larger than the caches,
/// counting 3 x 4 bytes per element (2 reads, 1 write); best of several trials, GB/s.
double measureTriad(ThreadPool &pool, int64_t elements);

/// Read-only bandwidth: the sum of two arrays of `bytesPerArray` each (far
/// beyond any cache), every worker reading its own slice, as decode reads K
/// and V; best of several trials, GB/s. The machine's bandwidth drifts with
/// its neighbours, so memory-bound rows take this probe right beside them.
double measureReadBandwidth(ThreadPool &pool, int64_t bytesPerArray);

/// The same read of two arrays in chunks of `chunkBytes` taken in a shuffled
/// order, as a paged KV cache's pages: a worker reads its share of the order,
/// chunk by chunk, asking for the next chunk's lines while it reads one. A
/// paged decode's pages are as scattered, so this is what its reads can reach.
double measureScatteredReadBandwidth(ThreadPool &pool, int64_t bytesPerArray, int64_t chunkBytes);

bool cpuHasAvx512();
bool cpuHasAvx2Fma();
std::string cpuModelName();

} // namespace attnc_bench
