//===- AttnOps.td - Ops of the attn dialect -----------------*- tablegen -*-===//
//
// One op per concept of an attention layer, in the order MLIRGen chains them,
// and the fused `attn.attention` op. Verifiers live in AttnOps.cpp; folds and
// canonicalizations in AttnFolders.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "dialects/Attn/IR/AttnBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"

// Ops with expression regions print their block arguments as %b, %h, %i,
// %j, %g, %ip (and %dot).
defvar Attn_NamesRegionArgs =
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>;

def Attn_Tensor4D : 4DTensorOf<[F32]>;

def Attn_ScoreOp : Attn_Op<"score", [NoSideEffect, AttrSizedOperandSegments,
                                     Attn_NamesRegionArgs]> {
  let summary = "similarity of every query row with every key row";
  let description = [{
    `s[b, h, i, j] = score(q[b, h, i, :], k[b, h / (H / G), j, :])` for the
    score function `kind`. `general` and `additive` read their weights from
    `weights` (`score_w`, or `score_wq, score_wk, score_wv`). `custom` computes
    the score with its `body` region, whose block arguments are
    `(b, h, i, j, g, ip : index, dot : f32)` (`dot` = q . k of the row pair)
    and which yields one f32; the declared input tensors it reads with
    `attn.read` are listed in `inputs`.
  }];
  let arguments = (ins Attn_Tensor4D:$query, Attn_Tensor4D:$key,
                       Variadic<AnyRankedTensor>:$weights,
                       Variadic<AnyRankedTensor>:$inputs,
                       Attn_ScoreKindAttr:$kind, OptionalAttr<I64Attr>:$hidden);
  let results = (outs Attn_Tensor4D:$scores);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = [{
    $query `,` $key (`weights` `(` $weights^ `:` type($weights) `)`)?
    (`inputs` `(` $inputs^ `:` type($inputs) `)`)? attr-dict
    `:` type($query) `,` type($key) `->` type($scores) ($body^)?
  }];
  let verifier = [{ return ::verify(*this); }];
}

def Attn_ScaleOp : Attn_Op<"scale", [NoSideEffect, SameOperandsAndResultType]> {
  let summary = "multiplies scores by a constant";
  let arguments = (ins Attn_Tensor4D:$input, F64Attr:$factor);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let verifier = [{ return ::verify(*this); }];
}

def Attn_SoftcapOp : Attn_Op<"softcap", [NoSideEffect, SameOperandsAndResultType]> {
  let summary = "s = cap * tanh(s / cap)";
  let arguments = (ins Attn_Tensor4D:$input, F64Attr:$cap);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let verifier = [{ return ::verify(*this); }];
}

def Attn_BiasOp : Attn_Op<"bias", [NoSideEffect, AllTypesMatch<["input", "result"]>,
                                   Attn_NamesRegionArgs]> {
  let summary = "adds a position-dependent bias to the scores";
  let description = [{
    `alibi` adds `-m_h * (ip - j)` with the ALiBi reference slopes
    (`alibiSlope()`: `2^(-8 (h + 1) / H)` for H a power of two). `custom`
    adds the f32 its `body` region yields; block arguments
    `(b, h, i, j, g, ip : index)`; declared inputs it reads are `inputs`.
  }];
  let arguments = (ins Attn_Tensor4D:$input, Variadic<AnyRankedTensor>:$inputs,
                       Attn_BiasKindAttr:$kind);
  let results = (outs Attn_Tensor4D:$result);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = [{
    $input (`inputs` `(` $inputs^ `:` type($inputs) `)`)? attr-dict `:` type($input)
    ($body^)?
  }];
  let verifier = [{ return ::verify(*this); }];
}

def Attn_MaskOp : Attn_Op<"mask", [NoSideEffect, AllTypesMatch<["input", "result"]>,
                                   Attn_NamesRegionArgs]> {
  let summary = "hides the keys a query may not see";
  let description = [{
    Entries whose key is not visible are excluded from the softmax. Causal and
    window masks are aligned bottom-right: query row i sits at absolute
    position `ip = i + (Lk - Lq)`. `sink` (with `sink = S`) sees `j < S`.
    `valid_len` (`j < valid_len[b]`) and `prefix` (`j < prefix_len[b]`) read
    `i32[B]`, `key_padding` (`key_padding_mask[b, j] == 0`) reads `u8[B, Lk]`,
    `input` reads `u8[B, Lq, Lk]` from `inputs`. `custom` keeps the keys for
    which its `body` region yields true (i1); block arguments `(b, h, i, j,
    g, ip : index)`; the declared inputs it reads are `inputs`.

    Unions (`a | b`): a chain of attn.mask ops is their conjunction unless
    they carry `groups`, the numbers of the groups of a mask in disjunctive
    normal form that the term belongs to; a key is then visible when, for
    some group number, every op of the chain listing it sees the key. So
    `causal & (window(W) | sink(S))` is causal {groups = [0, 1]}, window
    {groups = [0]}, sink {groups = [1]}.
  }];
  let arguments = (ins Attn_Tensor4D:$input, Variadic<AnyRankedTensor>:$inputs,
                       Attn_MaskKindAttr:$kind, OptionalAttr<I64Attr>:$window,
                       OptionalAttr<I64Attr>:$sink, OptionalAttr<I64ArrayAttr>:$groups);
  let results = (outs Attn_Tensor4D:$result);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = [{
    $input (`inputs` `(` $inputs^ `:` type($inputs) `)`)? attr-dict `:` type($input)
    ($body^)?
  }];
  let verifier = [{ return ::verify(*this); }];
}

def Attn_SoftmaxOp : Attn_Op<"softmax", [NoSideEffect, SameOperandsAndResultType]> {
  let summary = "stable softmax over the key dimension of visible entries";
  let arguments = (ins Attn_Tensor4D:$input);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Attn_LogSumExpOp : Attn_Op<"logsumexp", [NoSideEffect]> {
  let summary = "lse[b, h, i] = log sum over visible j of exp(s[b, h, i, j])";
  let description = [{
    The row log-sum-exp of the masked scores (the `lse` output), computed
    stably as `m_i + log(sum exp(s - m_i))`; `-inf` for a row with no
    visible key.
  }];
  let arguments = (ins Attn_Tensor4D:$input);
  let results = (outs TensorRankOf<[F32], [3]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let verifier = [{ return ::verify(*this); }];
}

def Attn_WeightedSumOp : Attn_Op<"weighted_sum", [NoSideEffect]> {
  let summary = "out[b, h, i, :] = sum_j p[b, h, i, j] * v[b, h / (H / G), j, :]";
  let arguments = (ins Attn_Tensor4D:$probs, Attn_Tensor4D:$value);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$probs `,` $value attr-dict `:` type($probs) `,` type($value) `->` type($result)";
  let verifier = [{ return ::verify(*this); }];
}

def Attn_AttentionOp : Attn_Op<"attention", [NoSideEffect, Attn_NamesRegionArgs]> {
  let summary = "the fused attention the Halide lowering consumes";
  let description = [{
    score -> scale -> softcap -> bias -> mask -> softmax -> weighted sum in
    one op. `masks` lists the ANDed mask terms, or, with `mask_groups` (one
    I64 array per term: the groups it belongs to, as attn.mask's `groups`),
    a union in disjunctive normal form; `window` and `sink` are the widths of
    those terms. `attn-analyze-mask` records
    the visible key interval `[ip + key_lo_offset, ip + key_hi_offset)`,
    also `< t[b]` where `t` is the i32[B] `extra` operand number
    `key_hi_input` (the built-in valid_len mask, or an expression mask
    `j < t[b]`); `mask_needs_test` is set when some term is not an interval.
    `scale_on_query` means the scale is applied to q before the score (Lq*D
    multiplies instead of Lq*Lk). Results: `out` [B, H, Lq, Dv], then
    `weights` [B, H, Lq, Lk] and/or `lse` [B, H, Lq] when requested.
    Regions: `score_body` when `score = "custom"`, `bias_body` when
    `bias = "custom"`, and one of `mask_bodies` per "custom" entry of
    `masks`, in order; their signatures are those of attn.score, attn.bias
    and attn.mask. Declared inputs they read are among `extra`.
  }];
  let arguments = (ins Attn_Tensor4D:$query, Attn_Tensor4D:$key, Attn_Tensor4D:$value,
                       Variadic<AnyRankedTensor>:$extra,
                       Attn_ScoreKindAttr:$score, OptionalAttr<I64Attr>:$hidden,
                       F64Attr:$scale, UnitAttr:$scale_on_query,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<Attn_BiasKindAttr>:$bias,
                       StrArrayAttr:$masks, OptionalAttr<ArrayAttr>:$mask_groups,
                       OptionalAttr<I64Attr>:$window, OptionalAttr<I64Attr>:$sink,
                       OptionalAttr<I64Attr>:$key_lo_offset,
                       OptionalAttr<I64Attr>:$key_hi_offset,
                       OptionalAttr<I64Attr>:$key_hi_input, UnitAttr:$mask_needs_test);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region AnyRegion:$score_body, AnyRegion:$bias_body,
                 VariadicRegion<AnyRegion>:$mask_bodies);
  let extraClassDeclaration = [{
    /// The mask terms of `masks`, in order (the verifier checks each
    /// spelling first).
    ::llvm::SmallVector<MaskKind> getMaskKinds() {
      ::llvm::SmallVector<MaskKind> kinds;
      for (::mlir::Attribute kind : getMasks())
        kinds.push_back(*symbolizeMaskKind(kind.cast<::mlir::StringAttr>().getValue()));
      return kinds;
    }
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value (`extra` `(` $extra^ `:` type($extra) `)`)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($results)
    (`score` $score_body^)? (`bias` $bias_body^)? (`masks` $mask_bodies^)?
  }];
  let verifier = [{ return ::verify(*this); }];
}

//===----------------------------------------------------------------------===//
// Projections (docs/language.md §4 (`project`))
//===----------------------------------------------------------------------===//

def Attn_Tensor3D : TensorRankOf<[F32], [3]>;
// Rows of a batch [B, L, W], or packed tokens [T, W] (docs/language.md, packed batches).
def Attn_RowsTensor : TensorRankOf<[F32], [2, 3]>;
// Heads of a batch [B, heads, L, W], or of packed tokens [T, heads, W].
def Attn_HeadsTensor : TensorRankOf<[F32], [3, 4]>;

def Attn_PositionsOp : Attn_Op<"positions", [NoSideEffect, SameOperandsAndResultType]> {
  let summary = "adds position encodings to un-projected inputs [B, L, M]";
  let description = [{
    `sinusoidal`: `x[b, t, 2c] += sin(t / 10000^(2c/M))`,
    `x[b, t, 2c+1] += cos(t / 10000^(2c/M))`.
  }];
  let arguments = (ins Attn_Tensor3D:$input, Attn_PositionalKindAttr:$kind);
  let results = (outs Attn_Tensor3D:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Attn_ProjectOp : Attn_Op<"project", [NoSideEffect]> {
  let summary = "y[b, t, :] = x[b, t, :] @ w^T (+ bias): a linear projection";
  let description = [{
    `x : [B, L, M]`, `w : [N, M]` (`nn.Linear`'s layout, [out_features,
    in_features], docs/language.md, version 2), optional `bias : [N]`, result `[B, L, N]`;
    on packed tokens (docs/language.md, packed batches) `x : [T, M]` gives `[T, N]`. The q/k/v projections feed
    attn.split_heads; the output projection reads attn.merge_heads.
  }];
  let arguments = (ins Attn_RowsTensor:$input, TensorRankOf<[F32], [2]>:$weight,
                       Optional<TensorRankOf<[F32], [1]>>:$bias);
  let results = (outs Attn_RowsTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict
    `:` type($input) `,` type($weight) `->` type($result)
  }];
  let verifier = [{ return ::verify(*this); }];
}

def Attn_SplitHeadsOp : Attn_Op<"split_heads", [NoSideEffect]> {
  let summary = "[B, L, heads * W] -> [B, heads, L, W]; head h owns columns h*W .. h*W+W-1";
  let description = [{
    On packed tokens (docs/language.md, packed batches): `[T, heads * W] -> [T, heads, W]`.
  }];
  let arguments = (ins Attn_RowsTensor:$input, I64Attr:$heads);
  let results = (outs Attn_HeadsTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let verifier = [{ return ::verify(*this); }];
}

def Attn_MergeHeadsOp : Attn_Op<"merge_heads", [NoSideEffect]> {
  let summary = "[B, H, L, W] -> [B, L, H * W], the inverse of split_heads";
  let description = [{
    On packed tokens (docs/language.md, packed batches): `[T, H, W] -> [T, H * W]`.
  }];
  let arguments = (ins Attn_HeadsTensor:$input);
  let results = (outs Attn_RowsTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let verifier = [{ return ::verify(*this); }];
}

//===----------------------------------------------------------------------===//
// Packed variable-length batches (docs/language.md, packed batches)
//===----------------------------------------------------------------------===//

def Attn_SequencesOp : Attn_Op<"sequences", [NoSideEffect]> {
  let summary = "packed tokens [T, heads, W] as a batch of sequences [B, heads, L, W]";
  let description = [{
    `cu_seqlens : i32[B + 1]` (prefix sums from 0, FlashAttention's varlen
    convention) delimits B sequences in the token axis: row i of sequence b
    is token `cu_seqlens[b] + i`, for i < L_b = cu_seqlens[b + 1] -
    cu_seqlens[b]. The view carries each sequence's own length: the ops that
    read it see, per sequence, Lq_b query rows and Lk_b keys (keys past Lk_b
    do not exist, so no pair of two sequences is ever formed), positions
    `ip = i + Lk_b - Lq_b`, and the sizes `Lq`, `Lk` of expressions are the
    sequence's. `L` is the longest sequence.
  }];
  let arguments = (ins Attn_Tensor3D:$input, TensorRankOf<[I32], [1]>:$cu_seqlens);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = [{
    $input `,` $cu_seqlens attr-dict `:` type($input) `,` type($cu_seqlens) `->` type($result)
  }];
  let verifier = [{ return ::verify(*this); }];
}

def Attn_PackOp : Attn_Op<"pack", [NoSideEffect]> {
  let summary = "the rows of each sequence back into packed tokens";
  let description = [{
    The inverse of attn.sequences for results: `out [B, H, L, W]` becomes
    `[T, H, W]` and `lse [B, H, L]` becomes `[H, T]`, row i of sequence b
    going to token `cu_seqlens[b] + i`.
  }];
  let arguments = (ins AnyRankedTensor:$input, TensorRankOf<[I32], [1]>:$cu_seqlens);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `,` $cu_seqlens attr-dict `:` type($input) `,` type($cu_seqlens) `->` type($result)
  }];
  let verifier = [{ return ::verify(*this); }];
}

//===----------------------------------------------------------------------===//
// KV caches (docs/language.md, KV caches)
//===----------------------------------------------------------------------===//

def Attn_CacheOp : Attn_Op<"cache", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "appends the new tokens' keys (or values) to a KV cache, in place";
  let description = [{
    `cache` is a kernel argument the kernel updates in place (role "cache"):
    `[B, G, Lmax, W]` for `kind = "contiguous"`, or blocks
    `[num_blocks, G, block, W]` for `kind = "paged"`, where row t of
    sequence b is row `t % block` of block `block_table[b, t / block]`
    (vLLM's paged attention). Rows `cache_len[b] .. cache_len[b] + Lq - 1` of
    sequence b receive `rows : [B, G, Lq, W]` (rounded to the
    cache's element type); then the result is every sequence's keys: sequence
    b has `cache_len[b] + Lq` of them (rows past that do not exist), and the
    attention it feeds puts its query i at `ip = cache_len[b] + i`. A
    sequence whose rows would not fit, or whose block table names a block
    outside the pool, makes the kernel fail before anything is written.
  }];
  let arguments = (ins AnyRankedTensor:$cache, Attn_Tensor4D:$rows,
                       TensorRankOf<[I32], [1]>:$cache_len,
                       Optional<TensorRankOf<[I32], [2]>>:$block_table,
                       Attn_CacheKindAttr:$kind, OptionalAttr<I64Attr>:$block);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = [{
    $cache `,` $rows `,` $cache_len (`,` $block_table^)? attr-dict `:` type($cache) `,`
    type($rows) `,` type($cache_len) (`,` type($block_table)^)? `->` type($result)
  }];
  let verifier = [{ return ::verify(*this); }];
}

//===----------------------------------------------------------------------===//
// Rotary position embeddings (docs/language.md, rotary embeddings)
//===----------------------------------------------------------------------===//

def Attn_RotaryOp : Attn_Op<"rotary", [NoSideEffect, SameOperandsAndResultType]> {
  let summary = "turns each row of q or k [B, heads, L, W] by its position (RoPE)";
  let description = [{
    Rotates channel pairs of every row in float32: with `style = "half"` the
    pairs (c, c + dims/2) (GPT-NeoX, Llama), with `"interleaved"` (2c, 2c + 1)
    (GPT-J), c < dims/2, by the angle `t * base^(-2c / dims)`:
    `(x, y) -> (x cos - y sin, y cos + x sin)`. Channels from `dims` on pass
    through. `rows = "keys"`: row j is at position j; `rows = "queries"`:
    row i is at `ip = i + Lk - Lq`, aligned with the keys of the attention
    it feeds (bottom-right, as the masks). Both q and k of one attention are
    rotated with the same base, style and dims; the back end turns each row
    once, never per (query, key) pair.
  }];
  let arguments = (ins Attn_Tensor4D:$input, F64Attr:$base, Attn_RotaryStyleAttr:$style,
                       I64Attr:$dims, Attn_RotaryRowsAttr:$rows);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let verifier = [{ return ::verify(*this); }];
}

//===----------------------------------------------------------------------===//
// Ops of expression regions
//===----------------------------------------------------------------------===//

def Attn_YieldOp : Attn_Op<"yield", [NoSideEffect, Terminator,
    ParentOneOf<["ScoreOp", "BiasOp", "MaskOp", "AttentionOp"]>]> {
  let summary = "the value of a score, bias or mask expression region";
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Attn_SizeOp : Attn_Op<"size", [NoSideEffect,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a size of the kernel (B, H, G, Lq, Lk, D, Dv) inside an expression region";
  let arguments = (ins StrAttr:$name);
  let results = (outs Index:$result);
  let assemblyFormat = "$name attr-dict";
  let verifier = [{ return ::verify(*this); }];
}

def Attn_ReadOp : Attn_Op<"read", [NoSideEffect]> {
  let summary = "an element of a declared input, indices clamped to its extent";
  let description = [{
    Reads `input[indices]` inside an expression region; an index outside the
    extent is clamped to it (docs/language.md §5). Integer elements (i32,
    u8) are returned as index, f32 as f32. `input` must be an operand of the
    op that owns the region.
  }];
  let arguments = (ins AnyRankedTensor:$input, Variadic<Index>:$indices);
  let results = (outs AnyTypeOf<[F32, Index]>:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` attr-dict `:` type($input) `->` type($result)
  }];
  let verifier = [{ return ::verify(*this); }];
}

#endif // ATTN_OPS_TD
