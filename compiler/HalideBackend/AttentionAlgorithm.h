//===- AttentionAlgorithm.h - The Halide algorithm of one kernel -*- C++ -*-===//
//
// buildAlgorithm() turns an AttentionConfig into Halide Funcs: a FlashAttention
// style online softmax over key blocks of `blockK` keys for query tiles of
// `tileQ` rows. Per (query tile, key block) it forms the block's scores, their
// maximum, exponentials, sum and P*V product, and merges them into a running
// (max, sum, acc) state, so no Lq x Lk buffer exists unless `weights` is an
// output. It makes no scheduling call (see Schedules.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"
#include "compiler/HalideBackend/Prefetches.h"

#include <Halide.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace attnc::halide_backend {

/// A Func with exactly this name: Func(std::string) makes names unique per
/// process ("out$1"), but argument names are part of the contract.
inline Halide::Func exactFunc(const std::string &name) {
  return Halide::Func(Halide::Internal::Function(name));
}

/// The named Funcs, parameters and variables of one kernel. Funcs that the
/// kernel does not need stay undefined (`!f.defined()`).
/// The largest divisor of `n` that is at most `limit` (at least 1): register
/// blocks that tile a block or a row exactly.
inline int divisorAtMost(int n, int limit) {
  for (int k = std::min(n, limit); k > 1; --k)
    if (n % k == 0)
      return k;
  return 1;
}

struct AlgorithmFuncs {
  std::string name;

  /// Every input, in contract order (config.arguments without the outputs).
  std::vector<Halide::ImageParam> inputs;
  /// The output Funcs in the entry point's order: the caches it writes in
  /// place (k_cache, v_cache), then out, weights and lse.
  std::vector<Halide::Func> outputs;

  // Tiling of the algorithm: query tile rows and keys per block.
  int tileQ = 32;
  int blockK = 64;
  /// Query heads per row group: the block Funcs run over "rows" r = i * P + p
  /// of query i and head h = hb * P + p, so the P query heads that share one
  /// KV head (GQA) form one tile and each K/V block is loaded once for all of
  /// them. P = 1 (rows are queries, hb is the query head) unless grouped.
  int groupP = 1;
  /// The key blocks are split into `splits` chunks with a partial softmax
  /// state each, merged at the end (decode: the keys spread over threads).
  int splits = 1;
  /// Decode reads its K and V rows with no prefetch instructions of its own
  /// (DecodeRows::HardwarePrefetch): prefetchDecodeRows adds none.
  bool decodeRowsByHardware = false;
  /// Paged decode: one task per (sequence, key chunk) over every KV head,
  /// the heads' loop inside the key blocks' (a page's heads read together).
  bool headsInsideBlocks = false;
  /// Under a window of width `keyBand` (0: none) a query tile sees one band
  /// of consecutive keys, and its key block 0 starts where that band does:
  /// `keyBase`, a function of qt (AttentionAlgorithm.cpp chooseKeyBand).
  /// Otherwise key block kb starts at kb * blockK.
  int keyBand = 0;
  Halide::Expr keyBase;
  /// The first key of key block kb of query tile qt.
  Halide::Expr blockFirstKey(const Halide::Expr &kb) const {
    return keyBase.defined() ? keyBase + kb * blockK : kb * blockK;
  }
  /// Decode reading bf16 K and V rows in place (0: no; otherwise the vector
  /// lanes): Q.K^T's sum and P.V's value columns, and with them the softmax
  /// state and its merge, run over slots in the order a row's words hold
  /// its channels, chunk by chunk of 2 x evenOddLanes channels: the chunk's
  /// even channels, then its odd ones. Each vector of K or V is then widened
  /// from its 32-bit words by one shift or one mask (Bf16PairLoads.h), not
  /// by two instructions; the queries are stored in slot order, and `out`
  /// reads the slots back in channel order.
  int evenOddLanes = 0;
  /// qk's update adds each (key, row) element's lanes once to the zeros of
  /// its pure stage (decode's rfactor): SingleAddendSums stores the sum.
  bool qkSummedOnce = false;
  /// The channel slot s holds, and the slot of channel c.
  Halide::Expr channelAt(const Halide::Expr &s) const {
    if (!evenOddLanes)
      return s;
    const int lanes = evenOddLanes, chunk = 2 * evenOddLanes;
    return s / chunk * chunk + s % lanes * 2 + s / lanes % 2;
  }
  Halide::Expr slotOf(const Halide::Expr &c) const {
    if (!evenOddLanes)
      return c;
    const int lanes = evenOddLanes, chunk = 2 * evenOddLanes;
    return c / chunk * chunk + c % 2 * lanes + c % chunk / 2;
  }

  // Variables. Row r = qt * tileQ + ii, key j = blockFirstKey(kb) + jj, and key
  // block kb = s * chunkBlocks + rk. In the block Funcs `i` is the row and `h`
  // the row group hb (the query head when P = 1).
  Halide::Var d{"d"}, i{"i"}, j{"j"}, h{"h"}, b{"b"}, g{"g"};
  Halide::Var ii{"ii"}, qt{"qt"}, jj{"jj"}, kb{"kb"}, n{"n"}, m{"m"}, s{"s"};
  Halide::RDom rd, rj, rs; // over D (dot), a key block, (value column, split)
  /// Tiles of query-row vectors whose rows see keys [keysBegin, keysEnd) of
  /// a block (causal diagonals, packed sequences): block_score is then an
  /// update over the chunks of `qkKeys` keys that hold any of them (rjc:
  /// key in chunk, chunk), and block_exp one over rj, so Q.K^T and the
  /// exponentials skip the keys no row sees, as the reductions over rj do.
  /// Their pure stages are undefined (never stored, never read).
  bool scoresByChunk = false;
  int qkKeys = 8;
  Halide::RDom rjc;
  /// softmax_state's update domain: value columns rc (innermost) by a
  /// chunk's key blocks rk. The column is an RVar so the update may read a
  /// row's m, l and u at its last column (makeState).
  Halide::RDom stateDomain;
  Halide::RVar rc, rk;

  // Inputs after layout, projection and clamping: (d, i, h, b) / (d, j, g, b).
  Halide::Func qIn = exactFunc("q_in"), kIn = exactFunc("k_in"), vIn = exactFunc("v_in");
  /// Rotary embeddings (undefined without): the float64 frequencies (c), the
  /// Tuple(cos, sin) table (c, p); q_in and k_in are then the turned rows.
  Halide::Func ropeInvFreq, ropeTable;
  /// A custom bias that reads the query and key positions only as j - i
  /// (T5's buckets): its values per (j - i, h, b), once per call
  /// (ScoreFunctions.cpp customBias); undefined for other biases.
  /// `biasTableChecked`: whether the bias was examined already.
  Halide::Func biasTable = exactFunc("bias_table");
  bool biasTableChecked = false;
  /// Queries as the dot product reads them: scaled (scaleOnQuery), multiplied
  /// by W (general score); (d, i, h, b).
  Halide::Func qs = exactFunc("q_scaled");
  /// qs by rows (r, hb) of the block Funcs; the same Func as qs when P = 1.
  Halide::Func qRow = exactFunc("q_rows");
  /// Hoisted per-query / per-key parts of the score (additive: W_q q, W_k k).
  Halide::Func qHoist = exactFunc("q_hoist"), kHoist = exactFunc("k_hoist");
  /// Cosine score: squared row norms (i, h, b) / (j, g, b) and the keys
  /// divided by their norm (d, j, g, b); undefined for other kinds.
  Halide::Func qNormSq = exactFunc("q_norm_sq"), kNormSq = exactFunc("k_norm_sq");
  Halide::Func kUnit = exactFunc("k_unit");
  /// Root-level precomputations (projections, positional encodings), in
  /// producer order; those with an update definition are the projections'
  /// matrix products (the output projection reads `attn`).
  std::vector<Halide::Func> precomputed;
  /// batch = packed: cu_seqlens checked and the token -> sequence tables,
  /// computed once per call before anything else.
  std::vector<Halide::Func> sequenceTables;
  /// KV caches (undefined without): k_cache and v_cache are outputs the
  /// kernel updates in place (an undefined pure definition keeps what the
  /// caller's buffer holds; an update writes the new rows), read back by
  /// k_in / v_in; cache_len (b) once checked, so nothing is written when a
  /// sequence would overflow its cache.
  Halide::Func kCache = exactFunc("k_cache"), vCache = exactFunc("v_cache");
  /// The new keys turned by rotary embeddings before they are stored, (d, j,
  /// g, b); undefined without rotary.
  Halide::Func kNewRotated;
  Halide::Func cacheLen;
  std::vector<Halide::Func> caches; // the cache outputs, for the schedule
  /// Projections: the rows they read, (m, row, b) (x, x_q or x_kv after
  /// positions); undefined without `project`.
  Halide::Func xQuery, xKeys;
  /// Projection weights [N, M] transposed to (n, m) for the matrix products.
  std::vector<Halide::Func> weightTransposes;
  /// Projections that read their weight [N, M] in place instead, reducing
  /// along its contiguous M (KV-cache kernels: a call projects a few new
  /// rows, which would not repay a transposed copy of every weight).
  struct InPlaceProjection {
    Halide::Func func;
    int columns; // of one row (one head's, for q / k / v): all are computed
  };
  std::vector<InPlaceProjection> inPlaceProjections;
  /// The output projection's tiles are `out`'s own (out computed tile by
  /// tile with the product's sums inside): the output schedules skip it.
  bool outIsProductTiles = false;
  /// With an output projection, `attn` (the heads' results it reads) is
  /// computed in query tiles with softmax_state inside, as `out` is without
  /// one: schedulePrecomputed leaves it to the state's schedule.
  bool attnTiledByState = false;

  // One key block of one query tile.
  Halide::Func qk = exactFunc("qk");                    // (j, i, h, b): the raw score reduction
  Halide::Func blockScore = exactFunc("block_score");   // (jj, ii, qt, kb, h, b): masked score
  Halide::Func blockMax = exactFunc("block_max");       // (ii, qt, kb, h, b)
  Halide::Func blockExp = exactFunc("block_exp");       // (jj, ii, qt, kb, h, b)
  Halide::Func blockSum = exactFunc("block_sum");       // (ii, qt, kb, h, b)
  Halide::Func blockPV = exactFunc("block_pv");         // (d, ii, qt, kb, h, b)
  /// AVX-512 BF16 (`vdpbf16ps`: pairs of bf16 products summed into f32
  /// lanes) for Q.K^T, and for P.V where bf16Values; set by buildAlgorithm
  /// for the targets and kernels that allow it. Then q_pairs, k_bf16,
  /// v_pairs and p_pairs hold the operands as bf16 pairs (e = 0, 1
  /// innermost), qk sums over rdPairs and block_pv over rjPairs, and the
  /// scale multiplies the score (a scaled query would no longer be a bf16
  /// value).
  bool bf16Products = false;
  bool bf16Values = false;
  Halide::Func qPairs = exactFunc("q_pairs"); // (e, i, dp, h, b): row i's q[2 dp + e]
  Halide::Func kBf16 = exactFunc("k_bf16");   // (d, j, g, b): k as stored
  Halide::Func vPairs = exactFunc("v_pairs"); // (e, d, jp, g, b): v[2 jp + e][d], 0 past Lk
  Halide::Func pPairs = exactFunc("p_pairs"); // (e, ii, jp, qt, kb, h, b): bf16(block_exp)
  Halide::RDom rdPairs, rjPairs;              // (e, dp) over Dk; (e, jp) over a key block
  Halide::Var e{"e"}, dp{"dp"}, jp{"jp"};
  /// A union's sink group (`causal & (window(W) | sink(S))`): keys [0, S)
  /// that no other group sees, once per query tile (sk < S), as the state's
  /// starting value; the key blocks then follow the other groups only, so a
  /// tile far from the start visits no block for its S sinks. Undefined
  /// when the mask has no such group (AttentionAlgorithm.cpp, sinkPrefix).
  Halide::Func sinkQk = exactFunc("sink_qk");       // (j, i, h, b), j < S
  Halide::Func sinkScore = exactFunc("sink_score"); // (sk, ii, qt, h, b)
  Halide::Func sinkMax = exactFunc("sink_max");     // (ii, qt, h, b)
  Halide::Func sinkExp = exactFunc("sink_exp");     // (sk, ii, qt, h, b)
  Halide::Func sinkSum = exactFunc("sink_sum");     // (ii, qt, h, b)
  Halide::Func sinkPV = exactFunc("sink_pv");       // (d, ii, qt, h, b)
  Halide::Var sk{"sk"};
  Halide::RDom rsk;
  bool hasSinkPrefix() const { return sinkScore.defined(); }
  /// The sink prefix's Funcs in producer order, for the schedules and printers.
  std::vector<Halide::Func> sinkFuncs() const {
    return {sinkQk, sinkScore, sinkMax, sinkExp, sinkSum, sinkPV};
  }
  /// Online softmax state over one chunk's key blocks: Tuple(max, sum, acc),
  /// (d, ii, qt, s, h, b).
  Halide::Func state = exactFunc("softmax_state");
  /// The chunks' states merged: (d, ii, qt, h, b); a plain view when splits = 1.
  Halide::Func merged = exactFunc("softmax_merged");
  /// Attention result per head before the output layout: (d, i, h, b).
  Halide::Func attn = exactFunc("attn");

  // Outputs (undefined when not requested).
  Halide::Func out = exactFunc("out"), weights = exactFunc("weights"), lse = exactFunc("lse");
  Halide::Func qkWeights = exactFunc("qk_weights"); // the score reduction for `weights`
  /// What output `output` computes per vector of itself (scheduleOutput):
  /// the weights' scores for `weights`, else nothing.
  Halide::Func perVectorOf(const Halide::Func &output) const {
    return weights.defined() && output.name() == weights.name() ? qkWeights : Halide::Func();
  }

  /// NAME_backward (Backward.cpp): one pass (or two) over (query tile, key
  /// block) tiles and the chain rule after them. Undefined for NAME.
  struct Gradients {
    /// One pass sums dK, dV and dQ from each tile (square tiles, every score
    /// but additive); otherwise a key pass and a query pass (chosen with the
    /// tiles, makeGradients).
    bool singlePass = false;
    /// The single pass: one task per (row chunk, row group, batch row) visits
    /// the key blocks, and per block the chunk's query tiles, adding into
    /// `sums` (d, slot, chunk, hb, b): slots [0, K) hold the chunk's dK
    /// partials, [K, 2K) its dV partials (K = blocks x block keys), then dQ of
    /// the chunk's rows. dKV below adds the chunks' dK and dV partials, dQ is
    /// a view. `pairs` is (u, v, which sum, tile of the chunk, key block);
    /// `chunks` the chunk count (a run-time one when the batch is), `chunk`
    /// its Var.
    Halide::Func sums = exactFunc("d_sums");
    Halide::RDom pairs;
    Halide::Expr chunks;
    Halide::Var chunk{"chunk"};
    /// (i, h, b): D_i = rowsum(dO * O) of the attention's output O and its
    /// gradient dO, and lse (non-finite values made +huge).
    Halide::Func rowDot = exactFunc("row_dot"), rowLse = exactFunc("row_lse");
    /// One tile of a pass: scores' reduction and dO.V^T (j, ii, qt, hb, b),
    /// then P and dS (jj, ii, qt, kb, hb, b); rows and d_out rows transposed
    /// (ii, d, qt, hb, b).
    struct Tile {
      Halide::Func qk, dp, p, ds, qT, doT;
    } keyTile, queryTile, outputTile;
    /// Key pass: Tuple(dK, dV) of a key block (d, jj, kb, hb, b), over the
    /// block's query tiles `rowTiles` (rows r = y * tileQ + x); the single
    /// pass's sums as a pure view.
    Halide::Func dKV = exactFunc("d_kv");
    Halide::RDom rowTiles;
    /// Query pass: dQ of the score's query rows (d, ii, qt, hb, b) over the
    /// key blocks `keyBlocks` (keys j = y * blockK + x); or a view of sums.
    Halide::Func dQ = exactFunc("d_q_rows");
    Halide::RDom keyBlocks;
    /// With an output projection, the attention's output O per head is not
    /// an argument: an output pass recomputes it, (d, ii, qt, hb, b) summed
    /// over `outputBlocks` like dQ. Undefined otherwise.
    Halide::Func oRows = exactFunc("o_rows");
    Halide::RDom outputBlocks;
    /// Declared f32 inputs read by a custom score or bias: per read, a
    /// scatter of dS * d(score)/d(read) over every (key, row) of `pairs`
    /// (jj, ii, kb, qt, hb, b), serial, with its own tile at kb.
    struct Scatter {
      Halide::Func sum;
      Halide::RDom pairs;
      Tile tile;
    };
    std::vector<Scatter> scatters;
    /// Chain-rule stages at the root (general's W, cosine's norms, gradients
    /// laid out per head), in producer order; `products` are the matrix
    /// products among them (projections' gradients).
    std::vector<Halide::Func> chain, products;
    /// The extent of a chain stage's first dimension where it is one
    /// expression (gradients laid out per head: width x heads), by name.
    std::map<std::string, Halide::Expr> chainExtents;
  } grad;
  bool isBackward() const { return grad.dKV.defined(); }

  /// Sizes as Halide expressions (constants when fixed).
  Halide::Expr B, H, G, Lq, Lk, D, Dk, Dv;
  /// Key blocks in all, and per chunk of a split.
  Halide::Expr nBlocks, chunkBlocks;

  /// Key loops whose rows of K and V are prefetched ahead (Prefetches.h).
  std::vector<RowPrefetch> rowPrefetches;
  /// A query tile's work grows with its index (causal rows: tile qt sees
  /// qt + 1 key blocks), and the parallel loop of the tiles that the tuned
  /// schedule names here (Func, task Var) runs last tile first
  /// (HeaviestTasksFirst.h); empty: in index order.
  bool tileWorkGrows = false;
  std::pair<std::string, std::string> heaviestTasksFirst;

  /// What applySchedule chose, for `--emit=halide` (policy, tiles, loops).
  std::string policyName;
  std::vector<std::string> scheduleNotes;

  /// The pipeline of `outputs` (a fresh handle each call; Funcs are shared).
  Halide::Pipeline pipeline() const { return Halide::Pipeline(outputs); }
  /// The entry point's input arguments in contract order.
  std::vector<Halide::Argument> arguments() const;
};

/// Where AlgorithmFuncs::bf16Products may be used, if the target and the
/// kernel allow it at all: Q.K^T and P.V, Q.K^T only, nowhere.
enum class Bf16Products { ScoresAndValues, ScoresOnly, None };

/// How decode reads its K and V rows from memory: prefetched ahead by
/// instructions of its own (Prefetches.h), or left to the core's prefetchers
/// in longer key blocks (decodeRowsByHardwareByDefault, TargetDispatch.h).
enum class DecodeRows { SoftwarePrefetch, HardwarePrefetch };

/// Whether decode may read bf16 K/V rows as pairs of channels
/// (AlgorithmFuncs::evenOddLanes): for the tuned schedule, whose decode
/// loops keep each vector's parity a constant that Bf16PairLoads can read.
enum class Bf16Rows { InChannelOrder, AsChannelPairs };

/// Builds the algorithm of one kernel for `target` (which only decides
/// AlgorithmFuncs::bf16Products); throws BackendError on a config it cannot
/// express. Makes no scheduling call.
AlgorithmFuncs buildAlgorithm(const AttentionConfig &config,
                              const Halide::Target &target = Halide::Target(),
                              Bf16Products bf16 = Bf16Products::ScoresAndValues,
                              DecodeRows decodeRows = DecodeRows::SoftwarePrefetch,
                              Bf16Rows bf16Rows = Bf16Rows::InChannelOrder);

} // namespace attnc::halide_backend
