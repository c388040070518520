//===- Configs.h - The benchmarked configurations and their inputs -*- C++ -*-===//
//
// One row per benchmarked configuration (a table, like Halide's resize
// kernel_info[]): the attnc kernel that implements it in bench/kernels.attn,
// its sizes and mask, and whether it runs in --quick mode. Also the work each
// configuration does (FLOPs over visible pairs only, minimum bytes moved) and
// its deterministic inputs, in the argument order of docs/language.md §6.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnc_bench {

enum class Kind { Sdpa, Additive, Projection, Packed };
enum class Mask { None, Causal, Window, WindowSink };
/// Storage type of a tensor (docs/language.md, storage types); arithmetic is
/// f32 either way.
enum class Dtype { F32, F16, Bf16 };
/// KV caches (docs/language.md, KV caches): none, `cache = contiguous` or
/// `cache = paged(block = N)`.
enum class CacheKind { None, Contiguous, Paged };

/// Bytes per element: 4 or 2.
inline int64_t elementBytes(Dtype d) { return d == Dtype::F32 ? 4 : 2; }
/// "f32", "f16", "bf16", as the language spells them.
std::string dtypeName(Dtype d);

struct Config {
  std::string id;     // stable key in results.json, also the work folder name
  std::string kernel; // kernel name in bench/kernels.attn
  std::string label;  // what the table shows
  Kind kind = Kind::Sdpa;
  int64_t B = 1, H = 1, G = 1, Lq = 1, Lk = 1, D = 64, Dv = 64;
  Mask mask = Mask::None;
  int64_t window = 0;   // Mask::Window: keys ip-W < j <= ip
  int64_t sink = 0;     // Mask::WindowSink: causal & (window(W) | sink(S)), also j < S
  bool rotary = false;  // positional = rotary (half style, base 10000, every channel)
  int64_t hidden = 0;   // Kind::Additive
  int64_t modelDim = 0; // Kind::Projection (self_qkv_out, no biases)
  bool memoryBound = false; // decode: report bandwidth, not % of peak
  bool quick = false;       // part of the --quick smoke run
  std::string target;       // attnc --target (empty: host)
  Dtype dtype = Dtype::F32;   // q, k, v, out, x, weights (kernel field `dtype`)
  Dtype kvDtype = Dtype::F32; // k and v (`kv_dtype`; the kernel's default is dtype)
  /// Kind::Packed: the sequences' lengths (queries and keys alike); Lq = Lk
  /// is their total, B stays 1 (the kernel's B is seqLens.size()).
  std::vector<int64_t> seqLens;
  /// KV caches: the Lq new tokens of sequence b are written into the cache at
  /// rows cacheLens[b] .. cacheLens[b] + Lq - 1 and attend its cacheLens[b] + Lq
  /// keys (query i at ip = cacheLens[b] + i). B = cacheLens.size(); Lk is the
  /// longest sequence's key count, the capacity Lmax of a contiguous cache.
  CacheKind cache = CacheKind::None;
  int64_t block = 0;               // CacheKind::Paged: rows per block
  std::vector<int64_t> cacheLens;  // cache_len per sequence
  std::string compareTo;           // report: the row this one is measured against
  /// The rows timed again in alternation with this one after every row has
  /// run (a ratio target between them: drift between rows cannot move it).
  std::vector<std::string> alternateWith;

  int64_t keyDim() const { return D; }
  /// Sequence b of a cache configuration on its own, the plain Sdpa
  /// configuration the references and baselines run: B = 1, Lk = cacheLens[b] + Lq.
  Config sequence(int64_t b) const;
  /// CacheKind::Paged: blocks sequence b uses, the pool's size (every
  /// sequence's blocks and kSpareBlocks unused ones) and the block table's width.
  int64_t blocksOf(int64_t b) const;
  int64_t numBlocks() const;
  int64_t maxBlocks() const;
  float scale() const; // the kernel's score scale
  /// Visible key range [lo, hi) of query row i (bottom-right aligned).
  void visibleRange(int64_t i, int64_t &lo, int64_t &hi) const;
  /// With sink keys (Mask::WindowSink), row i also sees [0, sinkEnd(i)),
  /// which ends at or before visibleRange's lo; 0 otherwise.
  int64_t sinkEnd(int64_t i) const;
  /// Visible (query, key) pairs summed over batch and heads.
  double visiblePairs() const;
  double flops() const;
  /// Minimum bytes moved: every input read once, the output written once.
  double bytes() const;
  /// Bytes of K and V (what decode must stream), at kvDtype's element size.
  double kvBytes() const;
  /// The storage type of input `name` (k and v: kvDtype; others: dtype).
  Dtype inputDtype(const std::string &name) const;
  /// Whether any of q, k, v is 16-bit (then the 16-bit tolerance of
  /// docs/language.md, storage types, applies).
  bool has16BitInputs() const { return dtype != Dtype::F32 || kvDtype != Dtype::F32; }
  std::string kindName() const;
  std::string maskName() const;
  std::string cacheName() const; // "none", "contiguous", "paged(16)"
};

/// Every configuration, in table order.
const std::vector<Config> &allConfigs();

/// A dense row-major float tensor with its contract name (or, when `ints`
/// is not empty, an i32 one: packed batches' cu_seqlens). A 16-bit tensor
/// keeps its bits (what attnc's kernel reads) in `bits` and their exact f32
/// widening in `data` (what the naive loop and OpenBLAS read).
struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  std::vector<int32_t> ints;
  Dtype dtype = Dtype::F32;
  std::vector<uint16_t> bits;
  int64_t size() const;
  const void *pointer() const {
    if (!ints.empty())
      return ints.data();
    return bits.empty() ? static_cast<const void *>(data.data()) : bits.data();
  }
};

/// Kind::Packed: the first token of each sequence, then the total (B + 1).
std::vector<int32_t> cuSeqlens(const Config &config);

/// The inputs of `config` in contract order (q, k, v or x, then the caches,
/// then weights), uniform in [-1, 1) from a fixed seed; weights scaled by
/// 1/sqrt(fan-in). Caches: k_cache, v_cache ([B, G, Lk, W] contiguous, or
/// [numBlocks, G, block, W] paged), cache_len and block_table (i32); cache rows
/// below cache_len hold values, every other row NaN, which must never reach an
/// output. The block table hands each sequence blocks from a shuffled pool, as
/// an allocator that has run for a while does; unused entries are -1.
std::vector<Tensor> makeInputs(const Config &config, uint64_t seed);

/// The output tensor's shape.
std::vector<int64_t> outputShape(const Config &config);

/// The element of a cache of row width W (k_cache: D, v_cache: Dv) that
/// holds row t, channel w of group g of sequence b; `blockTable` is the
/// block_table input's ints (paged caches only).
int64_t cacheIndex(const Config &config, const std::vector<int32_t> &blockTable, int64_t b,
                   int64_t g, int64_t t, int64_t w, int64_t W);

/// Rounds `data` to `dtype` (round to nearest even) into `bits`, and `data`
/// to the widened values of those bits; f32 leaves the tensor alone.
void roundToStorage(Tensor &tensor, Dtype dtype);

} // namespace attnc_bench

namespace attnc_bench {
/// The input seed of `config`: fixed by the run's base seed and the config id,
/// so a configuration gets the same inputs whatever else runs.
uint64_t configSeed(const Config &config, uint64_t baseSeed);
} // namespace attnc_bench
