//===- AlgorithmParts.h - Pieces shared by the algorithm's files -*- C++ -*-===//
//
// Internal to the Halide back end: the score table (ScoreFunctions.cpp), the
// mask terms (Masks.cpp) and the numeric helpers they share with
// AttentionAlgorithm.cpp. Each score kind and each mask kind has its meaning
// in exactly one function of those files.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionAlgorithm.h"

#include <functional>

namespace attnc::halide_backend {

/// Masked scores hold this finite sentinel: Halide compiles with fast-math
/// flags, so -inf and comparisons against it are not reliable.
constexpr float kMaskedScore = -1e30f;
constexpr float kMaskedThreshold = -5e29f;

/// e^x * 2^log2Scale for x <= 0, to about 1e-7 relative (x is clamped where
/// the result would leave the normal floats).
Halide::Expr clampedExp(const Halide::Expr &x, int log2Scale = 0);
/// A vectorizable tanh: an odd series near 0, clampedExp beyond (relative
/// error ~1e-6 everywhere, no cancellation near 0).
Halide::Expr approxTanh(const Halide::Expr &x);
/// The softcap c * tanh(s / c), accurate for every c in float range
/// (s itself when s / c underflows).
Halide::Expr softcapScore(const Halide::Expr &s, float c);
/// A float -inf that survives constant folding.
Halide::Expr negInfinity();
/// A load of 16-bit storage (f16, bf16) widened to f32, which is exact;
/// other loads as they are. Every read of a float argument goes through it.
Halide::Expr widened(const Halide::Expr &load);

using ParamLookup = std::function<Halide::ImageParam(const std::string &)>;

struct ScoreInputs {
  AlgorithmFuncs &f;
  const AttentionConfig &config;
  ParamLookup param;
};

/// Defines f.qs, f.qHoist, f.kHoist and f.rd for the config's score kind.
void defineScoreInputs(ScoreInputs &in);

/// Defines `qk(j, i, h, b)`: the score's reduction (dot product, or the
/// additive MLP's sum over hidden units). With `blockRows`, i is a block row
/// and h a row group (f.qRow, see AlgorithmFuncs::groupP); else query and head.
void defineScoreReduction(AlgorithmFuncs &f, const AttentionConfig &config, Halide::Func qk,
                          bool blockRows);

struct ScoreParts {
  Halide::Expr score; // scaled, soft-capped, biased
  Halide::Expr slope; // d score / d raw (withSlope only): the backward's chain rule
  Halide::Expr post;  // d score / d (the custom score's value) (withSlope only)
};

/// Applies the custom score, scale, softcap and bias to the raw reduction.
ScoreParts finishScore(AlgorithmFuncs &f, const AttentionConfig &config, ExprEnv env,
                       const Halide::Expr &raw, bool withSlope = false);

/// Whether the scale multiplies q before the score (q . k linear in q, and
/// q not read as bf16 pairs: AlgorithmFuncs::bf16Products).
bool scaleFoldedIntoQuery(const AttentionConfig &config, const AlgorithmFuncs &f);


struct PackedSequences;
/// Where row t of sequence b lives in a KV cache (Cache.cpp): contiguous
/// [B, G, Lmax, W] / [B, Lmax, G, W], or paged [num_blocks, G, block, W] /
/// [num_blocks, block, G, W] through the block table.
struct CacheLayout {
  CacheLayout(const KernelDesc &spec, const Halide::Expr &rowsPerSequence,
              const Halide::Expr &numBlocks, Halide::ImageParam blockTable);
  bool bshd, paged;
  int32_t block;
  Halide::Expr rows;      // contiguous: Lmax
  Halide::Expr numBlocks; // paged: the pool's blocks
  Halide::ImageParam blockTable;
  /// The pool block of row t of sequence b (clamped into the pool).
  Halide::Expr blockOf(const Halide::Expr &t, const Halide::Expr &b) const;
  /// cache(...) at channel d of row t, kv head g, sequence b.
  Halide::Expr at(Halide::Func cache, const Halide::Expr &d, const Halide::Expr &t,
                  const Halide::Expr &g, const Halide::Expr &b) const;
  /// Defines an update of `cache` storing `value` there.
  void write(Halide::Func cache, const Halide::Expr &d, const Halide::Expr &t,
             const Halide::Expr &g, const Halide::Expr &b, const Halide::Expr &value) const;

private:
  /// The cache's Halide coordinates (innermost first) of that element.
  std::vector<Halide::Expr> coordinates(const Halide::Expr &d, const Halide::Expr &t,
                                        const Halide::Expr &g, const Halide::Expr &b) const;
};

/// cache_len (b), checked at the root before anything reads it: every
/// sequence's rows fit its cache, and (paged) every block it uses is in the
/// pool; otherwise the call fails naming the sequence. The check's Funcs go
/// to `tables`.
Halide::Func checkedCacheLengths(Halide::ImageParam cacheLen, const CacheLayout &layout,
                                 const Halide::Expr &B, const Halide::Expr &Lq,
                                 std::vector<Halide::Func> &tables);

struct MaskInputs {
  AlgorithmFuncs &f;
  const AttentionConfig &config;
  ParamLookup param;
  const PackedSequences *packed = nullptr; // batch = packed
  Halide::Func cacheLen; // KV caches: (b) -> cache_len[b]; undefined without
  /// A union's groups to use: every one (both -1), one alone, or all but one
  /// (the sink prefix of AttentionAlgorithm.cpp).
  int onlyGroup = -1, skipGroup = -1;
};

struct MaskParts {
  Halide::Expr visible;      // per (i, j) of `env`, ANDed over the terms
  Halide::Expr blockVisible; // conservative per (qt, kb, b); undefined when every block counts
  Halide::Expr keysEnd;      // one past the last key a row of tile qt sees (per qt, b); undefined: unbounded
  Halide::Expr keysBegin;    // the first key a row of tile qt sees (packed: per qt); undefined: 0
};

/// The visibility of key env.j for query env.i, and which key blocks of a
/// query tile can hold a visible key (used to skip whole blocks).
MaskParts buildMask(MaskInputs &in, const ExprEnv &env);

/// Packed batches (Packed.cpp): the validated cu_seqlens, each query token's
/// frame in its sequence and each key token's position in its own.
struct PackedSequences {
  Halide::Func cuQ, cuK;               // (b) -> first token of sequence b, b in [0, B]
  /// (t) -> Tuple(b, local row, first key token, Lk_b, Lq_b, ip) of query token t.
  Halide::Func queryFrame;
  Halide::Func keyPositions;           // (t) -> key token t's position in its sequence
  Halide::Expr count, Tq, Tk;          // B and the token totals
  std::vector<Halide::Func> tables;    // computed once per call, in producer order
  struct Frame {
    Halide::Expr b, i, j, ip, Lq, Lk; // the sequence, local indices, its sizes
    Halide::Expr keyVisible;          // key j is one of the sequence's keys
  };
  /// Query row i (a token) and key j (a token) in the query's sequence.
  Frame frame(const Halide::Expr &i, const Halide::Expr &j) const;
  /// Key token j's position in its own sequence.
  Halide::Expr keyPosition(const Halide::Expr &j) const;
};
PackedSequences makePackedSequences(Halide::ImageParam cuQ, Halide::ImageParam cuK,
                                    const Halide::Expr &Tq, const Halide::Expr &Tk);

/// Rotary embeddings (Rotary.cpp): the cosine and sine of pair c's angle at
/// position p, Tuple(cos, sin) over (c, p), from float64 angles.
struct RotaryTable {
  Halide::Func invFreq; // (c): base^(-2c / dims), float64
  Halide::Func cosSin;  // (c, p)
};
RotaryTable makeRotaryTable(const RotarySpec &rotary);
/// out(d, row, head, b) = in turned at `position` (an Expr of in's row var);
/// `transposed` turns back (the backward's chain rule: R^T = R(-angle)).
void rotateRows(Halide::Func out, Halide::Func in, const RotaryTable &table,
                const RotarySpec &rotary, const Halide::Expr &position,
                bool transposed = false);

/// What the backward kernel (Backward.cpp) takes from the algorithm
/// builder, which has defined the inputs, score inputs and row queries as
/// for the forward kernel: its per-use environment and mask, and its
/// output helpers.
struct GradientInputs {
  AlgorithmFuncs &f;
  const AttentionConfig &config;
  ParamLookup param;
  std::function<ExprEnv(Halide::Expr i, Halide::Expr j, Halide::Expr h, Halide::Expr b)> env;
  std::function<MaskParts(const ExprEnv &)> mask;
  /// Whether key j is one of query i's keys at all (packed: of its sequence).
  std::function<Halide::Expr(Halide::Expr i, Halide::Expr j)> keyExists;
  /// The value rounded to output `name`'s storage type.
  std::function<Halide::Expr(const std::string &name, const Halide::Expr &value)> stored;
  /// Checks and constrains output `name` and appends it to f.outputs.
  std::function<void(Halide::Func, const std::string &name)> constrainOutput;
  /// Rotary positions of query row i and key row j (packed: in their own
  /// sequence), as the forward kernel turned them.
  std::function<Halide::Expr(Halide::Expr i)> queryPosition, keyPosition;
};

/// Defines NAME_backward's gradients (FlashAttention-2's backward: the
/// probabilities recomputed from lse per tile) and its outputs.
void defineGradients(GradientInputs &in);

} // namespace attnc::halide_backend
