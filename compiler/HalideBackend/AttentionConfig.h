//===- AttentionConfig.h - What the Halide back end is asked to build -*- C++ -*-===//
//
// The Halide back end's input: one fused attention kernel as plain data,
// read off the optimized `attn` IR by convert-attn-to-halide (and only from
// it). It carries the argument contract, the sizes, the kinds, the results
// of the dialect passes (folded scale, key intervals of the mask) so the
// back end never re-derives them, and custom expressions as owned graphs.
// No MLIR and no frontend header: the back end can be driven from any IR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "abi/KernelAbi.h"
#include "compiler/HalideBackend/ExprGraph.h"
#include "compiler/Kinds/AttentionKinds.h"

#include <optional>
#include <string>
#include <vector>

namespace attnc::halide_backend {

/// The schedule policies of `--schedule=`.
enum class SchedulePolicy { Tuned, Simple, Auto };

/// The visible keys of query row i form [lo(i), hi(i)) when a mask term is an
/// interval; the back end bounds its key loops by them. Each bound is
/// `ip + offset` (relative) or a constant, absent when unbounded.
struct KeyBound {
  enum Kind { None, RelativeToIp, ValidLen } kind = None;
  int64_t offset = 0;
};

struct KeyInterval {
  KeyBound lo; // first visible key: max of the terms' lower bounds
  KeyBound hi; // one past the last visible key: min of the terms' upper bounds
};

/// One mask term of the conjunction.
struct MaskTermDesc {
  MaskKind kind = MaskKind::Causal;
  int64_t width = 0;  // W of window(W), S of sink(S)
  ExprGraph expr;     // Custom (expr.source: the term's text in the mask field)
};

/// A declared input (`input NAME : TYPE[DIMS]`), for the header.
struct DeclaredInput {
  std::string name;
  ElemType type = ElemType::F32;
  std::vector<ArgDim> dims;
};

/// The values of the size names (0 when dynamic).
struct KernelSizes {
  int64_t B = 0, H = 0, G = 0, Lq = 0, Lk = 0, D = 0, Dk = 0, Dv = 0, M = 0;
};

/// The kernel's fields as the IR states them. Sizes are 0 when dynamic.
struct KernelDesc {
  int64_t heads = 1, kvHeads = 1; // H, G
  int64_t headDim = 0;            // D
  int64_t keyDim = 0;             // Dk (== D except with additive)
  int64_t valueDim = 0;           // Dv
  int64_t batch = 0, seqQ = 0;
  int64_t seqK = 0;               // seqQ when seqKIsSeqQ
  bool seqKIsSeqQ = false;        // keys are the queries' sequence (seq_k = seq_q)
  /// batch = packed: q/k/v/out are [T, heads, width] token rows of B
  /// sequences (cu_seqlens_q/k); seqQ/seqK are then the token totals Tq, Tk.
  bool packed = false;

  ScoreKind score = ScoreKind::ScaledDot;
  int64_t additiveHidden = 0;     // additive(hidden = N)
  std::optional<double> softcap;
  BiasKind bias = BiasKind::None;
  std::vector<MaskTermDesc> masks; // empty: every key is visible
  /// Disjunctive normal form: a key is visible when every term of some group
  /// sees it. Empty: one group of all terms (their conjunction).
  std::vector<std::vector<int>> maskGroups;

  ProjectKind project = ProjectKind::None;
  int64_t modelDim = 0;   // the width of x or x_q
  int64_t kvModelDim = 0; // the width of x_kv (== modelDim for self-attention)
  ProjBias projBias; // which projections have a bias
  PositionalKind positional = PositionalKind::None;
  RotarySpec rotary; // PositionalKind::Rotary: q and k turned before the score
  /// A KV cache: k and v hold the Lq new tokens, appended in place to
  /// k_cache / v_cache before the attention; query i of sequence b sits at
  /// cache_len[b] + i and sees that many keys plus the new ones. seqK is
  /// then the contiguous cache's capacity Lmax (0: dynamic).
  CacheSpec cache;

  Layout layout = Layout::BHSD;
  /// Storage types (the contract's element types of out and k): 16-bit
  /// inputs are widened on load, results rounded once on store.
  ElemType dtype = ElemType::F32, kvDtype = ElemType::F32;
  bool outputWeights = false, outputLse = false;
  std::vector<DeclaredInput> inputs; // declaration order

  /// maskGroups, with the empty list spelled out as one group of every term.
  std::vector<std::vector<int>> maskConjunctions() const {
    if (!maskGroups.empty())
      return maskGroups;
    std::vector<int> all;
    for (size_t n = 0; n < masks.size(); ++n)
      all.push_back((int)n);
    return {all};
  }
  bool hasMask(MaskKind kind) const {
    for (const MaskTermDesc &m : masks)
      if (m.kind == kind)
        return true;
    return false;
  }
  bool selfAttention() const {
    return project == ProjectKind::SelfQKV || project == ProjectKind::SelfQKVOut;
  }
  bool outputProjected() const { return hasOutputProjection(project); }
  KernelSizes sizes() const {
    return {batch, heads, kvHeads, seqQ, seqK, headDim, keyDim, valueDim, modelDim};
  }
  /// The dynamic sizes NAME_run takes, in order: a subset of B, Lq, Lk.
  std::vector<std::string> dynamicSizeNames() const {
    std::vector<std::string> names;
    if (packed)
      return selfAttention() ? std::vector<std::string>{"B", "Tq"}
                             : std::vector<std::string>{"B", "Tq", "Tk"};
    if (!batch)
      names.push_back("B");
    if (!seqQ)
      names.push_back("Lq");
    if (cache.paged()) {
      names.push_back("num_blocks");
      names.push_back("max_blocks");
    } else if (cache.any()) {
      if (!seqK)
        names.push_back("Lmax");
    } else if (!seqK && !seqKIsSeqQ) {
      names.push_back("Lk");
    }
    return names;
  }
};

struct AttentionConfig {
  std::string name;      // entry point name
  KernelDesc kernel;     // what to compute
  /// NAME_backward: the gradients of `kernel` (arguments from
  /// backwardArguments), not the attention itself.
  bool backward = false;
  std::vector<ArgSpec> arguments; // the contract: inputs, then outputs

  /// The contract indices of the entry point NAME's buffers in its order:
  /// the inputs it only reads, then the caches it writes in place, then the
  /// outputs (Halide puts its outputs, the caches among them, last).
  std::vector<size_t> entryOrder() const {
    std::vector<size_t> order;
    for (int pass = 0; pass < 3; ++pass)
      for (size_t n = 0; n < arguments.size(); ++n) {
        const ArgSpec &arg = arguments[n];
        int group = arg.isOutput ? 2 : arg.isWritten ? 1 : 0;
        if (group == pass)
          order.push_back(n);
      }
    return order;
  }

  // Results of the dialect passes.
  double scale = 1.0;         // multiply the score by this
  bool scaleOnQuery = false;  // scale folded into q (Lq*D multiplies, not Lq*Lk)
  KeyInterval interval;       // from attn-analyze-mask
  bool maskNeedsElementTest = false; // some term is not an interval (input, custom)

  // Custom parts, from the dialect's regions (custom masks are in kernel.masks).
  ExprGraph customScore; // ScoreKind::Custom
  ExprGraph customBias;  // BiasKind::Custom
};

/// Everything needed to emit artifacts for the kernels of one file.
struct EmitOptions {
  std::string target = "host";
  SchedulePolicy schedule = SchedulePolicy::Tuned;
  bool withRuntime = true;
  /// For shared libraries: the shared Halide runtime library (a path) to
  /// link against instead of embedding a runtime, so that every kernel
  /// library of a process shares one runtime and thread pool. Empty: embed
  /// (when withRuntime).
  std::string sharedRuntime;
  /// For objects and static libraries: attnc's prebuilt Halide runtime object
  /// (a path) for the host's baseline target, merged in when the target's
  /// baseline is that one instead of compiling the runtime again (0.5 s).
  /// Empty, or another baseline: compile it (when withRuntime).
  std::string runtimeObject;
  /// Form bf16 Q.K^T and P.V products with AVX-512 BF16's vdpbf16ps where the
  /// target has it (AlgorithmFuncs::bf16Products). Unset: bf16ProductsByDefault.
  std::optional<bool> bf16Products;
};

} // namespace attnc::halide_backend
