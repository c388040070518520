//===- Probes.cpp - The machine's FMA peaks and memory bandwidth ---------===//
//
// The peak kernels keep 12-16 independent vector accumulators, more than FMA
// latency x FMA ports on current x86 cores, so the loop is throughput bound;
// one of them measures AVX-512 BF16's vdpbf16ps (bf16 pairs into f32 lanes).
// They are compiled for their ISA with function target attributes and chosen
// by cpuid, so the binary itself runs on any x86-64. The triad touches its
// arrays first from the worker that owns each slice (first-touch placement).
//
//===----------------------------------------------------------------------===//
#include "bench/src/Probes.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

namespace attnc_bench {

bool cpuHasAvx512() { return __builtin_cpu_supports("avx512f"); }
bool cpuHasAvx2Fma() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos)
        return line.substr(colon + 2);
    }
  return "unknown";
}

// 16 zmm accumulators leave 16 of AVX-512's 32 registers free; AVX2 has 16
// ymm registers, so 12 accumulators plus the two operands avoid spills.
static constexpr int kAccumulators512 = 16;
static constexpr int kAccumulators256 = 12;

// Returns FLOPs done; `seed` comes from memory so nothing folds away.
__attribute__((target("avx512f"))) static float
fmaLoopAvx512(int64_t iterations, const float *seed) {
  __m512 acc[kAccumulators512];
  for (int a = 0; a < kAccumulators512; ++a)
    acc[a] = _mm512_set1_ps(seed[0] + a);
  const __m512 mul = _mm512_set1_ps(seed[1]);
  const __m512 add = _mm512_set1_ps(seed[2]);
  for (int64_t it = 0; it < iterations; ++it)
    for (int a = 0; a < kAccumulators512; ++a)
      acc[a] = _mm512_fmadd_ps(acc[a], mul, add);
  __m512 sum = acc[0];
  for (int a = 1; a < kAccumulators512; ++a)
    sum = _mm512_add_ps(sum, acc[a]);
  return _mm512_reduce_add_ps(sum);
}

__attribute__((target("avx2,fma"))) static float
fmaLoopAvx2(int64_t iterations, const float *seed) {
  __m256 acc[kAccumulators256];
  for (int a = 0; a < kAccumulators256; ++a)
    acc[a] = _mm256_set1_ps(seed[0] + a);
  const __m256 mul = _mm256_set1_ps(seed[1]);
  const __m256 add = _mm256_set1_ps(seed[2]);
  for (int64_t it = 0; it < iterations; ++it)
    for (int a = 0; a < kAccumulators256; ++a)
      acc[a] = _mm256_fmadd_ps(acc[a], mul, add);
  __m256 sum = acc[0];
  for (int a = 1; a < kAccumulators256; ++a)
    sum = _mm256_add_ps(sum, acc[a]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  float total = 0;
  for (float l : lanes)
    total += l;
  return total;
}

// vdpbf16ps: per f32 lane, two bf16 products added to the accumulator.
__attribute__((target("avx512f,avx512bf16"))) static float
bf16DotLoopAvx512(int64_t iterations, const float *seed) {
  __m512 acc[kAccumulators512];
  for (int a = 0; a < kAccumulators512; ++a)
    acc[a] = _mm512_set1_ps(seed[0] + a);
  const __m512bh mul = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed[1]), _mm512_set1_ps(seed[1]));
  const __m512bh add = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed[2]), _mm512_set1_ps(seed[2]));
  for (int64_t it = 0; it < iterations; ++it)
    for (int a = 0; a < kAccumulators512; ++a)
      acc[a] = _mm512_dpbf16_ps(acc[a], mul, add);
  __m512 sum = acc[0];
  for (int a = 1; a < kAccumulators512; ++a)
    sum = _mm512_add_ps(sum, acc[a]);
  return _mm512_reduce_add_ps(sum);
}

static double seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

PeakResult measureFmaPeak(const std::string &isa, ThreadPool &pool) {
  PeakResult result;
  bool bf16 = isa == "avx512bf16";
  bool avx512 = isa == "avx512f" || bf16;
  bool present = bf16     ? cpuHasAvx512() && __builtin_cpu_supports("avx512bf16")
                 : avx512 ? cpuHasAvx512()
                          : cpuHasAvx2Fma();
  if (!present) {
    result.isa = "none";
    return result;
  }
  result.isa = bf16 ? "avx512bf16" : avx512 ? "avx512f" : "avx2+fma";
  // Multiply-adds per instruction: one per f32 lane, two for vdpbf16ps.
  const int lanes = bf16 ? 32 : avx512 ? 16 : 8;
  // Short trials, many of them: on a shared machine the best trial is the one
  // nobody interrupted (~5-20 ms each).
  const int64_t iterations = 2'000'000;
  // Volatile seed: the compiler cannot know the values.
  static volatile float seedStore[3] = {0.5f, 0.999999f, 1e-7f};
  std::atomic<float> sink{0};
  double best = 0;
  for (int trial = 0; trial < 40; ++trial) {
    double start = seconds();
    pool.runOnAll([&](int) {
      float seed[3] = {seedStore[0], seedStore[1], seedStore[2]};
      float r = bf16     ? bf16DotLoopAvx512(iterations, seed)
                : avx512 ? fmaLoopAvx512(iterations, seed)
                         : fmaLoopAvx2(iterations, seed);
      float cur = sink.load();
      sink.compare_exchange_strong(cur, cur + r);
    });
    double elapsed = seconds() - start;
    const int accs = avx512 ? kAccumulators512 : kAccumulators256;
    double flops = 2.0 * lanes * accs * double(iterations) * pool.size();
    best = std::max(best, flops / elapsed / 1e9);
  }
  if (sink.load() == 12345.f) // keep the result alive
    std::abort();
  result.gflops = best;
  return result;
}

double measureTriad(ThreadPool &pool, int64_t n) {
  // Raw allocations: each worker first-touches its own slice below.
  float *pa = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  float *pb = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  float *pc = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  const int threads = pool.size();
  auto slice = [&](int t, int64_t &lo, int64_t &hi) {
    lo = n * t / threads;
    hi = n * (t + 1) / threads;
  };
  pool.runOnAll([&](int t) {
    int64_t lo, hi;
    slice(t, lo, hi);
    for (int64_t i = lo; i < hi; ++i) {
      pa[i] = 0.f;
      pb[i] = 1.f;
      pc[i] = 2.f;
    }
  });
  const float s = 3.f;
  double best = 0;
  for (int trial = 0; trial < 12; ++trial) {
    double start = seconds();
    pool.runOnAll([&](int t) {
      int64_t lo, hi;
      slice(t, lo, hi);
      float *__restrict__ ra = pa;
      const float *__restrict__ rb = pb;
      const float *__restrict__ rc = pc;
      for (int64_t i = lo; i < hi; ++i)
        ra[i] = rb[i] + s * rc[i];
    });
    double elapsed = seconds() - start;
    if (trial > 0) // the first trial warms the page tables
      best = std::max(best, 3.0 * 4.0 * double(n) / elapsed / 1e9);
  }
  std::free(pa);
  std::free(pb);
  std::free(pc);
  return best;
}

/// The read bandwidth of `read(t, pa, pb)`, worker t's sum over its share of
/// two arrays of n floats that `touch(t, pa, pb)` fills first (first-touch
/// placement): the best GB/s of trials 2-6 (the first warms the page tables).
template <class Touch, class Read>
static double bestReadOfTwoArrays(ThreadPool &pool, int64_t n, Touch touch, Read read) {
  float *pa = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  float *pb = static_cast<float *>(std::aligned_alloc(64, n * sizeof(float)));
  pool.runOnAll([&](int t) { touch(t, pa, pb); });
  std::vector<float> sums(pool.size());
  double best = 0;
  for (int trial = 0; trial < 6; ++trial) {
    double start = seconds();
    pool.runOnAll([&](int t) { sums[t] = read(t, pa, pb); });
    double elapsed = seconds() - start;
    if (trial > 0)
      best = std::max(best, 2.0 * double(n) * sizeof(float) / elapsed / 1e9);
  }
  if (sums[0] == -1.f) // keep the sums alive
    std::abort();
  std::free(pa);
  std::free(pb);
  return best;
}

double measureReadBandwidth(ThreadPool &pool, int64_t bytesPerArray) {
  const int64_t n = bytesPerArray / int64_t(sizeof(float));
  const int threads = pool.size();
  auto lo = [&](int t) { return n * t / threads; };
  auto touch = [&](int t, float *pa, float *pb) {
    for (int64_t i = lo(t), hi = lo(t + 1); i < hi; ++i) {
      pa[i] = 1.f;
      pb[i] = 2.f;
    }
  };
  auto read = [&](int t, const float *pa, const float *pb) {
    // Eight partial sums: the adds pipeline, so the loop is bound by loads.
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t i = lo(t), hi = lo(t + 1); i + 8 <= hi; i += 8)
      for (int l = 0; l < 8; ++l)
        acc[l] += pa[i + l] + pb[i + l];
    float total = 0;
    for (float a : acc)
      total += a;
    return total;
  };
  return bestReadOfTwoArrays(pool, n, touch, read);
}

double measureScatteredReadBandwidth(ThreadPool &pool, int64_t bytesPerArray, int64_t chunkBytes) {
  const int64_t chunk = std::max<int64_t>(16, chunkBytes / int64_t(sizeof(float)) / 16 * 16);
  const int64_t chunks = bytesPerArray / int64_t(sizeof(float)) / chunk;
  // The chunks in a shuffled order, as a block table hands out a pool's blocks.
  std::vector<int64_t> order(static_cast<size_t>(chunks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(20261128));
  const int threads = pool.size();
  auto lo = [&](int t) { return chunks * t / threads; };
  auto touch = [&](int t, float *pa, float *pb) {
    for (int64_t c = lo(t), hi = lo(t + 1); c < hi; ++c)
      for (int64_t i = order[size_t(c)] * chunk, e = i + chunk; i < e; ++i) {
        pa[i] = 1.f;
        pb[i] = 2.f;
      }
  };
  auto read = [&](int t, const float *pa, const float *pb) {
    float acc[16] = {};
    const int64_t hi = lo(t + 1);
    for (int64_t c = lo(t); c < hi; ++c) {
      const int64_t at = order[size_t(c)] * chunk;
      // The next chunk's lines asked for while this one is read (without it
      // this machine read 8 KiB chunks 1.5x slower).
      const int64_t next = c + 1 < hi ? order[size_t(c + 1)] * chunk : at;
      for (int64_t i = 0; i < chunk; i += 16) {
        __builtin_prefetch(pa + next + i, 0, 2);
        __builtin_prefetch(pb + next + i, 0, 2);
        for (int l = 0; l < 16; ++l)
          acc[l] += pa[at + i + l] + pb[at + i + l];
      }
    }
    float total = 0;
    for (float a : acc)
      total += a;
    return total;
  };
  return bestReadOfTwoArrays(pool, chunks * chunk, touch, read);
}

} // namespace attnc_bench
