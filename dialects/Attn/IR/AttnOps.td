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

def Attn_Tensor4D : 4DTensorOf<[F32]>;

def Attn_ScoreOp : Attn_Op<"score", [NoSideEffect]> {
  let summary = "similarity of every query row with every key row";
  let description = [{
    `s[b, h, i, j] = score(q[b, h, i, :], k[b, h / (H / G), j, :])` for the
    score function `kind`. `general` and `additive` read their weights from
    `weights` (`score_w`, or `score_wq, score_wk, score_wv`).
  }];
  let arguments = (ins Attn_Tensor4D:$query, Attn_Tensor4D:$key,
                       Variadic<AnyRankedTensor>:$weights,
                       Attn_ScoreKindAttr:$kind, OptionalAttr<I64Attr>:$hidden);
  let results = (outs Attn_Tensor4D:$scores);
  let assemblyFormat = [{
    $query `,` $key (`weights` `(` $weights^ `:` type($weights) `)`)? attr-dict
    `:` type($query) `,` type($key) `->` type($scores)
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

def Attn_BiasOp : Attn_Op<"bias", [NoSideEffect, SameOperandsAndResultType]> {
  let summary = "adds a position-dependent bias to the scores";
  let description = [{
    `alibi` adds `-m_h * (ip - j)` with `m_h = 2^(-8 (h + 1) / H)`.
  }];
  let arguments = (ins Attn_Tensor4D:$input, Attn_BiasKindAttr:$kind);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Attn_MaskOp : Attn_Op<"mask", [NoSideEffect, AllTypesMatch<["input", "result"]>]> {
  let summary = "hides the keys a query may not see";
  let description = [{
    Entries whose key is not visible are excluded from the softmax. Causal and
    window masks are aligned bottom-right: query row i sits at absolute
    position `ip = i + (Lk - Lq)`. `valid_len` reads `i32[B]`, `input` reads
    `u8[B, Lq, Lk]` from `inputs`.
  }];
  let arguments = (ins Attn_Tensor4D:$input, Variadic<AnyRankedTensor>:$inputs,
                       Attn_MaskKindAttr:$kind, OptionalAttr<I64Attr>:$window);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = [{
    $input (`inputs` `(` $inputs^ `:` type($inputs) `)`)? attr-dict `:` type($input)
  }];
  let verifier = [{ return ::verify(*this); }];
}

def Attn_SoftmaxOp : Attn_Op<"softmax", [NoSideEffect, SameOperandsAndResultType]> {
  let summary = "stable softmax over the key dimension of visible entries";
  let arguments = (ins Attn_Tensor4D:$input);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Attn_WeightedSumOp : Attn_Op<"weighted_sum", [NoSideEffect]> {
  let summary = "out[b, h, i, :] = sum_j p[b, h, i, j] * v[b, h / (H / G), j, :]";
  let arguments = (ins Attn_Tensor4D:$probs, Attn_Tensor4D:$value);
  let results = (outs Attn_Tensor4D:$result);
  let assemblyFormat = "$probs `,` $value attr-dict `:` type($probs) `,` type($value) `->` type($result)";
  let verifier = [{ return ::verify(*this); }];
}

def Attn_AttentionOp : Attn_Op<"attention", [NoSideEffect]> {
  let summary = "the fused attention the Halide lowering consumes";
  let description = [{
    score -> scale -> softcap -> bias -> mask -> softmax -> weighted sum in
    one op. `masks` lists the ANDed mask terms. `attn-analyze-mask` records
    the visible key interval `[ip + key_lo_offset, ip + key_hi_offset)`
    (`key_hi_valid_len`: also `< valid_len[b]`); `mask_needs_test` is set
    when some term is not an interval. `scale_on_query` means the scale is
    applied to q before the score (Lq*D multiplies instead of Lq*Lk).
    Results: `out`, then `weights` and `lse` when requested.
  }];
  let arguments = (ins Attn_Tensor4D:$query, Attn_Tensor4D:$key, Attn_Tensor4D:$value,
                       Variadic<AnyRankedTensor>:$extra,
                       Attn_ScoreKindAttr:$score, OptionalAttr<I64Attr>:$hidden,
                       F64Attr:$scale, UnitAttr:$scale_on_query,
                       OptionalAttr<F64Attr>:$softcap,
                       OptionalAttr<Attn_BiasKindAttr>:$bias,
                       StrArrayAttr:$masks, OptionalAttr<I64Attr>:$window,
                       OptionalAttr<I64Attr>:$key_lo_offset,
                       OptionalAttr<I64Attr>:$key_hi_offset,
                       UnitAttr:$key_hi_valid_len, UnitAttr:$mask_needs_test);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`extra` `(` $extra^ `:` type($extra) `)`)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($results)
  }];
  let verifier = [{ return ::verify(*this); }];
}

#endif // ATTN_OPS_TD
