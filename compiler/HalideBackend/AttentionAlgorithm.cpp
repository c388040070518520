//===- AttentionAlgorithm.cpp - The Halide algorithm of one kernel --------===//
//
// Builds the Funcs of one attention kernel (see AttentionAlgorithm.h): input
// parameters with dense-layout constraints and estimates, layout / projection
// accessors, the score (ScoreFunctions.cpp) and mask (Masks.cpp) expressions,
// the online-softmax recurrence over key blocks, and the outputs. Only the
// algorithm lives here; schedules are chosen in Schedules.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AttentionAlgorithm.h"
#include "compiler/HalideBackend/AlgorithmParts.h"
#include "compiler/HalideBackend/BackendError.h"
#include "compiler/HalideBackend/HalfConversions.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

std::vector<Argument> AlgorithmFuncs::arguments() const {
  std::vector<Argument> args;
  for (const ImageParam &p : inputs)
    args.push_back(p);
  return args;
}

Expr clampedExp(const Expr &x, int log2Scale) {
  // e^x 2^k = 2^(n + k) e^r. Adding 1.5 * 2^23 + 127 + k to x log2(e) rounds
  // it to an integer n and leaves n + 127 + k (the exponent field of
  // 2^(n + k)) in the low bits; n is taken from those bits, so fast-math
  // cannot fold the rounding away. r = x - n ln 2 (ln 2 in two parts) lies in
  // [-ln2/2, ln2/2], where Cephes' expf polynomial is good to about 1e-7.
  // About 15 vector instructions against about 25 for Halide 14's fast_exp
  // (whose floor of 16 lanes became two 8-lane roundings on AVX-512), and
  // the scale is free (folded into the addend, never into x: the simplifier
  // moved such a constant past the ln 2 reduction and lost its exactness).
  // The clamp keeps 2^(n + k) normal.
  const float magic = 12582912.0f + 127.0f + (float)log2Scale;
  Expr xc = max(x, (-125.0f - (float)log2Scale) * 0.693147f);
  Expr bits = reinterpret(Int(32), xc * 1.44269504f + magic);
  Expr n = cast<float>(bits - reinterpret(Int(32), Expr(magic)));
  Expr r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  Expr poly = 1.9875691500e-4f;
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                  5.0000001201e-1f})
    poly = poly * r + c;
  Expr expR = poly * (r * r) + r + 1.0f;
  return expR * reinterpret(Float(32), bits << 23);
}

/// tanh(x) / x for |x| < kTanhSeriesLimit: the odd series of tanh divided by
/// x, 1 - x^2/3 + 2x^4/15 - 17x^6/315 (next term 62x^8/2835 < 6e-8 there).
static Expr tanhOverX(const Expr &x2) {
  return 1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f)));
}
static constexpr float kTanhSeriesLimit = 0.2f;

/// tanh(|x|) for |x| >= kTanhSeriesLimit: (1 - e) / (1 + e) with e = exp(-2|x|)
/// in (0, 0.67], so 1 - e never cancels badly (the old 1 - 2 / (exp(2x) + 1)
/// lost every digit near 0).
static Expr tanhOfAbs(const Expr &ax) {
  Expr e = clampedExp(-2.0f * min(ax, 40.0f));
  return (1.0f - e) / (1.0f + e);
}

Expr approxTanh(const Expr &x) {
  Expr ax = abs(x);
  Expr large = select(x < 0.0f, -1.0f, 1.0f) * tanhOfAbs(ax);
  return select(ax < kTanhSeriesLimit, x * tanhOverX(x * x), large);
}

Expr softcapScore(const Expr &s, float c) {
  // Small |s / c|: s * (tanh(x) / x), exact even when x = s / c underflows
  // (c up to FLT_MAX gives back s, never 0 or inf); large: c * tanh(x).
  Expr x = s / c;
  Expr ax = abs(x);
  Expr large = select(s < 0.0f, -c, c) * tanhOfAbs(ax);
  return select(ax < kTanhSeriesLimit, s * tanhOverX(x * x), large);
}

Expr negInfinity() {
  return reinterpret(Float(32), cast<uint32_t>(Expr(0xff800000u)));
}

/// f16 to f32 through HalfConversions' marker: one vcvtph2ps per vector
/// where the target has F16C (Halide 14 itself emulates the cast).
static Expr widenF16(const Expr &load) {
  Type u32 = UInt(32, load.type().lanes());
  return halfBitsToFloat(cast(u32, reinterpret(UInt(16, load.type().lanes()), load)));
}

Expr widened(const Expr &load) {
  if (load.type().is_bfloat())
    return cast<float>(load); // a shift
  if (load.type().is_float() && load.type().bits() == 16) // (is_float includes bfloat)
    return widenF16(load);
  return load;
}

static Type halideType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return Float(32);
  case ElemType::I32:
    return Int(32);
  case ElemType::U8:
    return UInt(8);
  case ElemType::F16:
    return Float(16);
  case ElemType::BF16:
    return BFloat(16);
  }
  return Float(32);
}

namespace {

/// Builds every Func of one kernel into `f`; one method per part.
class AlgorithmBuilder {
public:
  AlgorithmBuilder(const AttentionConfig &config, AlgorithmFuncs &f, const Target &target,
                   Bf16Products bf16, DecodeRows decodeRows, Bf16Rows bf16Rows)
      : config(config), spec(config.kernel), f(f), target(target), bf16(bf16),
        decodeRows(decodeRows), bf16Rows(bf16Rows) {}

  void build() {
    chooseTiles();
    f.bf16Products = bf16 != Bf16Products::None && bf16ProductsApply();
    f.bf16Values = bf16ValuesApply();
    f.evenOddLanes = evenOddLanes();
    makeParams();
    makeSizes();
    constrainParams();
    makeInputs();
    makeScoreInputs();
    if (config.backward)
      return makeGradients();
    makeBlocks();
    makeState();
    makeOutputs();
  }

private:
  const AttentionConfig &config;
  const KernelDesc &spec;
  AlgorithmFuncs &f;
  const Target &target;
  Bf16Products bf16;
  DecodeRows decodeRows;
  Bf16Rows bf16Rows;
  std::map<std::string, ImageParam> params;
  std::map<std::string, const ArgSpec *> argByName;
  std::optional<PackedSequences> packed; // batch = packed

  ImageParam &param(const std::string &name) {
    auto it = params.find(name);
    if (it == params.end())
      throw BackendError("kernel '" + config.name + "': missing argument '" + name +
                         "' in the argument list");
    return it->second;
  }
  bool hasParam(const std::string &name) const { return params.count(name) != 0; }

  void chooseTiles() {
    KernelSizes sizes = spec.sizes();
    // GQA: the query heads of one KV head share the tile, so each K/V block
    // is loaded once for all of them. The additive score keeps per-head rows
    // (its hoisted W_q q is indexed by query and head).
    if (sizes.G > 0 && sizes.H > sizes.G && sizes.H % sizes.G == 0 &&
        spec.score != ScoreKind::Additive)
      f.groupP = (int)(sizes.H / sizes.G);
    // Query tiles of 32 rows feed a 2 x 16-lane register block; a short fixed
    // row count (decode) gets a tile of its own size so no row is computed in vain.
    int64_t rows = sizes.Lq > 0 ? sizes.Lq * f.groupP : 0;
    f.tileQ = 32;
    if (rows > 0 && rows < 32)
      f.tileQ = (int)rows;
    // A head's K and V rows past L2's 2 MiB are read again from L3 by every
    // query tile: tiles of 64 rows read them half as often (dense N=8192,
    // D=64: 8-10% faster; chunked prefill of 512 rows onto 4096 cached, 4-8%;
    // N=2048, whose rows fit, the same). Not under a window (the band's
    // edges would waste more), nor for the additive score or the backward,
    // whose tiles are their own.
    // (Counted as float32, the rows prefill reads; a dynamic seq_k is 0, and
    // so is the product.)
    const int64_t kvBytes = sizes.Lk * (sizes.Dk + sizes.Dv) * 4;
    if (rows >= 256 && kvBytes > (int64_t(2) << 20) && !config.backward &&
        spec.score != ScoreKind::Additive && !spec.packed && !spec.hasMask(MaskKind::Window))
      f.tileQ = 64;
    // Larger key blocks amortize the per-block rescaling of the state; with
    // an interval mask, smaller ones waste less work on the diagonal.
    bool skipsBlocks = spec.hasMask(MaskKind::Causal) || spec.hasMask(MaskKind::Window) ||
                       spec.hasMask(MaskKind::ValidLen) || spec.hasMask(MaskKind::Sink) ||
                       spec.hasMask(MaskKind::Prefix) ||
                       config.interval.hi.kind != KeyBound::None ||
                       config.interval.lo.kind != KeyBound::None;
    f.blockK = skipsBlocks ? 64 : 128;
    // Causal rows of 2048 keys or more: the diagonal's waste is a few
    // percent at most, and half as many rescalings of the state (a tenth of
    // the time at 64 keys) pay for it. On Zen 5 causal N=2048 was 2% faster,
    // N=8192 3%, a chunk of 512 rows onto 4096 cached 2%.
    const bool causalOnly = spec.masks.size() == 1 && spec.hasMask(MaskKind::Causal) &&
                            config.interval.lo.kind == KeyBound::None;
    f.tileWorkGrows = causalOnly;
    if (causalOnly && sizes.Lk >= 2048 && rows >= 64 && !spec.packed)
      f.blockK = 128;
    // (Fixed causal rows once took query tiles of one 16-row vector on
    // AVX-512, whose diagonal blocks waste half as many pairs: 4-13% faster
    // on Zen 4, but 3-15% slower than 32 rows on Zen 5 at N=64 to 4096, H=8,
    // D=64, two threads, alternated; a task of 16 rows is too little work
    // beside the thread pool's claim and the tile's own passes.)
    // With a run-time seq_k as well, where the diagonal block's key loops
    // stop at the tile's last key (makeBlocks): dynamic causal N=2922 4-7%
    // faster on Zen 4. Packed batches too, whose blocks rarely start where a
    // sequence does: Q.K^T and the exponentials skip the block's keys
    // before the tile's sequence as well (scoresByChunk; the benchmark's 8
    // sequences 3% faster on Zen 5, alternated, where 64-key blocks were 3%
    // faster before it). Not where P.V runs over pairs of keys (bf16
    // values: not cut), nor fixed N=512 (2-3% slower).
    // (f.bf16Values is set once the tiles are: asked here, where the tile is
    // a multiple of 16 rows and the block even either way, it answers the same.)
    if (causalOnly && sizes.Lk == 0 && (rows == 0 || rows >= 64) && !bf16ValuesApply() &&
        !config.backward)
      f.blockK = 128;
    // Short causal rows (a fixed seq_k of at most 128): blocks of 32 keys,
    // one per 32-row tile's diagonal, so fewer and shorter key loops run
    // over the same pairs (causal N=128, H=8, D=64 on Zen 4: 1-4% faster;
    // N=512 was 4% slower with 32).
    if (causalOnly && sizes.Lk > 0 && sizes.Lk <= 128 && rows >= 64 && !spec.packed &&
        !config.backward)
      f.blockK = 32;
    // Decode whose rows the core's prefetchers fetch: blocks of 256 keys,
    // half as many rescalings of the state and switches between the K and V
    // streams (Zen 5, H=32, G=8, D=128, Lk=32768, f32: 1.25x faster than 128
    // keys prefetched in software; a contiguous cache of B=4 1.1-1.3x). A
    // paged cache's pages are scattered: software prefetches stay. The
    // additive score is bound by its W_k k products, not by reading K: its
    // 128-key blocks keep two key chunks and W_k k per block (d2l's shape,
    // Lk = 512: 2x slower with 256).
    if (rows > 0 && rows <= 32 && decodeRows == DecodeRows::HardwarePrefetch &&
        !spec.cache.paged() && !config.backward && spec.score != ScoreKind::Additive) {
      f.decodeRowsByHardware = true;
      // 16-bit rows of a few queries: 512 keys, the bytes of 256 float32
      // keys per block (Zen 4, H=32, G=8, D=128, Lk=32768: bf16 and f16 K/V
      // 5-7% faster in ten alternations; 1000 and 5000 cached keys 5-7%, 100
      // keys 0.12 -> 0.13 ms; seq_q = 2 5%; seq_q = 8, 32 rows, 1% slower, and
      // float32 rows no faster). A fixed seq_k of 8192 keys or more, without a
      // cache: 1024 (bf16 rows read as words, Lk=32768: 4.46-4.68 against
      // 4.72-5.00 ms in five alternations, f16 1-11% faster in 3 of 4). Not
      // for a run-time seq_k, which may be short (100 keys: 0.053 -> 0.074
      // ms with 1024), nor caches (contiguous, B=4: no change).
      const bool longFixedKeys = sizes.Lk >= 8192 && !spec.cache.any();
      f.blockK = spec.kvDtype != ElemType::F32 && rows <= 8 ? (longFixedKeys ? 1024 : 512) : 256;
    }
    // Paged decode: a task per (sequence, key chunk) runs over every KV head
    // inside each key block, so a page's heads (one 64 KiB run of the pool
    // at G=8, D=128, f32) are read together, not one 8 KiB run per head and
    // task (a C read of a shuffled pool: 34 against 22-28 GB/s). Blocks of
    // whole pages, 128 keys or one page (B=4, H=32, G=8, D=128, paged(16) on
    // Zen 5, attnc-bench alternated: f32 1.07-1.22x, bf16 1.22-1.30x, a
    // run-time batch 1.13-1.18x, unequal lengths 1.11-1.16x; B=2 1.05-1.25x,
    // B=1 the same; blocks of 256 keys no better).
    f.headsInsideBlocks = rows > 0 && rows <= 32 && spec.cache.paged() && !config.backward &&
                          spec.score != ScoreKind::Additive && sizes.H / f.groupP > 1;
    // No block longer than a fixed seq_k.
    auto withinKeys = [&](int blockK) {
      return sizes.Lk > 0 && sizes.Lk < blockK ? (int)sizes.Lk : blockK;
    };
    const int plainBlockK = withinKeys(f.blockK);
    f.blockK = plainBlockK;
    if (f.headsInsideBlocks) {
      const int page = (int)spec.cache.block;
      f.blockK = withinKeys(page * ((128 + page - 1) / page));
    }
    // Decode (all rows in one tile): only B x G tasks would exist, each
    // streaming its whole K/V; split the keys into chunks with partial
    // softmax states so that at least 32 tasks share the threads, merged at
    // the end. Not more: every chunk is started and merged even when a short
    // sequence leaves it empty (B=4, G=8, D=128 on 2 threads: 8 chunks took
    // 1.3-1.7x the time of one at 256-1024 cached keys, the same at 32768).
    // A run-time batch counts as one sequence. (The additive score keeps
    // its chunks: with one, W_k k became a root buffer of every key, 2x
    // slower at d2l's shape.)
    if (rows > 0 && rows <= 32) {
      f.splits = 8;
      if (spec.score != ScoreKind::Additive) {
        const int64_t tasksPerChunk =
            std::max<int64_t>(1, sizes.B) * (f.headsInsideBlocks ? 1 : sizes.H / f.groupP);
        f.splits = 1;
        while (f.splits < 8 && tasksPerChunk * f.splits < 32)
          f.splits *= 2;
      }
      if (sizes.Lk > 0)
        f.splits = (int)std::max<int64_t>(
            1, std::min<int64_t>(f.splits, (sizes.Lk + f.blockK - 1) / f.blockK / 2));
      // The heads' loop inside the key blocks is the root state's (several
      // chunks); one chunk keeps a task per KV head (there are enough).
      if (f.headsInsideBlocks && f.splits == 1) {
        f.headsInsideBlocks = false;
        f.blockK = plainBlockK;
      }
    }
    chooseKeyBand();
  }

  /// The width W of the one window whose band every visited key block lies
  /// in, or 0: the forward kernel's blocks are those of one conjunction with
  /// a window term (a union's other group split off as the sink prefix).
  int64_t bandWindow() const {
    if (config.backward || spec.packed || spec.cache.any() || f.splits != 1)
      return 0;
    const std::vector<std::vector<int>> groups = spec.maskConjunctions();
    const int sinkGroup = sinkPrefix().first;
    int64_t width = 0;
    int blockGroups = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      if ((int)g == sinkGroup)
        continue;
      ++blockGroups;
      for (int n : groups[g]) {
        const MaskTermDesc &term = spec.masks.at((size_t)n);
        if (term.kind == MaskKind::Window)
          width = width == 0 ? term.width : std::min(width, term.width);
      }
    }
    return blockGroups == 1 ? width : 0;
  }

  /// Under a window of width W, the rows of a query tile (Q query
  /// positions) see Q + W - 1 consecutive keys. Key blocks at multiples of
  /// blockK cut that band wherever it falls: window(256) with 32-row tiles
  /// visited 5 blocks of 64 (320 keys) per tile. Blocks that start where the
  /// tile's band starts need ceil(band / 128) of them, sized to fit: 3
  /// blocks of 96 (288 keys). The start is kept even (pairs of keys of the
  /// bf16 value rows), which the band's length allows for with one key.
  void chooseKeyBand() {
    const int64_t width = bandWindow();
    if (width <= 0)
      return;
    const int P = f.groupP;
    const int64_t queries = (f.tileQ - 1) / P + 1 + (f.tileQ % P != 0 ? 1 : 0);
    const int64_t band = queries + width; // Q + W - 1 keys, and one for the even start
    const int64_t blocks = (band + 127) / 128;
    const int64_t keys = ((band + blocks - 1) / blocks + 7) / 8 * 8;
    KernelSizes sizes = spec.sizes();
    if (sizes.Lk > 0 && keys * blocks >= sizes.Lk)
      return; // one band holds every key: the plain blocks do as well
    const int sinkGroup = sinkPrefix().first, plainBlockK = f.blockK;
    f.blockK = (int)keys;
    if (sinkPrefix().first != sinkGroup) { // the sinks no longer fit a block's half
      f.blockK = plainBlockK;
      return;
    }
    f.keyBand = (int)width;
    bandBlocks = (int)blocks;
  }
  int bandBlocks = 0; // key blocks per query tile under a band

  /// AlgorithmFuncs::bf16Products: the target has vdpbf16ps, q, k and v
  /// are bf16 as the caller stores them (a projected, positioned, turned or
  /// W-transformed row would need a second rounding), and the tiles are
  /// prefill's (whole 16-row vectors, key blocks of pairs, rows of pairs).
  bool bf16ProductsApply() const {
    KernelSizes sizes = spec.sizes();
    bool dotScore = spec.score == ScoreKind::Dot || spec.score == ScoreKind::ScaledDot ||
                    spec.score == ScoreKind::Custom;
    return target.arch == Target::X86 && target.has_feature(Target::AVX512_SapphireRapids) &&
           spec.dtype == ElemType::BF16 && spec.kvDtype == ElemType::BF16 && dotScore &&
           spec.project == ProjectKind::None && spec.positional == PositionalKind::None &&
           !spec.packed && !spec.cache.any() && !config.backward && f.tileQ % 16 == 0 &&
           f.blockK % 2 == 0 && sizes.Dk > 0 && sizes.Dk % 2 == 0 && sizes.Dv > 0 &&
           sizes.Dv % 16 == 0;
  }

  /// AlgorithmFuncs::bf16Values: P.V too runs over pairs of bf16 products.
  bool bf16ValuesApply() const {
    return bf16 == Bf16Products::ScoresAndValues && bf16ProductsApply();
  }

  void makeParams() {
    for (const ArgSpec &arg : config.arguments) {
      argByName[arg.name] = &arg;
      if (arg.isOutput)
        continue;
      if (arg.isWritten) { // a cache: an output of the pipeline, updated in place
        Func cache = cacheFunc(arg.name);
        bool bshd = spec.layout == Layout::BSHD;
        Var t("t"), o("o");
        if (bshd)
          cache(f.d, f.g, t, o) = undef(halideType(arg.type));
        else
          cache(f.d, t, f.g, o) = undef(halideType(arg.type));
        continue;
      }
      ImageParam p(halideType(arg.type), (int)arg.shape.size(), arg.name);
      params.emplace(arg.name, p);
      f.inputs.push_back(p);
    }
    if (config.arguments.empty())
      throw BackendError("kernel '" + config.name + "' has an empty argument list");
  }

  /// The Halide dimension of logical dimension `k` of a rank-`rank` tensor.
  static int hdim(size_t rank, size_t k) { return (int)(rank - 1 - k); }

  /// The Func of cache argument `name` (k_cache or v_cache).
  Func cacheFunc(const std::string &name) {
    if (name != "k_cache" && name != "v_cache")
      throw BackendError("kernel '" + config.name + "': '" + name +
                         "' is written in place but is not a cache");
    return name == "k_cache" ? f.kCache : f.vCache;
  }

  /// Dimension k of an input's buffer (a cache's is its output buffer's).
  Halide::Internal::Dimension inputDim(const ArgSpec &arg, size_t k) {
    int hd = hdim(arg.shape.size(), k);
    return arg.isWritten ? cacheFunc(arg.name).output_buffer().dim(hd) : param(arg.name).dim(hd);
  }

  /// The extent of the first input dimension named `name`, or undefined.
  Expr extentOf(const std::string &name) {
    for (const ArgSpec &arg : config.arguments) {
      if (arg.isOutput)
        continue;
      for (size_t k = 0; k < arg.shape.size(); ++k)
        if (arg.shape[k].name == name)
          return inputDim(arg, k).extent();
    }
    return Expr();
  }

  void makeSizes() {
    KernelSizes sizes = spec.sizes();
    auto size = [&](const char *name, int64_t fixed) -> Expr {
      if (fixed > 0)
        return Expr((int32_t)fixed);
      Expr e = extentOf(name);
      if (!e.defined())
        throw BackendError("kernel '" + config.name + "': no argument carries size " + name);
      return e;
    };
    if (spec.packed) {
      // One row axis of all tokens (B = 1 inside); the sequences' table.
      f.B = Expr(1);
      f.Lq = size("Tq", 0);
      f.Lk = spec.selfAttention() ? f.Lq : size("Tk", 0);
      packed = makePackedSequences(param("cu_seqlens_q"), param("cu_seqlens_k"), f.Lq, f.Lk);
      f.sequenceTables = packed->tables;
    } else {
      f.B = size("B", sizes.B);
    }
    f.H = Expr((int32_t)sizes.H);
    f.G = Expr((int32_t)sizes.G);
    f.D = Expr((int32_t)sizes.D);
    f.Dk = Expr((int32_t)(sizes.Dk ? sizes.Dk : sizes.D));
    f.Dv = Expr((int32_t)(sizes.Dv ? sizes.Dv : sizes.D));
    if (spec.cache.any()) { // the keys are the cache's rows of each sequence
      f.Lq = size("Lq", sizes.Lq);
      f.Lk = spec.cache.paged() ? size("max_blocks", 0) * (int32_t)spec.cache.block
                                : size("Lmax", sizes.Lk);
    } else if (!spec.packed) {
      f.Lq = size("Lq", sizes.Lq);
      bool lkTied = spec.seqKIsSeqQ || spec.selfAttention();
      f.Lk = lkTied ? f.Lq : size("Lk", sizes.Lk);
    }
    if (sizes.H <= 0 || sizes.G <= 0 || sizes.H % sizes.G != 0)
      throw BackendError("kernel '" + config.name + "': heads must be a multiple of kv_heads");
    if (sizes.D <= 0)
      throw BackendError("kernel '" + config.name + "': head_dim must be positive");
  }

  Expr namedSize(const std::string &name) {
    if (name == "B") return packed ? packed->count : f.B; // packed: B = 1 inside
    if (name == "H") return f.H;
    if (name == "G") return f.G;
    if (name == "Lq") return f.Lq;
    if (name == "Lk") return f.Lk;
    if (name == "D") return f.D;
    if (name == "Dk") return f.Dk;
    if (name == "Dv") return f.Dv;
    if (packed && name == "Tq") return f.Lq;
    if (packed && name == "Tk") return f.Lk;
    if (packed && name == "B+1") return packed->count + 1;
    if (spec.cache.any() && name == "Lmax") return f.Lk;
    if (spec.cache.any() && name == "max_blocks") return extentOf("max_blocks");
    if (spec.cache.any() && name == "num_blocks") return extentOf("num_blocks"); // v_cache's = k_cache's
    return Expr();
  }

  static int estimateOf(const ArgDim &dim) {
    if (dim.value > 0)
      return (int)dim.value;
    if (dim.name == "B")
      return 1;
    if (dim.name == "Lq" || dim.name == "Lk" || dim.name == "Tq" || dim.name == "Tk")
      return 1024;
    if (dim.name == "B+1")
      return 2;
    if (dim.name == "Lmax")
      return 4096;
    if (dim.name == "num_blocks" || dim.name == "max_blocks")
      return 256;
    return 16;
  }

  /// Dense row-major strides, min 0, fixed or shared extents, estimates.
  template <typename DimFn>
  void constrainDims(const ArgSpec &arg, DimFn dimOf, bool isDefiningParam) {
    size_t rank = arg.shape.size();
    for (size_t k = 0; k < rank; ++k) {
      int hd = hdim(rank, k);
      const ArgDim &ad = arg.shape[k];
      Halide::Internal::Dimension dim = dimOf(hd);
      // A cache is read back inside the pipeline, where Halide takes a
      // buffer of its own to be vector-aligned; the caller's is not. Its
      // channel axis's min is left unknown (callers pass 0) so no load of it
      // is assumed aligned.
      if (!(arg.isWritten && hd == 0))
        dim.set_min(0);
      if (ad.value > 0) {
        dim.set_extent((int32_t)ad.value);
      } else if (!ad.name.empty()) {
        Expr e = namedSize(ad.name);
        // The first input carrying a size defines it; others must agree.
        if (e.defined() && !(isDefiningParam && e.same_as(extentOf(ad.name))))
          dim.set_extent(e);
      }
      if (hd == 0)
        dim.set_stride(1);
      else
        dim.set_stride(dimOf(hd - 1).extent() * dimOf(hd - 1).stride());
      dim.set_estimate(0, estimateOf(ad));
    }
  }

  void constrainParams() {
    for (const ArgSpec &arg : config.arguments) {
      if (arg.isOutput)
        continue;
      if (arg.isWritten) {
        OutputImageParam buf = cacheFunc(arg.name).output_buffer();
        constrainDims(arg, [&](int k) { return buf.dim(k); }, true);
        continue;
      }
      ImageParam p = param(arg.name);
      constrainDims(arg, [&](int k) { return p.dim(k); }, true);
    }
  }

  //--- Inputs in canonical order (d, row, head, b), rows clamped ------------//

  Expr clampRow(const Expr &r, const Expr &extent) { return clamp(r, 0, extent - 1); }
  /// Query and key/value heads clamped as rows are: a custom score's
  /// condition on h (`i - ip == -h`) can make bounds inference, which trims
  /// regions through conditions, ask for heads past the inputs', which
  /// Halide then refuses at run time.
  std::pair<Expr, Expr> clampedHeads() const {
    return {clamp(f.h, 0, f.H - 1), clamp(f.g, 0, f.G - 1)};
  }

  /// x (+ sinusoidal positions) as (m, t, b); `width` is x's last dimension.
  Func positioned(const std::string &name, int64_t width) {
    ImageParam x = param(name);
    Func xp = exactFunc(name + "_pos");
    if (spec.positional == PositionalKind::Sinusoidal) {
      Expr M = Expr((int32_t)width);
      Expr even = f.m - f.m % 2;
      Expr angle = cast<float>(f.i) /
                   Halide::pow(10000.0f, cast<float>(even) / cast<float>(M));
      xp(f.m, f.i, f.b) =
          widened(x(f.m, f.i, f.b)) + select(f.m % 2 == 0, sin(angle), cos(angle));
    } else if (spec.packed) { // tokens [T, M]
      xp(f.m, f.i, f.b) = widened(x(f.m, f.i));
    } else {
      xp(f.m, f.i, f.b) = widened(x(f.m, f.i, f.b));
    }
    f.precomputed.push_back(xp);
    return xp;
  }

  /// A weight [N, M] (nn.Linear's [out, in]) as the matrix products read
  /// it, (n, m) with n innermost: a copy transposed once per call, so their
  /// micro-kernels load whole vectors of output columns (the packing of a
  /// GEMM's B panel).
  Func transposedWeight(const std::string &w) {
    ImageParam weight = param(w);
    Func t = exactFunc(w + "_t");
    t(f.n, f.m) = widened(weight(f.m, f.n));
    f.weightTransposes.push_back(t);
    return t;
  }

  /// A weight [heads * width, M] as one head's projection reads it,
  /// (d, m, h): each head's [M, width] panel contiguous, so the micro-kernel
  /// streams it (with the heads' columns side by side, consecutive m were
  /// heads * width floats apart and MHA's projections ran at 44% of the peak).
  Func headPanels(const std::string &w, const Expr &width) {
    ImageParam weight = param(w);
    Func t = exactFunc(w + "_t");
    t(f.d, f.m, f.h) = widened(weight(f.m, f.h * width + f.d));
    f.weightTransposes.push_back(t);
    return t;
  }

  /// Whether a projection reads its weight [N, inWidth] in place (see
  /// AlgorithmFuncs::inPlaceProjections); its rows split into whole vectors.
  bool weightsInPlace(int64_t inWidth) const {
    return spec.cache.any() && inWidth % 16 == 0;
  }

  /// x @ w^T (+ bias) for one head: (d, row, head, b). The bias is where the
  /// sum starts (a pass of its own copied every projection once more).
  Func project(Func x, const std::string &w, const std::string &bias, bool hasBias, Expr width,
               const std::string &name, int64_t inWidth) {
    RDom r(0, (int32_t)inWidth, name + "_r");
    Func p = exactFunc(name);
    Expr c = f.h * width + f.d;
    p(f.d, f.i, f.h, f.b) = hasBias ? widened(param(bias)(c)) : Expr(0.0f);
    if (weightsInPlace(inWidth)) {
      p(f.d, f.i, f.h, f.b) += x(r, f.i, f.b) * widened(param(w)(r, c));
      f.inPlaceProjections.push_back({p, (int)*as_const_int(width)});
    } else {
      p(f.d, f.i, f.h, f.b) += x(r, f.i, f.b) * headPanels(w, width)(f.d, r, f.h);
    }
    f.precomputed.push_back(p);
    return p;
  }

  /// One of the projections stackedProjections computes together.
  struct StackedPart {
    const char *weight, *bias, *name;
    bool hasBias;
    Expr heads;
  };

  /// Projections of one input with one head width as one matrix product
  /// over their heads stacked: the weight panels of the first part's heads,
  /// then the next part's (the packing of nn.MultiheadAttention's
  /// in_proj_weight). One micro-kernel and one parallel loop instead of one
  /// per part: Halide and LLVM compile a third of the code for q, k and v
  /// (rope_llama 1.51 -> 1.39 CPU s; MHA with projections runs as fast, its
  /// output bit-identical). Returns each part as (d, row, head, b).
  std::vector<Func> stackedProjections(Func x, const std::vector<StackedPart> &parts,
                                       const Expr &width, int64_t inWidth,
                                       const std::string &name) {
    Func panels = exactFunc("w_" + name + "_t"); // (d, m, head), as headPanels
    panels(f.d, f.m, f.h) = undef(Float(32));
    std::vector<Expr> firstHead{Expr(0)};
    for (const StackedPart &part : parts)
      firstHead.push_back(simplify(firstHead.back() + part.heads));
    Expr start; // where each head's sum starts: its part's bias, or 0
    for (size_t k = parts.size(); k-- > 0;) {
      const StackedPart &part = parts[k];
      RDom r(0, part.heads, std::string(part.weight) + "_heads");
      panels(f.d, f.m, firstHead[k] + r) = widened(param(part.weight)(f.m, r * width + f.d));
      Expr head = clamp(f.h - firstHead[k], 0, part.heads - 1);
      Expr bias = part.hasBias ? widened(param(part.bias)(head * width + f.d)) : Expr(0.0f);
      start = start.defined() ? select(f.h < firstHead[k + 1], bias, start) : bias;
    }
    f.weightTransposes.push_back(panels);
    RDom r(0, (int32_t)inWidth, name + "_proj_r");
    Func p = exactFunc(name + "_proj");
    p(f.d, f.i, f.h, f.b) = simplify(start);
    p(f.d, f.i, f.h, f.b) += x(r, f.i, f.b) * panels(f.d, r, f.h);
    f.precomputed.push_back(p);
    std::vector<Func> projected;
    for (size_t k = 0; k < parts.size(); ++k) {
      Func part = exactFunc(parts[k].name);
      part(f.d, f.i, f.h, f.b) = p(f.d, f.i, f.h + firstHead[k], f.b);
      projected.push_back(part);
    }
    return projected;
  }

  /// q, k and v projected from x (or x_q, x_kv), per head: (d, row, head, b).
  std::tuple<Func, Func, Func> projections() {
    bool self = spec.project == ProjectKind::SelfQKV || spec.project == ProjectKind::SelfQKVOut;
    int64_t kvWidth = spec.kvModelDim ? spec.kvModelDim : spec.modelDim;
    Func xq = positioned(self ? "x" : "x_q", spec.modelDim);
    Func xkv = self ? xq : positioned("x_kv", kvWidth);
    f.xQuery = xq;
    f.xKeys = xkv;
    const StackedPart q{"w_q", "b_q", "q_proj", spec.projBias.q, f.H},
        k{"w_k", "b_k", "k_proj", spec.projBias.k, f.G},
        v{"w_v", "b_v", "v_proj", spec.projBias.v, f.G};
    const bool sameWidth = can_prove(f.Dk == f.Dv);
    if (self && sameWidth && can_prove(f.D == f.Dk) && !weightsInPlace(spec.modelDim)) {
      std::vector<Func> qkv = stackedProjections(xq, {q, k, v}, f.D, spec.modelDim, "qkv");
      return {qkv[0], qkv[1], qkv[2]};
    }
    std::vector<Func> kv;
    if (sameWidth && !weightsInPlace(kvWidth))
      kv = stackedProjections(xkv, {k, v}, f.Dk, kvWidth, "kv");
    Func pq = project(xq, q.weight, q.bias, q.hasBias, f.D, q.name, spec.modelDim);
    if (kv.empty())
      kv = {project(xkv, k.weight, k.bias, k.hasBias, f.Dk, k.name, kvWidth),
            project(xkv, v.weight, v.bias, v.hasBias, f.Dv, v.name, kvWidth)};
    return {pq, kv[0], kv[1]};
  }

  void makeInputs() {
    bool bshd = spec.layout == Layout::BSHD;
    bool rotary = spec.positional == PositionalKind::Rotary;
    Expr ci = clampRow(f.i, f.Lq), cj = clampRow(f.j, f.Lk);
    auto [ch, cg] = clampedHeads();
    // With rotary embeddings q_in and k_in turn these rows.
    Func qIn = rotary ? exactFunc("q_unrotated") : f.qIn;
    Func kIn = rotary ? exactFunc("k_unrotated") : f.kIn;
    if (spec.cache.any())
      return makeCacheInputs();
    switch (spec.project) {
    case ProjectKind::None: {
      ImageParam q = param("q"), k = param("k"), v = param("v");
      if (spec.packed) { // tokens [T, heads, width]
        qIn(f.d, f.i, f.h, f.b) = widened(q(f.d, ch, ci));
        kIn(f.d, f.j, f.g, f.b) = widened(k(f.d, cg, cj));
        f.vIn(f.d, f.j, f.g, f.b) = widened(v(f.d, cg, cj));
        break;
      }
      qIn(f.d, f.i, f.h, f.b) = widened(bshd ? q(f.d, ch, ci, f.b) : q(f.d, ci, ch, f.b));
      kIn(f.d, f.j, f.g, f.b) = widened(bshd ? k(f.d, cg, cj, f.b) : k(f.d, cj, cg, f.b));
      f.vIn(f.d, f.j, f.g, f.b) = widened(bshd ? v(f.d, cg, cj, f.b) : v(f.d, cj, cg, f.b));
      if (f.bf16Products)
        makeBf16Operands(q, k, v);
      break;
    }
    default: {
      auto [pq, pk, pv] = projections();
      qIn(f.d, f.i, f.h, f.b) = pq(f.d, ci, ch, f.b);
      kIn(f.d, f.j, f.g, f.b) = pk(f.d, cj, cg, f.b);
      f.vIn(f.d, f.j, f.g, f.b) = pv(f.d, cj, cg, f.b);
      break;
    }
    }
    if (rotary) {
      // Queries at ip = i + Lk - Lq (aligned with the keys), keys at j.
      RotaryTable table = makeRotaryTable(spec.rotary);
      f.ropeInvFreq = table.invFreq;
      f.ropeTable = table.cosSin;
      rotateRows(f.qIn, qIn, table, spec.rotary, queryPosition(f.i));
      rotateRows(f.kIn, kIn, table, spec.rotary, keyPosition(f.j));
    }
  }

  /// Rotary positions of query row i and key row j. Packed: the positions in
  /// each token's own sequence (clamped to where they lie, for bounds
  /// inference).
  Expr queryPosition(const Expr &i) {
    return packed ? clamp(packed->frame(i, 0).ip, -f.Lq, f.Lk - 1) : i + (f.Lk - f.Lq);
  }
  Expr keyPosition(const Expr &j) {
    return packed ? clamp(packed->keyPosition(j), 0, f.Lk - 1) : j;
  }

  /// bf16Products: the queries of each row group's rows as pairs of
  /// channels, k as stored, and (bf16Values) v as pairs of keys (zero past
  /// Lk, where p is 0 too: a stale row must not turn 0 * v into NaN).
  void makeBf16Operands(ImageParam q, ImageParam k, ImageParam v) {
    bool bshd = spec.layout == Layout::BSHD;
    Expr P = Expr((int32_t)f.groupP);
    Expr row = clampRow(f.i / P, f.Lq), head = f.h * P + f.i % P;
    Expr channel = 2 * f.dp + f.e;
    f.qPairs(f.e, f.i, f.dp, f.h, f.b) =
        bshd ? q(channel, head, row, f.b) : q(channel, row, head, f.b);
    Expr cj = clampRow(f.j, f.Lk);
    f.kBf16(f.d, f.j, f.g, f.b) = bshd ? k(f.d, f.g, cj, f.b) : k(f.d, cj, f.g, f.b);
    if (!f.bf16Values)
      return;
    Expr key = 2 * f.jp + f.e, ck = clampRow(key, f.Lk);
    Expr stored = bshd ? v(f.d, f.g, ck, f.b) : v(f.d, ck, f.g, f.b);
    f.vPairs(f.e, f.d, f.jp, f.g, f.b) =
        select(key < f.Lk, stored, cast(BFloat(16), Expr(0.0f)));
  }

  /// KV caches: the new rows (k turned at the queries' positions) are
  /// written to the caches after the check, then every key and value is read
  /// back from them; q is turned at ip = cache_len[b] + i.
  void makeCacheInputs() {
    bool bshd = spec.layout == Layout::BSHD;
    bool rotary = spec.positional == PositionalKind::Rotary;
    Expr numBlocks = spec.cache.paged() ? extentOf("num_blocks") : Expr(0);
    ImageParam blockTable = spec.cache.paged() ? param("block_table") : ImageParam();
    CacheLayout layout(spec, f.Lk, numBlocks, blockTable);
    f.cacheLen = checkedCacheLengths(param("cache_len"), layout, f.B, f.Lq, f.sequenceTables);

    Expr ci = clampRow(f.i, f.Lq), cj = clampRow(f.j, f.Lq); // new rows
    auto [ch, cg] = clampedHeads();
    Func qIn = rotary ? exactFunc("q_unrotated") : f.qIn;
    Func kNew = exactFunc("k_new"), kStored = kNew, vNew = exactFunc("v_new");
    if (spec.project == ProjectKind::None) {
      ImageParam q = param("q"), k = param("k"), v = param("v");
      qIn(f.d, f.i, f.h, f.b) = widened(bshd ? q(f.d, ch, ci, f.b) : q(f.d, ci, ch, f.b));
      kNew(f.d, f.j, f.g, f.b) = widened(bshd ? k(f.d, cg, cj, f.b) : k(f.d, cj, cg, f.b));
      vNew(f.d, f.j, f.g, f.b) = widened(bshd ? v(f.d, cg, cj, f.b) : v(f.d, cj, cg, f.b));
    } else { // the new tokens' projections (x_kv, like x, holds Lq rows)
      auto [pq, pk, pv] = projections();
      qIn(f.d, f.i, f.h, f.b) = pq(f.d, ci, ch, f.b);
      kNew(f.d, f.j, f.g, f.b) = pk(f.d, cj, cg, f.b);
      vNew(f.d, f.j, f.g, f.b) = pv(f.d, cj, cg, f.b);
    }
    if (rotary) {
      RotaryTable table = makeRotaryTable(spec.rotary);
      f.ropeInvFreq = table.invFreq;
      f.ropeTable = table.cosSin;
      rotateRows(f.qIn, qIn, table, spec.rotary, f.cacheLen(f.b) + f.i);
      kStored = f.kNewRotated = exactFunc("k_new_rotated");
      rotateRows(kStored, kNew, table, spec.rotary, f.cacheLen(f.b) + f.j);
    }
    // The writes: row r of sequence b at cache_len[b] + r (checked above),
    // channels [0, D) by a reduction domain rather than the cache's pure
    // variable, so the region of the new rows (and of their projections) is
    // known whatever the caller's channel min.
    auto storedAs = [&](const char *cache, const Expr &value) {
      return cast(halideType(argByName.at(cache)->type), value); // rounded once, RNE
    };
    RDom wk(0, f.Dk, 0, f.Lq, 0, f.B, "new_k_rows"), wv(0, f.Dv, 0, f.Lq, 0, f.B, "new_v_rows");
    auto slot = [&](const RDom &w) { return clamp(f.cacheLen(w.z) + w.y, 0, f.Lk - 1); };
    layout.write(f.kCache, wk.x, slot(wk), f.g, wk.z,
                 storedAs("k_cache", kStored(wk.x, wk.y, f.g, wk.z)));
    layout.write(f.vCache, wv.x, slot(wv), f.g, wv.z,
                 storedAs("v_cache", vNew(wv.x, wv.y, f.g, wv.z)));
    // Then every key and value is read back from the caches.
    Expr row = clampRow(f.j, f.Lk);
    f.kIn(f.d, f.j, f.g, f.b) = widened(layout.at(f.kCache, f.d, row, cg, f.b));
    // Rows past a sequence's keys may hold anything, NaN included: the key
    // loops stop before them (makeBlocks).
    f.vIn(f.d, f.j, f.g, f.b) = widened(layout.at(f.vCache, f.d, row, cg, f.b));
    for (Func cache : {f.kCache, f.vCache}) {
      f.outputs.push_back(cache);
      f.caches.push_back(cache);
    }
  }

  /// NAME_backward (Backward.cpp): the gradients instead of the attention.
  void makeGradients() {
    f.splits = 1; // a task owns whole key blocks
    // One pass over square 32 x 32 tiles sums all three gradients (5 matrix
    // products per tile instead of 7 over two passes); the additive score's
    // dQ needs tanh per hidden unit again and keeps two passes, as do tiles
    // smaller than 32. A key block's (dK, dV) sums stay in L1 while its query
    // tiles stream by.
    f.grad.singlePass = spec.score != ScoreKind::Additive && f.tileQ == 32 && f.blockK >= 32;
    f.blockK = f.grad.singlePass ? 32 : std::min(f.blockK, 64);
    makeRowQueries();
    GradientInputs in{f,
                      config,
                      [this](const std::string &n) { return param(n); },
                      [this](Expr i, Expr j, Expr h, Expr b) { return makeEnv(i, j, h, b); },
                      [this](const ExprEnv &env) { return masksFor(env); },
                      [this](Expr i, Expr j) {
                        return packed ? packed->frame(i, j).keyVisible : j < f.Lk;
                      },
                      [this](const std::string &n, const Expr &v) { return stored(n, v); },
                      [this](Func out, const std::string &n) { constrainOutput(out, n); },
                      [this](Expr i) { return queryPosition(i); },
                      [this](Expr j) { return keyPosition(j); }};
    defineGradients(in);
  }

  void makeScoreInputs() {
    ScoreInputs in{f, config, [this](const std::string &n) { return param(n); }};
    defineScoreInputs(in);
  }

  //--- Blocks ----------------------------------------------------------------//

  ExprEnv makeEnv(const Expr &i, const Expr &j, const Expr &h, const Expr &b) {
    ExprEnv env;
    env.b = b;
    env.h = h;
    env.i = i;
    env.j = j;
    env.g = h / (f.H / f.G);
    env.ip = i + (f.Lk - f.Lq);
    env.B = f.B;
    env.H = f.H;
    env.G = f.G;
    env.Lq = f.Lq;
    env.Lk = f.Lk;
    env.D = f.D;
    env.Dv = f.Dv;
    if (f.cacheLen.defined()) { // query i of sequence b at cache_len[b] + i
      env.ip = f.cacheLen(b) + i;
      env.Lk = f.cacheLen(b) + f.Lq;
    }
    if (packed) {
      PackedSequences::Frame frame = packed->frame(i, j);
      env.b = frame.b;
      env.i = frame.i;
      env.j = frame.j;
      env.ip = frame.ip;
      env.B = packed->count;
      env.Lq = frame.Lq;
      env.Lk = frame.Lk;
    }
    for (const DeclaredInput &input : spec.inputs) {
      const ClampedInput &c = clampedInput(input.name);
      env.inputs[input.name] = c.func;
      env.inputExtents[input.name] = c.extents;
    }
    return env;
  }

  /// A declared input read through a boundary clamp, with its extents.
  struct ClampedInput {
    Func func;
    std::vector<Expr> extents;
  };
  std::map<std::string, ClampedInput> clampedInputs;

  /// Built once per kernel: the blocked scores and the weights output both
  /// read the inputs, and two Funcs of one name cannot share a pipeline.
  const ClampedInput &clampedInput(const std::string &name) {
    auto found = clampedInputs.find(name);
    if (found != clampedInputs.end())
      return found->second;
    ImageParam p = param(name);
    const ArgSpec &arg = *argByName.at(name);
    size_t rank = arg.shape.size();
    std::vector<Var> vars;
    std::vector<Expr> extents(rank), access(rank);
    for (size_t k = 0; k < rank; ++k) {
      vars.push_back(Var("x" + std::to_string(k)));
      extents[k] = p.dim(hdim(rank, k)).extent();
    }
    for (size_t k = 0; k < rank; ++k)
      access[hdim(rank, k)] = clamp(vars[k], 0, extents[k] - 1);
    Func clamped = exactFunc(name + "_clamped");
    if (rank == 0)
      clamped() = p();
    else
      clamped(vars) = p(access);
    return clampedInputs[name] = ClampedInput{clamped, extents};
  }

  MaskParts masksFor(const ExprEnv &env, int onlyGroup = -1, int skipGroup = -1) {
    MaskInputs in{f, config, [this](const std::string &n) { return param(n); },
                  packed ? &*packed : nullptr, f.cacheLen};
    in.onlyGroup = onlyGroup;
    in.skipGroup = skipGroup;
    return buildMask(in, env);
  }

  /// AlgorithmFuncs::evenOddLanes: decode (a fixed tile of fewer rows than a
  /// vector, whose Q.K^T and P.V the tuned schedule unrolls along d) reading
  /// bf16 k and v rows in place, for a score that is a sum of q[c] k[c],
  /// with head dims of whole chunks (at most 16 vectors, all unrolled), on
  /// AVX-512 (AVX2's decode P.V keeps its sums in L1, in a loop along d).
  int evenOddLanes() const {
    if (bf16Rows != Bf16Rows::AsChannelPairs || spec.kvDtype != ElemType::BF16 ||
        target.arch != Target::X86)
      return 0;
    const int lanes = target.natural_vector_size<float>();
    KernelSizes sizes = spec.sizes();
    const bool dotScore = spec.score == ScoreKind::Dot || spec.score == ScoreKind::ScaledDot ||
                          spec.score == ScoreKind::General || spec.score == ScoreKind::Custom;
    // (A cache's rows are read back as stored: projected and turned.)
    const bool rowsInPlace = spec.cache.any() || (spec.project == ProjectKind::None &&
                                                  spec.positional == PositionalKind::None &&
                                                  !spec.packed);
    const bool wholeChunks = sizes.Dk > 0 && sizes.Dk % (2 * lanes) == 0 &&
                             sizes.Dk / lanes <= 16 && sizes.Dv > 0 &&
                             sizes.Dv % (2 * lanes) == 0;
    // A fixed row count of fewer than 32 is the tile (chooseTiles); not a
    // multiple of the lanes, it takes the schedule's few-rows Q.K^T.
    const bool decodeTile = f.tileQ % lanes != 0;
    if (!f.bf16Products && !config.backward && dotScore && rowsInPlace && wholeChunks &&
        decodeTile && lanes >= 16)
      return lanes;
    return 0;
  }

  /// The KV head of row group hb.
  Expr kvHeadOf(const Expr &hb) {
    KernelSizes sizes = spec.sizes();
    return hb / (int32_t)(sizes.H / f.groupP / sizes.G);
  }

  void makeRowQueries() {
    if (f.groupP == 1 && !f.evenOddLanes) {
      f.qRow = f.qs;
      return;
    }
    Expr P = Expr((int32_t)f.groupP);
    f.qRow(f.d, f.i, f.h, f.b) = f.qs(f.channelAt(f.d), f.i / P, f.h * P + f.i % P, f.b);
  }

  /// qk of bf16Products: the raw q . k, summed over pairs of channels.
  void defineBf16ScoreReduction() {
    f.rdPairs = RDom(0, 2, 0, f.Dk / 2, "rdp");
    Expr q = f.qPairs(f.rdPairs.x, f.i, f.rdPairs.y, f.h, f.b);
    Expr k = f.kBf16(2 * f.rdPairs.y + f.rdPairs.x, f.j, kvHeadOf(f.h), f.b);
    f.qk(f.j, f.i, f.h, f.b) = 0.0f;
    f.qk(f.j, f.i, f.h, f.b) += cast<float>(q) * cast<float>(k);
  }

  /// Q.K^T's micro-kernel keys (2 query vectors x qkKeys keys of sums in
  /// 32 AVX-512 or 16 AVX2 registers, a divisor of the block), and whether
  /// the block's scores and exponentials are computed only where its rows
  /// see keys (AlgorithmFuncs::scoresByChunk): tiles of whole row vectors
  /// whose reductions over rj stop at the tile's visible keys (makeBlocks).
  /// Not over a cache, whose Q.K^T must not read rows past a sequence's
  /// length, which whole chunks would (qk is trimmed to them through
  /// block_score's select there).
  void chooseScoreChunks(const MaskParts &mask) {
    // (A target with unknowns, as the unit tests build algorithms: AVX-512's.)
    const int vec = target.has_unknowns() ? 16 : target.natural_vector_size<float>();
    const int accumulators = vec >= 16 ? 16 : 8;
    f.qkKeys = divisorAtMost(f.blockK, accumulators / 2);
    const bool keyRange = mask.keysEnd.defined() || mask.keysBegin.defined();
    // (With fixed sizes bounds inference trims the block's scores to the
    // tile's keys by itself.)
    KernelSizes sizes = spec.sizes();
    const bool runTimeKeys = spec.packed || sizes.Lq == 0 || sizes.Lk == 0;
    f.scoresByChunk = keyRange && runTimeKeys && f.tileQ % vec == 0 && f.splits == 1 &&
                      f.keyBand == 0 && !f.bf16Values && !f.cacheLen.defined() &&
                      !config.backward;
  }

  void makeBlocks() {
    Expr P = Expr((int32_t)f.groupP);
    Expr rA = f.qt * f.tileQ + f.ii;
    Expr iA = rA / P, hA = f.h * P + rA % P;
    if (f.keyBand > 0) {
      // The tile's first visible key (the window's lower edge for its first
      // query), made even: see chooseKeyBand.
      Expr ipMin = (f.qt * f.tileQ) / P + (f.Lk - f.Lq);
      f.keyBase = max(0, ipMin - (f.keyBand - 1)) / 2 * 2;
    }
    Expr jA = f.blockFirstKey(f.kb) + f.jj;
    f.rj = RDom(0, f.blockK, "rj");

    makeRowQueries();
    if (f.bf16Products)
      defineBf16ScoreReduction();
    else
      defineScoreReduction(f, config, f.qk, /*blockRows=*/true);
    ExprEnv env = makeEnv(iA, jA, hA, f.b);
    ScoreParts parts = finishScore(f, config, env, f.qk(jA, rA, f.h, f.b));
    auto [sinkGroup, sinkKeys] = sinkPrefix();
    MaskParts mask = masksFor(env, -1, sinkGroup); // without the sink group, if split off
    // Packed: keys of the query's own sequence only (which are < Tk).
    // A cached sequence has cache_len[b] + Lq keys.
    Expr keys = f.cacheLen.defined() ? f.cacheLen(f.b) + f.Lq : f.Lk;
    // A cached sequence's rows past its keys may hold anything, NaN included
    // (0 * NaN would poison P.V): its last block's key loops stop at its
    // length, which Halide turns into their trip counts, not a test per key.
    if (f.cacheLen.defined())
      f.rj.where(f.blockFirstKey(f.kb) + f.rj < keys);
    // Nor does it go past the tile's last visible key (a causal tile's
    // diagonal block is cut after its last row's key, not computed whole
    // and masked), nor start before its first (a packed tile's).
    if (f.splits == 1 && f.keyBand == 0 && !f.bf16Values) {
      if (mask.keysEnd.defined())
        f.rj.where(f.blockFirstKey(f.kb) + f.rj < mask.keysEnd);
      if (mask.keysBegin.defined())
        f.rj.where(f.blockFirstKey(f.kb) + f.rj >= mask.keysBegin);
    }
    Expr visible = packed ? packed->frame(iA, jA).keyVisible && mask.visible
                          : jA < keys && mask.visible;
    Expr score = select(visible, parts.score, kMaskedScore);
    chooseScoreChunks(mask);
    if (f.scoresByChunk) {
      // Only the chunks that hold a key [keysBegin, keysEnd) (see scoresByChunk).
      const int chunk = f.qkKeys;
      f.rjc = RDom(0, chunk, 0, f.blockK / chunk, "rjc");
      Expr chunkFirst = f.blockFirstKey(f.kb) + f.rjc.y * chunk;
      // The tile's keys through a Func of (qt, b), which Halide's loop
      // trimming cannot solve for qt: it trims the chunks' loop instead of
      // the tile's (whose rows qk would then index at run time, 2x slower).
      auto perTile = [&](const char *name, const Expr &keys) {
        Func fn(name);
        fn(f.qt, f.b) = keys;
        return fn(f.qt, f.b);
      };
      if (mask.keysEnd.defined())
        f.rjc.where(chunkFirst < perTile("tile_keys_end", mask.keysEnd));
      if (mask.keysBegin.defined())
        f.rjc.where(chunkFirst + chunk > perTile("tile_keys_begin", mask.keysBegin));
      Expr jc = f.rjc.y * chunk + f.rjc.x;
      f.blockScore(f.jj, f.ii, f.qt, f.kb, f.h, f.b) = undef<float>();
      f.blockScore(jc, f.ii, f.qt, f.kb, f.h, f.b) = substitute(f.jj.name(), jc, score);
    } else {
      f.blockScore(f.jj, f.ii, f.qt, f.kb, f.h, f.b) = score;
    }

    Expr bs = f.blockScore(f.rj, f.ii, f.qt, f.kb, f.h, f.b);
    f.blockMax(f.ii, f.qt, f.kb, f.h, f.b) = kMaskedScore;
    f.blockMax(f.ii, f.qt, f.kb, f.h, f.b) = max(f.blockMax(f.ii, f.qt, f.kb, f.h, f.b), bs);

    // Masked keys carry the sentinel; their probability is exactly 0. The
    // others carry pScale = 2^-ceil(log2(2 blockK)), so a block's sum is at
    // most 1/2 (see absorb); folded into the row's shift, it costs nothing
    // per score.
    pScale = 1.0f;
    while (pScale * (float)(2 * f.blockK) > 1.0f)
      pScale *= 0.5f;
    Expr s = f.blockScore(f.jj, f.ii, f.qt, f.kb, f.h, f.b);
    Expr e = select(s > kMaskedThreshold,
                    clampedExp(s - f.blockMax(f.ii, f.qt, f.kb, f.h, f.b), log2PScale()), 0.0f);
    if (f.scoresByChunk) {
      f.blockExp(f.jj, f.ii, f.qt, f.kb, f.h, f.b) = undef<float>();
      f.blockExp(f.rj, f.ii, f.qt, f.kb, f.h, f.b) = substitute(f.jj.name(), f.rj.x, e);
    } else {
      f.blockExp(f.jj, f.ii, f.qt, f.kb, f.h, f.b) = e;
    }

    Expr p = f.blockExp(f.rj, f.ii, f.qt, f.kb, f.h, f.b);
    f.blockSum(f.ii, f.qt, f.kb, f.h, f.b) = 0.0f;
    f.blockSum(f.ii, f.qt, f.kb, f.h, f.b) += p;
    f.blockPV(f.d, f.ii, f.qt, f.kb, f.h, f.b) = 0.0f;
    if (f.bf16Values) {
      // p rounded to bf16 (to nearest even) is the one rounding this adds:
      // at most 2^-9 of each weight (LANGUAGE.md 9.1's bound is 8e-3).
      f.pPairs(f.e, f.ii, f.jp, f.qt, f.kb, f.h, f.b) = cast(
          BFloat(16), f.blockExp(2 * f.jp + f.e, f.ii, f.qt, f.kb, f.h, f.b));
      f.rjPairs = RDom(0, 2, 0, f.blockK / 2, "rjp");
      Expr pair = f.pPairs(f.rjPairs.x, f.ii, f.rjPairs.y, f.qt, f.kb, f.h, f.b);
      Expr firstPair = f.keyBase.defined() ? f.blockFirstKey(f.kb) / 2 : f.kb * (f.blockK / 2);
      Expr values =
          f.vPairs(f.rjPairs.x, f.d, firstPair + f.rjPairs.y, kvHeadOf(f.h), f.b);
      f.blockPV(f.d, f.ii, f.qt, f.kb, f.h, f.b) += cast<float>(pair) * cast<float>(values);
    } else {
      f.blockPV(f.d, f.ii, f.qt, f.kb, f.h, f.b) +=
          p * f.vIn(f.channelAt(f.d), f.blockFirstKey(f.kb) + f.rj, kvHeadOf(f.h), f.b);
    }

    keyBlockPredicate = mask.blockVisible; // in terms of (qt, kb, b)
    if (f.cacheLen.defined()) {
      Expr exists = f.blockFirstKey(f.kb) < keys;
      keyBlockPredicate = keyBlockPredicate.defined() ? keyBlockPredicate && exists : exists;
    }
    if (sinkGroup >= 0)
      makeSinkPrefix(sinkGroup, sinkKeys);
  }

  /// The mask union's group that is split off as the state's start (see
  /// AlgorithmFuncs::sinkScore) and its S, or (-1, 0): a group of sink(S),
  /// alone or with causal, with S at most half a key block, in a union of
  /// plain rows with one key chunk. (Decode's key chunks keep block 0: with
  /// it gone, Halide trims the chunk's key loop and then realizes the block
  /// Funcs over a range of blocks, 15% slower; for a KV cache the prefix
  /// would be computed at the root in passes of its own, for a block saved.)
  std::pair<int, int> sinkPrefix() const {
    const std::vector<std::vector<int>> &groups = spec.maskGroups;
    if (groups.size() < 2 || spec.packed || spec.cache.any() || f.splits != 1)
      return {-1, 0};
    int found = -1;
    int64_t keys = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      int64_t sinks = -1;
      bool sinksAndCausalOnly = true;
      for (int n : groups[g]) {
        const MaskTermDesc &term = spec.masks.at((size_t)n);
        if (term.kind == MaskKind::Sink)
          sinks = sinks < 0 ? term.width : std::min(sinks, term.width);
        else if (term.kind != MaskKind::Causal)
          sinksAndCausalOnly = false;
      }
      if (sinks < 0 || !sinksAndCausalOnly)
        continue;
      if (found >= 0)
        return {-1, 0}; // two sink groups: keep the plain union
      found = (int)g;
      keys = sinks;
    }
    if (found < 0 || keys <= 0 || keys > f.blockK / 2)
      return {-1, 0};
    return {found, (int)keys};
  }

  /// Keys [0, S) of the sink group that the other groups do not see, as one
  /// small block per query tile: its max, sum and P.V in the units of a key
  /// block (pScale), which the state starts from.
  void makeSinkPrefix(int group, int sinkKeys) {
    Expr P = Expr((int32_t)f.groupP);
    Expr rA = f.qt * f.tileQ + f.ii;
    Expr iA = rA / P, hA = f.h * P + rA % P;
    defineScoreReduction(f, config, f.sinkQk, /*blockRows=*/true);
    ExprEnv env = makeEnv(iA, f.sk, hA, f.b);
    ScoreParts parts = finishScore(f, config, env, f.sinkQk(f.sk, rA, f.h, f.b));
    Expr visible = f.sk < f.Lk && masksFor(env, group, -1).visible &&
                   !masksFor(env, -1, group).visible;
    f.sinkScore(f.sk, f.ii, f.qt, f.h, f.b) = select(visible, parts.score, kMaskedScore);
    f.rsk = RDom(0, sinkKeys, "rsk");
    f.sinkMax(f.ii, f.qt, f.h, f.b) = kMaskedScore;
    f.sinkMax(f.ii, f.qt, f.h, f.b) =
        max(f.sinkMax(f.ii, f.qt, f.h, f.b), f.sinkScore(f.rsk, f.ii, f.qt, f.h, f.b));
    Expr s = f.sinkScore(f.sk, f.ii, f.qt, f.h, f.b);
    f.sinkExp(f.sk, f.ii, f.qt, f.h, f.b) =
        select(s > kMaskedThreshold, clampedExp(s - f.sinkMax(f.ii, f.qt, f.h, f.b), log2PScale()),
               0.0f);
    Expr p = f.sinkExp(f.rsk, f.ii, f.qt, f.h, f.b);
    f.sinkSum(f.ii, f.qt, f.h, f.b) = 0.0f;
    f.sinkSum(f.ii, f.qt, f.h, f.b) += p;
    f.sinkPV(f.d, f.ii, f.qt, f.h, f.b) = 0.0f;
    f.sinkPV(f.d, f.ii, f.qt, f.h, f.b) +=
        p * f.vIn(f.channelAt(f.d), f.rsk, kvHeadOf(f.h), f.b);
  }

  Expr keyBlockPredicate;
  float pScale = 1.0f; // the power of two every probability carries (makeBlocks)
  int log2PScale() const { return (int)std::lround(std::log2(pScale)); }

  /// The state (m, l, acc, u) of the online softmax: running maximum m, and
  /// the sums l = u * sum p_j and acc = u * sum p_j v_j in units u, a power
  /// of two halved whenever l passes 1/2. With every part's l at most 1/2,
  /// l stays <= 1 and |acc| <= l * max |v|: the sum cannot overflow while
  /// the answer acc / l is finite (it did once Lk * |v| > FLT_MAX). Halving
  /// is exact, so the numbers are those of the plain recurrence.
  static Tuple renormalise(const Expr &m, const Expr &l, const Expr &acc, const Expr &u) {
    Expr big = l > 0.5f;
    return Tuple(m, select(big, l * 0.5f, l), select(big, acc * 0.5f, acc),
                 select(big, u * 0.5f, u));
  }

  /// One of the two rescaling factors is exactly 1 (the larger maximum wins),
  /// so a single exponent per element does: e = exp(-|mOld - mPart|).
  /// Returns (alpha, beta): what rescales the state and the part.
  static std::pair<Expr, Expr> rescaling(const Expr &mOld, const Expr &mPart) {
    Expr diff = mOld - mPart;
    Expr e = clampedExp(-abs(diff));
    Expr oldWins = diff >= 0.0f;
    return {select(oldWins, 1.0f, e), select(oldWins, e, 1.0f)};
  }

  /// A state (m, l, acc, u) of one value column: acc from `column`, m, l and
  /// u from `row`, the same state read at the row's last column (see
  /// makeState: the rescaling is then computed once per row, not per vector).
  static Tuple atColumn(const Tuple &row, const Tuple &column) {
    return Tuple(row[0], row[1], column[2], row[3]);
  }

  /// The state absorbs a key block with maximum mPart, sum lPart <= 1/2 and
  /// weighted values accPart (in units of 1).
  /// The halving is decided on the state's l before the block adds (l <= 1
  /// is kept: at most 1/2 after halving plus the part's 1/2), so u and the
  /// test need no exponential: decided on the new l, every element of the
  /// update restated the rescaling's let chain (a third of the state's
  /// statement; compile time). Halving is exact: the same numbers.
  static Tuple absorb(const Tuple &st, const Expr &mPart, const Expr &lPart,
                      const Expr &accPart) {
    auto [alpha, beta] = rescaling(st[0], mPart);
    Expr half = select(st[1] > 0.5f, 0.5f, 1.0f);
    Expr u = st[3] * half;
    Expr betaU = beta * u; // the part in the state's units
    return Tuple(max(st[0], mPart), st[1] * half * alpha + lPart * betaU,
                 st[2] * half * alpha + accPart * betaU, u);
  }

  /// The state absorbs another state (a key chunk's): both are brought to the
  /// smaller unit (exact powers of two) before they add.
  static Tuple absorbState(const Tuple &st, const Tuple &part) {
    auto [alpha, beta] = rescaling(st[0], part[0]);
    Expr u = min(st[3], part[3]);
    Expr a = alpha * (u / st[3]), b = beta * (u / part[3]);
    return renormalise(max(st[0], part[0]), st[1] * a + part[1] * b, st[2] * a + part[2] * b,
                       u);
  }

  void makeState() {
    f.nBlocks = (f.Lk + (f.blockK - 1)) / f.blockK;
    if (f.keyBand > 0) // the band's blocks (fewer if the keys are fewer)
      f.nBlocks = Halide::Internal::simplify(min(f.nBlocks, bandBlocks));
    f.chunkBlocks = f.splits == 1 ? f.nBlocks : (f.nBlocks + (f.splits - 1)) / f.splits;
    // (The key block keeps the name of the one-dimensional domain it had.)
    f.stateDomain =
        RDom(Internal::ReductionDomain({{"rc", 0, f.Dv}, {"rk$x", 0, f.chunkBlocks}}));
    f.rc = f.stateDomain[0];
    f.rk = f.stateDomain[1];
    Var d = f.d, ii = f.ii, qt = f.qt, s = f.s, h = f.h, b = f.b;
    // One chunk: s is always 0 and the key block is rk itself.
    Expr kbA = f.splits == 1 ? Expr(f.rk) : s * f.chunkBlocks + f.rk;
    Expr pred = f.splits == 1 ? Expr() : Expr(kbA < f.nBlocks);
    // A band's few blocks are all visited: its start (a max and an even
    // rounding) made Halide keep the block test inside the key loop and split
    // that loop in three copies (window(256) compiled in 1.4 s, not 0.7 s, and
    // ran 3% slower); a block no row sees (the first tiles', whose band starts
    // at key 0) is masked key by key and adds nothing.
    if (keyBlockPredicate.defined() && f.keyBand == 0) {
      Expr maskPred = substitute(f.kb.name(), kbA, keyBlockPredicate);
      // Key chunks exist only where one query tile holds every row (decode):
      // qt is 0. Left in, a windowed test made Halide 14's simplifier crash
      // (SIGSEGV) on GQA decode at fixed sizes, e.g. Mistral's window(4096).
      if (f.splits > 1)
        maskPred = substitute(f.qt.name(), Expr(0), maskPred);
      pred = pred.defined() ? (pred && maskPred) : maskPred;
    }
    if (pred.defined())
      f.stateDomain.where(pred);
    // The sink prefix (one key chunk) is where the state starts; a row that
    // sees none of it starts from the empty state, as without one.
    if (f.hasSinkPrefix())
      f.state(d, ii, qt, s, h, b) =
          Tuple(f.sinkMax(ii, qt, h, b), f.sinkSum(ii, qt, h, b), f.sinkPV(d, ii, qt, h, b), 1.0f);
    else
      f.state(d, ii, qt, s, h, b) = Tuple(kMaskedScore, 0.0f, 0.0f, 1.0f);
    // m, l and u are the same in every value column of a row. Read at the
    // row's last column, which the update (columns in increasing order)
    // rewrites last, they are the same loads for every vector of the row, so
    // LLVM computes the rescaling once per row and key block, not once per
    // vector of columns (it was a ninth of a dense kernel's time). Vector
    // lanes of rc do not race: each vector loads before it stores.
    Tuple column = f.state(f.rc, ii, qt, s, h, b);
    Tuple row = f.state(f.Dv - 1, ii, qt, s, h, b);
    f.state(f.rc, ii, qt, s, h, b) =
        absorb(atColumn(row, column), f.blockMax(ii, qt, kbA, h, b),
               f.blockSum(ii, qt, kbA, h, b), f.blockPV(f.rc, ii, qt, kbA, h, b));
    f.state.update().allow_race_conditions();

    if (f.splits == 1) {
      f.merged(d, ii, qt, h, b) = f.state(d, ii, qt, 0, h, b);
      return;
    }
    // The chunks' partial states merge like key blocks do (empty chunks hold
    // the sentinel maximum and zero sums, so they add nothing).
    // As in the state's update, m, l and u are read at the row's last value
    // column (rewritten last, the chunks' loop being outside the columns'),
    // so the rescaling is computed once per row and chunk, not per vector of
    // columns (decode at L=256: the merge was a sixth of a call, 8 exponentials
    // and 16 divisions per row and chunk).
    f.rs = RDom(Internal::ReductionDomain({{"mc", 0, f.Dv}, {"rs$x", 0, f.splits}}));
    RVar mc = f.rs[0], chunk = f.rs[1];
    f.merged(d, ii, qt, h, b) = Tuple(kMaskedScore, 0.0f, 0.0f, 1.0f);
    f.merged(mc, ii, qt, h, b) =
        absorbState(atColumn(f.merged(f.Dv - 1, ii, qt, h, b), f.merged(mc, ii, qt, h, b)),
                    atColumn(f.state(f.Dv - 1, ii, qt, chunk, h, b),
                             f.state(mc, ii, qt, chunk, h, b)));
    f.merged.update().allow_race_conditions();
  }

  /// The merged state of query i, head h (rows r = i * P + h % P).
  Tuple mergedAt(const Expr &d, const Expr &i, const Expr &h, const Expr &b) {
    Expr P = Expr((int32_t)f.groupP);
    Expr r = i * P + h % P;
    return f.merged(d, r % f.tileQ, r / f.tileQ, h / P, b);
  }

  //--- Outputs ---------------------------------------------------------------//

  const ArgSpec &outputArg(const std::string &name) {
    auto it = argByName.find(name);
    if (it == argByName.end() || !it->second->isOutput)
      throw BackendError("kernel '" + config.name + "': missing output '" + name + "'");
    return *it->second;
  }

  /// An f32 result in its output's storage type: 16-bit outputs are rounded
  /// here, once, to nearest even (Halide's f32 -> f16 / bf16 casts).
  Expr stored(const std::string &name, const Expr &value) {
    ElemType type = outputArg(name).type;
    return type == ElemType::F32 ? value : cast(halideType(type), value);
  }

  void constrainOutput(Func out, const std::string &name) {
    const ArgSpec &arg = outputArg(name);
    if ((int)arg.shape.size() != out.dimensions())
      throw BackendError("kernel '" + config.name + "': output '" + name +
                         "' has rank " + std::to_string(arg.shape.size()) +
                         ", the algorithm produces rank " + std::to_string(out.dimensions()));
    OutputImageParam buf = out.output_buffer();
    constrainDims(arg, [&](int k) { return buf.dim(k); }, false);
    Region estimates;
    for (size_t k = arg.shape.size(); k-- > 0;)
      estimates.push_back(Range(0, estimateOf(arg.shape[k])));
    out.set_estimates(estimates);
    f.outputs.push_back(out);
  }

  void makeOutputs() {
    Var d = f.d, i = f.i, h = f.h, b = f.b, j = f.j;
    // out reads l at the row's last column, as the state's update reads m, l
    // and u (UnreadStores.h drops their stores to columns no load reads).
    Expr l = mergedAt(f.Dv - 1, i, h, b)[1];
    Expr acc = mergedAt(f.slotOf(d), i, h, b)[2];
    f.attn(d, i, h, b) = select(l > 0.0f, acc / l, 0.0f);

    bool outProj = spec.outputProjected();
    if (outProj) {
      RDom r(0, f.Dv, 0, f.H, "ro");
      Func proj = exactFunc("out_proj");
      proj(f.m, i, b) = spec.projBias.o ? widened(param("b_o")(f.m)) : Expr(0.0f);
      Expr at = r.y * f.Dv + r.x;
      const int64_t *width = as_const_int(f.Dv);
      if (width && weightsInPlace(*width)) {
        proj(f.m, i, b) += f.attn(r.x, i, r.y, b) * widened(param("w_o")(at, f.m));
        f.inPlaceProjections.push_back({proj, (int)spec.modelDim});
      } else {
        proj(f.m, i, b) += f.attn(r.x, i, r.y, b) * transposedWeight("w_o")(f.m, at);
      }
      Expr projected = proj(f.m, i, b);
      if (spec.packed)
        f.out(f.m, i) = stored("out", substitute(b.name(), Expr(0), projected)); // [Tq, M]
      else
        f.out(f.m, i, b) = stored("out", projected);
      f.precomputed.push_back(proj);
    } else if (spec.packed) {
      f.out(d, h, i) = stored("out", f.attn(d, i, h, 0)); // tokens [Tq, H, Dv]
    } else if (spec.layout == Layout::BSHD) {
      f.out(d, h, i, b) = stored("out", f.attn(d, i, h, b));
    } else {
      f.out(d, i, h, b) = stored("out", f.attn(d, i, h, b));
    }
    constrainOutput(f.out, "out");

    // weights and lse read them at column 0: vectorized over rows at a value
    // width of 2 to 4, a read at the last column is a strided load at an
    // offset, which Halide 14 lowers to an aligned dense load at a misaligned
    // address (a crash at value_dim 4).
    Tuple st0 = mergedAt(0, i, h, b);
    if (spec.outputWeights) {
      defineScoreReduction(f, config, f.qkWeights, /*blockRows=*/false);
      ExprEnv env = makeEnv(i, j, h, b);
      ScoreParts parts = finishScore(f, config, env, f.qkWeights(j, i, h, b));
      MaskParts mask = masksFor(env);
      Expr visible = mask.visible && st0[1] > 0.0f;
      // l is in units u and carries pScale: p = exp(s - m) * pScale * u / l.
      f.weights(j, i, h, b) = stored(
          "weights",
          select(visible, clampedExp(parts.score - st0[0]) * (pScale * st0[3] / st0[1]), 0.0f));
      constrainOutput(f.weights, "weights");
    }
    if (spec.outputLse) {
      Expr lse = select(st0[1] > 0.0f, st0[0] + (log(st0[1] / st0[3]) - std::log(pScale)),
                        negInfinity());
      if (spec.packed)
        f.lse(i, h) = substitute(b.name(), Expr(0), lse); // [H, Tq]
      else
        f.lse(i, h, b) = lse;
      constrainOutput(f.lse, "lse");
    }
  }
};

} // namespace

AlgorithmFuncs buildAlgorithm(const AttentionConfig &config, const Target &target,
                              Bf16Products bf16, DecodeRows decodeRows, Bf16Rows bf16Rows) {
  AlgorithmFuncs funcs;
  funcs.name = config.name;
  try {
    AlgorithmBuilder(config, funcs, target, bf16, decodeRows, bf16Rows).build();
  } catch (const BackendError &) {
    throw;
  } catch (const Halide::Error &e) {
    throw BackendError("kernel '" + config.name + "': Halide rejected the algorithm: " +
                       e.what());
  }
  return funcs;
}

} // namespace attnc::halide_backend
