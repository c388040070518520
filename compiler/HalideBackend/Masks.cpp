//===- Masks.cpp - Which keys a query sees --------------------------------===//
//
// docs/language.md §4 and docs/language.md, mask masks in Halide: each term's
// element test and, for terms that bound the keys (causal, window, sink,
// valid_len, prefix, and the interval handed down by attn-analyze-mask), a
// conservative test of whether a key block can hold any visible key of a
// query tile, so the key-block loop skips it. Terms combine as the kernel's
// groups say: a conjunction, or a union of conjunctions.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"
#include "compiler/HalideBackend/BackendError.h"

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

namespace {
/// The key and query-position ranges of one (query tile, key block) pair.
struct BlockRange {
  Expr jMin, jMax, ipMin, ipMax;
  Expr b; // the batch row (packed: the sequence of the tile's first row)
};

void andWith(Expr &acc, const Expr &term) { acc = acc.defined() ? (acc && term) : term; }

Expr boundValue(const KeyBound &bound, const Expr &ip, const Expr &validLen) {
  Expr off = Expr((int32_t)bound.offset);
  return bound.kind == KeyBound::RelativeToIp ? ip + off : validLen + off;
}
} // namespace

namespace {
/// One term's element test and, when it has one, its key-block test.
struct TermTests {
  Expr visible, blockVisible;
};

/// Whether a custom expression reads the key index j.
bool readsKey(const ExprGraph &graph) {
  for (const ExprNode &node : graph.nodes)
    if (node.op == ExprNode::Var && node.name == "j")
      return true;
  return false;
}
} // namespace

MaskParts buildMask(MaskInputs &in, const ExprEnv &env) {
  AlgorithmFuncs &f = in.f;
  const AttentionConfig &config = in.config;
  BlockRange r;
  // Query i sits at ip = i + off: bottom-right aligned, or after its
  // sequence's cached rows.
  Expr off = in.cacheLen.defined() ? in.cacheLen(f.b) : f.Lk - f.Lq;
  r.b = f.b;
  r.jMin = f.blockFirstKey(f.kb);
  r.jMax = r.jMin + (f.blockK - 1);
  // Rows r = i * P + p: the tile's queries are its rows divided by P.
  Expr P = Expr((int32_t)f.groupP);
  r.ipMin = (f.qt * f.tileQ) / P + off;
  r.ipMax = (f.qt * f.tileQ + (f.tileQ - 1)) / P + off;
  Expr validLenB, validLenEnv;
  bool hasValidLen = config.kernel.hasMask(MaskKind::ValidLen) ||
                     config.interval.lo.kind == KeyBound::ValidLen ||
                     config.interval.hi.kind == KeyBound::ValidLen;
  if (hasValidLen) {
    ImageParam vl = in.param("valid_len");
    validLenB = vl(r.b);
    validLenEnv = vl(env.b);
  }

  // Packed: a tile may hold rows of several sequences. Its key blocks are
  // those of its sequences' keys, narrowed by the interval of the mask
  // analysis (in the frame of its first row's sequence) when it has one:
  // one range [keysLo, keysHi) of key tokens per query tile, a table made
  // once per call: then the block condition is linear in the key block with
  // loop-invariant ends, which Halide turns into the key loop's bounds.
  Expr keysLo, keysHi, oneSequence;
  const Expr blockFirstKey = r.jMin, blockLastKey = r.jMax; // key tokens
  if (in.packed) {
    Expr i0 = (f.qt * f.tileQ) / P, i1 = (f.qt * f.tileQ + (f.tileQ - 1)) / P;
    PackedSequences::Frame first = in.packed->frame(i0, 0),
                           last = in.packed->frame(min(i1, in.packed->Tq - 1), 0);
    keysLo = in.packed->cuK(first.b);
    keysHi = in.packed->cuK(last.b + 1);
    Expr k0 = -first.j; // the first key token of the first row's sequence
    oneSequence = first.b == last.b;
    Expr ipMin = first.ip, ipMax = first.ip + (i1 - i0);
    Expr vl;
    if (hasValidLen)
      vl = in.param("valid_len")(first.b);
    const KeyInterval &iv = config.interval;
    if (iv.lo.kind != KeyBound::None)
      keysLo = select(oneSequence, max(keysLo, k0 + boundValue(iv.lo, ipMin, vl)), keysLo);
    if (iv.hi.kind != KeyBound::None)
      keysHi = select(oneSequence, min(keysHi, k0 + boundValue(iv.hi, ipMax, vl)), keysHi);
    Func tileKeys("tile_keys");
    tileKeys(f.qt) = Tuple(keysLo, keysHi);
    f.sequenceTables.push_back(tileKeys);
    keysLo = tileKeys(f.qt)[0];
    keysHi = tileKeys(f.qt)[1];
    // The terms' own block tests (below) in the frame of the first row's
    // sequence; they count only for tiles of one sequence.
    r.b = first.b;
    r.jMin = r.jMin + first.j;
    r.jMax = r.jMin + (f.blockK - 1);
    r.ipMin = ipMin;
    r.ipMax = ipMax;
    if (hasValidLen)
      validLenB = vl;
  }

  std::vector<TermTests> terms;
  for (const MaskTermDesc &term : config.kernel.masks) {
    TermTests t;
    switch (term.kind) {
    case MaskKind::Causal:
      t.visible = env.j <= env.ip;
      t.blockVisible = r.jMin <= r.ipMax;
      break;
    case MaskKind::Window: {
      Expr w = Expr((int32_t)term.width);
      t.visible = env.j <= env.ip && env.j > env.ip - w;
      t.blockVisible = r.jMin <= r.ipMax && r.jMax > r.ipMin - w;
      break;
    }
    case MaskKind::Sink: {
      Expr sinks = Expr((int32_t)term.width);
      // Compared unsigned: Halide trims a Func's footprint by a select's
      // condition on j, and j < S alone would give the score loop a
      // non-constant extent it cannot unroll (j >= 0 here, so it is exact).
      t.visible = cast<uint32_t>(env.j) < cast<uint32_t>(sinks);
      t.blockVisible = r.jMin < sinks;
      break;
    }
    case MaskKind::ValidLen:
      t.visible = env.j < validLenEnv;
      t.blockVisible = r.jMin < validLenB;
      break;
    case MaskKind::Prefix: {
      ImageParam prefix = in.param("prefix_len"); // i32 [B]
      t.visible = env.j < prefix(env.b);
      t.blockVisible = r.jMin < prefix(r.b);
      break;
    }
    case MaskKind::KeyPadding: {
      ImageParam padding = in.param("key_padding_mask"); // u8 [B, Lk], nonzero = padding
      t.visible = padding(clamp(env.j, 0, f.Lk - 1), env.b) == cast<uint8_t>(0);
      break;
    }
    case MaskKind::Input: {
      ImageParam mask = in.param("mask"); // u8 [B, Lq, Lk]
      Expr ci = clamp(env.i, 0, f.Lq - 1), cj = clamp(env.j, 0, f.Lk - 1);
      t.visible = mask(cj, ci, env.b) != cast<uint8_t>(0);
      break;
    }
    case MaskKind::Custom:
      if (!term.expr.defined())
        throw BackendError("kernel '" + config.name + "': custom mask term without an expression");
      t.visible = buildExpr(term.expr, env);
      // A term of the rows alone is simplified on its own first: `ip - i` is
      // then the offset alone. Left to the pipeline, the query row shared
      // with an ALiBi bias became a let that Halide 14's correlated-
      // differences pass turned `ip - i != c` into `query tile != 0`. (Terms
      // of the key keep their form: Halide trims footprints through them.)
      if (!readsKey(term.expr))
        t.visible = Halide::Internal::simplify(t.visible);
      break;
    }
    terms.push_back(t);
  }

  // A conjunction, or a union of conjunctions (groups): a key block is
  // visited when some group's terms can all see some key of it; a group
  // with no block test makes every block count.
  const std::vector<std::vector<int>> groups = config.kernel.maskConjunctions();
  Expr visible, blockVisible;
  bool everyBlock = false;
  for (size_t g = 0; g < groups.size(); ++g) {
    if ((in.onlyGroup >= 0 && (int)g != in.onlyGroup) || (int)g == in.skipGroup)
      continue;
    const std::vector<int> &group = groups[g];
    Expr groupVisible = Halide::Internal::const_true(), groupBlock;
    for (int n : group) {
      const TermTests &t = terms.at((size_t)n);
      groupVisible = groupVisible && t.visible;
      if (t.blockVisible.defined())
        andWith(groupBlock, t.blockVisible);
    }
    visible = visible.defined() ? (visible || groupVisible) : groupVisible;
    if (!groupBlock.defined())
      everyBlock = true;
    else
      blockVisible = blockVisible.defined() ? (blockVisible || groupBlock) : groupBlock;
  }
  if (!visible.defined()) // every group left out
    visible = Halide::Internal::const_false();
  if (everyBlock)
    blockVisible = Expr();

  // The interval computed by the dialect passes can only narrow the blocks.
  const KeyInterval &iv = config.interval;
  if (iv.hi.kind != KeyBound::None)
    andWith(blockVisible, r.jMin < boundValue(iv.hi, r.ipMax, validLenB));
  if (iv.lo.kind != KeyBound::None)
    andWith(blockVisible, r.jMax >= boundValue(iv.lo, r.ipMin, validLenB));
  // Keys outside the tile's visible range are masked for every row: the
  // block's key loops skip them. Causal tiles stop after their last query's
  // key (the diagonal block); packed tiles run over their sequences' keys
  // (their first and last blocks hold the neighbouring sequences' too). Not
  // under a window: its two bounds doubled Halide's lowering of the
  // sliding-window expression (0.6 -> 1.3 s) for a block's worth of keys.
  Expr keysEnd, keysBegin;
  if (!in.packed && iv.hi.kind != KeyBound::None && iv.lo.kind == KeyBound::None)
    keysEnd = boundValue(iv.hi, r.ipMax, validLenB);
  if (in.packed) {
    // The tile's key range: a condition Halide turns into the key loop's
    // bounds. A union has no interval; its terms' tests then skip blocks
    // inside the range (as ifs: the loop is no longer trimmed).
    Expr range = blockLastKey >= keysLo && blockFirstKey < keysHi;
    bool union_ = !config.kernel.maskGroups.empty();
    blockVisible = union_ && blockVisible.defined() ? range && (!oneSequence || blockVisible)
                                                    : range;
    keysBegin = keysLo;
    keysEnd = keysHi;
  }
  return {visible, blockVisible, keysEnd, keysBegin};
}

} // namespace attnc::halide_backend
