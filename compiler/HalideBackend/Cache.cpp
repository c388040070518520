//===- Cache.cpp - KV caches in Halide ------------------------------------===//
//
// docs/language.md, KV caches. k_cache and v_cache are outputs of the
// pipeline that the caller passes with the cache's current contents: their
// pure definitions are undefined (the buffer keeps what it holds) and one
// update writes the new tokens' rows at cache_len[b] .. cache_len[b] + Lq - 1,
// through the block table when paged. The attention then reads every row
// back from those Funcs. cache_len and the block table are checked first, at
// the root, and the writes depend on that check: a sequence that would not
// fit, or a block outside the pool, fails the call before any row is written.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/AlgorithmParts.h"

using namespace Halide;

namespace attnc::halide_backend {

using Halide::Expr;

CacheLayout::CacheLayout(const KernelDesc &spec, const Expr &rowsPerSequence,
                         const Expr &numBlocks, ImageParam blockTable)
    : bshd(spec.layout == Layout::BSHD), paged(spec.cache.paged()),
      block((int32_t)spec.cache.block), rows(rowsPerSequence), numBlocks(numBlocks),
      blockTable(blockTable) {}

Expr CacheLayout::blockOf(const Expr &t, const Expr &b) const {
  Expr maxBlocks = blockTable.dim(0).extent();
  return clamp(blockTable(clamp(t / block, 0, maxBlocks - 1), b), 0, numBlocks - 1);
}

std::vector<Expr> CacheLayout::coordinates(const Expr &d, const Expr &t, const Expr &g,
                                           const Expr &b) const {
  Expr row = paged ? t % block : t, outer = paged ? blockOf(t, b) : b;
  return bshd ? std::vector<Expr>{d, g, row, outer} : std::vector<Expr>{d, row, g, outer};
}

Expr CacheLayout::at(Func cache, const Expr &d, const Expr &t, const Expr &g,
                     const Expr &b) const {
  return cache(coordinates(d, t, g, b));
}

void CacheLayout::write(Func cache, const Expr &d, const Expr &t, const Expr &g,
                        const Expr &b, const Expr &value) const {
  cache(coordinates(d, t, g, b)) = value;
}

Func checkedCacheLengths(ImageParam cacheLen, const CacheLayout &layout, const Expr &B,
                         const Expr &Lq, std::vector<Func> &tables) {
  // The first sequence that overflows its capacity (B when none does).
  Var b("b");
  Expr capacity = layout.paged ? layout.blockTable.dim(0).extent() * layout.block : layout.rows;
  RDom rb(0, B, "cache_seq");
  Expr len = cacheLen(rb);
  Func overflow("cache_overflow");
  overflow() = B;
  overflow() = select(overflow() == B && (len < 0 || len > capacity - Lq), rb, overflow());
  Expr bad = clamp(overflow(), 0, B - 1);
  Expr check = require(overflow() == B, 0, "KV cache: sequence", bad, "has cache_len",
                       cacheLen(bad), "and", Lq, "new tokens, more than its cache's", capacity,
                       "rows; nothing was written");
  tables.push_back(overflow);
  if (layout.paged) {
    // The first sequence whose used blocks (those of rows below cache_len +
    // Lq) include one outside the pool; entries past them are never read.
    Expr maxBlocks = layout.blockTable.dim(0).extent();
    RDom rk(0, maxBlocks, 0, B, "cache_blocks");
    Expr used = rk.x * layout.block < cacheLen(rk.y) + Lq;
    Expr entry = layout.blockTable(rk.x, rk.y);
    Func badBlock("cache_bad_block");
    badBlock() = Tuple(B, 0);
    Expr first = badBlock()[0] == B && used && (entry < 0 || entry >= layout.numBlocks);
    badBlock() = Tuple(select(first, rk.y, badBlock()[0]), select(first, rk.x, badBlock()[1]));
    Expr seq = clamp(badBlock()[0], 0, B - 1), slot = clamp(badBlock()[1], 0, maxBlocks - 1);
    // Two checks added, not nested: Halide 14 drops a require that is the
    // value of another.
    check = check + require(badBlock()[0] == B, 0, "KV cache: sequence", seq, "uses block",
                            layout.blockTable(slot, seq), "(entry", slot,
                            "of its block_table), outside the pool of", layout.numBlocks,
                            "blocks; nothing was written");
    tables.push_back(badBlock);
  }
  Func checked("cache_len_checked");
  checked(b) = cacheLen(b) + check; // check is 0 once it passes
  tables.push_back(checked);
  return checked;
}

} // namespace attnc::halide_backend
