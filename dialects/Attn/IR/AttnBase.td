//===- AttnBase.td - The attn dialect and its enums ---------*- tablegen -*-===//
//
// The `attn` dialect models an attention layer one concept per op, from score
// to weighted sum, plus the fused `attn.attention` op the Halide lowering
// consumes. Enum cases are appended, never renumbered.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_BASE_TD
#define ATTN_BASE_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention layers, one op per concept, and their fused form";
  let description = [{
    Values are ranked f32 tensors in the kernel's logical layout
    (`[B, H, Lq, D]` for queries in `bhsd`). Scores are `[B, H, Lq, Lk]`.
    Passes rewrite the chain score -> scale -> softcap -> bias -> mask ->
    softmax -> weighted_sum into one `attn.attention` op. Projections
    (`project`, `split_heads`, `merge_heads`, `positions`) stay separate ops
    around it. Custom score / bias / mask expressions are regions of `arith`,
    `math` and `std.select` ops over index block arguments, ending in
    `attn.yield`; `attn.size` and `attn.read` give them sizes and inputs.
  }];
  let dependentDialects = ["::mlir::arith::ArithmeticDialect", "::mlir::math::MathDialect"];
  let emitAccessorPrefix = kEmitAccessorPrefix_Prefixed;
  // `attn.backward` on a kernel function: also generate its gradients
  // (NAME_backward, recomputed from the `lse` it returns).
  let hasOperationAttrVerify = 1;
}

// Kinds: score and mask kinds have one case per row of
// compiler/Kinds/AttentionKinds.h (kScoreKinds, kMaskKinds), which holds each
// kind's properties; biases, positions, rotary styles and rows, and caches
// are enums of the same shape. The IR spells them as strings; the accessors
// return the generated enums (`op.getKind() == ScoreKind::custom`), so no
// verifier or pass compares strings.
class Attn_KindAttr<string name, string summary, list<StrEnumAttrCase> cases>
    : StrEnumAttr<name, summary, cases> {
  let cppNamespace = "::mlir::attn";
  let returnType = "::mlir::attn::" # name;
  let convertFromStorage = "::mlir::attn::symbolize" # name # "($_self.getValue()).getValue()";
  let constBuilderCall = "$_builder.getStringAttr(::mlir::attn::stringify" # name # "($0))";
}

def Attn_ScoreKindAttr : Attn_KindAttr<"ScoreKind", "score function", [
    StrEnumAttrCase<"dot">, StrEnumAttrCase<"scaled_dot">,
    StrEnumAttrCase<"general">, StrEnumAttrCase<"additive">,
    StrEnumAttrCase<"custom">, StrEnumAttrCase<"cosine">]>;

def Attn_MaskKindAttr : Attn_KindAttr<"MaskKind", "built-in or custom mask", [
    StrEnumAttrCase<"causal">, StrEnumAttrCase<"valid_len">,
    StrEnumAttrCase<"prefix">, StrEnumAttrCase<"key_padding">,
    StrEnumAttrCase<"window">, StrEnumAttrCase<"sink">, StrEnumAttrCase<"input">,
    StrEnumAttrCase<"custom">]>;

def Attn_BiasKindAttr : Attn_KindAttr<"BiasKind", "additive score bias", [
    StrEnumAttrCase<"alibi">, StrEnumAttrCase<"custom">]>;

def Attn_PositionalKindAttr : Attn_KindAttr<"PositionalKind", "position encoding", [
    StrEnumAttrCase<"sinusoidal">]>;

def Attn_RotaryStyleAttr : Attn_KindAttr<"RotaryStyle", "channel pairs of rotary embeddings", [
    StrEnumAttrCase<"half">, StrEnumAttrCase<"interleaved">]>;

def Attn_RotaryRowsAttr : Attn_KindAttr<"RotaryRows", "whose positions rotary embeddings use", [
    StrEnumAttrCase<"queries">, StrEnumAttrCase<"keys">]>;

def Attn_CacheKindAttr : Attn_KindAttr<"CacheKind", "how a KV cache stores its rows", [
    StrEnumAttrCase<"contiguous">, StrEnumAttrCase<"paged">]>;

def Attn_LayoutAttr : StrEnumAttr<"Layout", "memory order of q, k, v, out", [
    StrEnumAttrCase<"bhsd">, StrEnumAttrCase<"bshd">]> {
  let cppNamespace = "::mlir::attn";
}

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

#endif // ATTN_BASE_TD
