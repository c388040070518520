//===- AttentionKinds.h - The kinds of score, bias, mask, projection -*- C++ -*-===//
//
// The enumerated fields of a kernel, their spellings, and one table row per
// score kind and per mask kind with everything the stages ask of a kind
// (weights, inputs, default scale, whether a scale commutes with it). The
// frontend (Sema, Signature), the dialect's verifiers and passes, the
// attn -> Halide conversion and the Halide back end all read these rows, so
// a new kind is one enum value and one row here plus its meaning in each
// stage (docs/extending.md). Standard C++ only. The spellings are those of
// docs/language.md and of the attn dialect's enum attributes (AttnBase.td).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnc {

enum class ScoreKind { Dot, ScaledDot, General, Additive, Custom, Cosine };
enum class BiasKind { None, Alibi, Custom };
// Mask kinds with a tensor come in the order of their arguments (docs/language.md
// 9.8: valid_len, prefix_len, key_padding_mask, mask).
enum class MaskKind { Causal, ValidLen, Prefix, KeyPadding, Window, Sink, Input, Custom };
enum class ProjectKind { None, SelfQKV, QKV, QKVOut, SelfQKVOut };
enum class PositionalKind { None, Sinusoidal, Rotary };
enum class RotaryStyle { Half, Interleaved };
enum class Layout { BHSD, BSHD };

inline const char *toString(ScoreKind kind) {
  switch (kind) {
  case ScoreKind::Dot: return "dot";
  case ScoreKind::ScaledDot: return "scaled_dot";
  case ScoreKind::General: return "general";
  case ScoreKind::Additive: return "additive";
  case ScoreKind::Custom: return "custom";
  case ScoreKind::Cosine: return "cosine";
  }
  return "?";
}

inline const char *toString(BiasKind kind) {
  switch (kind) {
  case BiasKind::None: return "none";
  case BiasKind::Alibi: return "alibi";
  case BiasKind::Custom: return "custom";
  }
  return "?";
}

inline const char *toString(MaskKind kind) {
  switch (kind) {
  case MaskKind::Causal: return "causal";
  case MaskKind::ValidLen: return "valid_len";
  case MaskKind::Prefix: return "prefix";
  case MaskKind::KeyPadding: return "key_padding";
  case MaskKind::Window: return "window";
  case MaskKind::Sink: return "sink";
  case MaskKind::Input: return "input";
  case MaskKind::Custom: return "custom";
  }
  return "?";
}

inline const char *toString(ProjectKind kind) {
  switch (kind) {
  case ProjectKind::None: return "none";
  case ProjectKind::SelfQKV: return "self_qkv";
  case ProjectKind::QKV: return "qkv";
  case ProjectKind::QKVOut: return "qkv_out";
  case ProjectKind::SelfQKVOut: return "self_qkv_out";
  }
  return "?";
}

/// `qkv_out`, `self_qkv_out`: the kernel projects its output too (w_o, b_o).
inline bool hasOutputProjection(ProjectKind kind) {
  return kind == ProjectKind::QKVOut || kind == ProjectKind::SelfQKVOut;
}

/// The largest power of two <= H (H >= 1): ALiBi's slopes are those of that
/// many heads, then interleaved ones for the rest (alibiSlope).
inline long largestPowerOfTwoAtMost(long H) {
  long P = 1;
  while (P * 2 <= H)
    P *= 2;
  return P;
}

inline const char *toString(PositionalKind kind) {
  switch (kind) {
  case PositionalKind::None: return "none";
  case PositionalKind::Sinusoidal: return "sinusoidal";
  case PositionalKind::Rotary: return "rotary";
  }
  return "?";
}

inline const char *toString(RotaryStyle style) {
  return style == RotaryStyle::Half ? "half" : "interleaved";
}

/// `positional = rotary(base = B, style = S, dims = N)` (docs/language.md, rotary embeddings):
/// query row i turns at its position ip, key row j at j; channel pair c
/// ((c, c + dims/2) for half, (2c, 2c + 1) for interleaved) by the angle
/// t * base^(-2c / dims). Channels from `dims` on are not rotated.
struct RotarySpec {
  double base = 10000.0;
  RotaryStyle style = RotaryStyle::Half;
  long dims = 0; // 0 until Sema fills in the default, head_dim
  std::string text() const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", base);
    return std::string("rotary(base = ") + buf + ", style = " + toString(style) +
           ", dims = " + std::to_string(dims) + ")";
  }
};

/// cache = contiguous | paged(block = N) (docs/language.md, KV caches): the
/// kernel appends the Lq new tokens' keys and values to per-sequence caches
/// in place, then attends each new query over its sequence's cache.
enum class CacheKind { None, Contiguous, Paged };
struct CacheSpec {
  CacheKind kind = CacheKind::None;
  int64_t block = 0; // Paged: tokens per block
  bool any() const { return kind != CacheKind::None; }
  bool paged() const { return kind == CacheKind::Paged; }
  std::string text() const {
    return kind == CacheKind::None         ? "none"
           : kind == CacheKind::Contiguous ? "contiguous"
                                           : "paged(block = " + std::to_string(block) + ")";
  }
};

inline const char *toString(Layout layout) {
  return layout == Layout::BHSD ? "bhsd" : "bshd";
}

/// The kind spelled `name`, or nullopt. `Last` is the enum's last value:
/// every kind enum is dense from 0, so the loop visits each spelling once.
template <typename Kind, Kind Last>
std::optional<Kind> parseKind(std::string_view name) {
  for (int k = 0; k <= (int)Last; ++k)
    if (name == toString((Kind)k))
      return (Kind)k;
  return std::nullopt;
}

/// Which projections have a bias (`proj_bias = true` or a list `q, k, v, o`,
/// docs/language.md, version 2: Whisper's key projection has none).
struct ProjBias {
  bool q = false, k = false, v = false, o = false;
  static ProjBias all() { return {true, true, true, true}; }
  bool any() const { return q || k || v || o; }
  /// `true`, `false` or the list, for dumps and headers; `hasOut`: whether
  /// the kernel has an output projection (o counts only then).
  std::string text(bool hasOut) const {
    if (q && k && v && (o || !hasOut))
      return "true";
    std::string list;
    for (auto [has, name] : {std::pair{q, "q"}, {k, "k"}, {v, "v"}, {o && hasOut, "o"}})
      if (has)
        list += (list.empty() ? "" : ", ") + std::string(name);
    return list.empty() ? "false" : list;
  }
};

/// The ALiBi slope m_h of head h of H, as the ALiBi paper's reference code
/// (`get_slopes`) and every ALiBi checkpoint (BLOOM) compute it: for H a
/// power of two 2^(-8 (h + 1) / H); otherwise, with P the largest power of
/// two below H, the P slopes of P heads followed by the slopes 0, 2, 4, ...
/// of 2P heads (docs/language.md §5).
inline double alibiSlope(long h, long H) {
  long P = largestPowerOfTwoAtMost(H);
  if (h < P)
    return std::exp2(-8.0 * (double)(h + 1) / (double)P);
  return std::exp2(-8.0 * (double)(2 * (h - P) + 1) / (double)(2 * P));
}

//===----------------------------------------------------------------------===//
// The kind tables
//===----------------------------------------------------------------------===//

/// A tensor a kind reads, besides q, k and v: its contract name and logical
/// shape as size names (`N` is the additive score's hidden size).
struct KindTensor {
  const char *name;
  const char *dims[3];
  int rank;
};

struct ScoreKindInfo {
  ScoreKind kind;
  /// Weight tensors, in the contract order (docs/language.md §6).
  int numWeights;
  KindTensor weights[3];
  /// The default scale is 1/sqrt(key_dim) (else 1).
  bool scaledByDefault;
  /// score(s q, k) = s score(q, k), so a scale may multiply q instead of the
  /// Lq x Lk scores (attn-fold-scale-into-query).
  bool scaleCommutesWithQuery;
  /// Written `NAME(hidden = N)`; the IR carries `hidden`.
  bool takesHidden;
  /// The key width may differ from the query width (key_dim != head_dim).
  bool keyWidthMayDiffer;
  /// An expression (a region in the IR), not a name.
  bool isExpression;
  /// Of the dot family: rotary embeddings may turn q and k before it
  /// (docs/language.md §6).
  bool takesRotary;
};

/// One row per ScoreKind, in enum order.
inline constexpr ScoreKindInfo kScoreKinds[] = {
    // kind                weights                                   scaled commute hidden keyW  expr  rotary
    {ScoreKind::Dot, 0, {}, false, true, false, false, false, true},
    {ScoreKind::ScaledDot, 0, {}, true, true, false, false, false, true},
    {ScoreKind::General, 1, {{"score_w", {"D", "Dk"}, 2}}, false, true, false, false, false, false},
    {ScoreKind::Additive, 3,
     {{"score_wq", {"N", "D"}, 2}, {"score_wk", {"N", "Dk"}, 2}, {"score_wv", {"N"}, 1}},
     false, false, true, true, false, false},
    {ScoreKind::Custom, 0, {}, false, false, false, false, true, true},
    // (q/|q|).(k/|k|): a scale of q cancels in the normalization.
    {ScoreKind::Cosine, 0, {}, false, false, false, false, false, true},
};

inline const ScoreKindInfo &kindInfo(ScoreKind kind) { return kScoreKinds[(int)kind]; }

struct MaskKindInfo {
  MaskKind kind;
  /// The tensor the term reads (valid_len, mask), if any.
  bool hasInput;
  KindTensor input;
  const char *inputType; // "i32" or "u8"
  /// Written `NAME(N)` with an integer N >= 1; the attribute of attn.mask
  /// (and attn.attention) that carries N: "window" or "sink".
  const char *widthAttr;
  /// An expression (a region in the IR), not a name.
  bool isExpression;
};

/// One row per MaskKind, in enum order.
inline constexpr MaskKindInfo kMaskKinds[] = {
    {MaskKind::Causal, false, {}, nullptr, nullptr, false},
    {MaskKind::ValidLen, true, {"valid_len", {"B"}, 1}, "i32", nullptr, false},
    {MaskKind::Prefix, true, {"prefix_len", {"B"}, 1}, "i32", nullptr, false},
    // PyTorch's key_padding_mask: nonzero means padding (hidden).
    {MaskKind::KeyPadding, true, {"key_padding_mask", {"B", "Lk"}, 2}, "u8", nullptr, false},
    {MaskKind::Window, false, {}, nullptr, "window", false},
    {MaskKind::Sink, false, {}, nullptr, "sink", false},
    {MaskKind::Input, true, {"mask", {"B", "Lq", "Lk"}, 3}, "u8", nullptr, false},
    {MaskKind::Custom, false, {}, nullptr, nullptr, true},
};

inline const MaskKindInfo &kindInfo(MaskKind kind) { return kMaskKinds[(int)kind]; }

// The tables are in enum order: a row out of place fails to compile.
constexpr bool tablesInEnumOrder() {
  for (int k = 0; k < (int)(sizeof(kScoreKinds) / sizeof(kScoreKinds[0])); ++k)
    if ((int)kScoreKinds[k].kind != k)
      return false;
  for (int k = 0; k < (int)(sizeof(kMaskKinds) / sizeof(kMaskKinds[0])); ++k)
    if ((int)kMaskKinds[k].kind != k)
      return false;
  return true;
}
static_assert(tablesInEnumOrder(), "kScoreKinds / kMaskKinds rows must follow the enums");

/// Groups of a mask once '&' is distributed over '|' (docs/language.md, mask):
/// the frontend's limit and the range of group numbers in the IR.
inline constexpr int kMaxMaskGroups = 16;

/// A mask as text from its terms' texts: joined with " & ", or, with groups
/// (disjunctive normal form, docs/language.md, mask), "(a & b) | (a & c)".
inline std::string maskFormulaText(const std::vector<std::string> &terms,
                                   const std::vector<std::vector<int>> &groups) {
  auto conjunction = [&](const std::vector<int> &indices, bool parenthesize) {
    std::string text;
    for (int n : indices)
      text += (text.empty() ? "" : " & ") + terms.at((size_t)n);
    return parenthesize && indices.size() > 1 ? "(" + text + ")" : text;
  };
  if (terms.empty())
    return "none";
  if (groups.empty()) {
    std::vector<int> all;
    for (size_t n = 0; n < terms.size(); ++n)
      all.push_back((int)n);
    return conjunction(all, false);
  }
  std::string text;
  for (const std::vector<int> &group : groups)
    text += (text.empty() ? "" : " | ") + conjunction(group, true);
  return text;
}

/// A built-in term's text: its name, and `(N)` when it takes a width.
inline std::string builtinMaskText(MaskKind kind, long width) {
  std::string text = toString(kind);
  if (kindInfo(kind).widthAttr)
    text += "(" + std::to_string(width) + ")";
  return text;
}

inline std::optional<ScoreKind> parseScoreKind(std::string_view name) {
  for (const ScoreKindInfo &row : kScoreKinds)
    if (name == toString(row.kind))
      return row.kind;
  return std::nullopt;
}
inline std::optional<MaskKind> parseMaskKind(std::string_view name) {
  for (const MaskKindInfo &row : kMaskKinds)
    if (name == toString(row.kind))
      return row.kind;
  return std::nullopt;
}
inline std::optional<BiasKind> parseBiasKind(std::string_view name) {
  return parseKind<BiasKind, BiasKind::Custom>(name);
}
inline std::optional<Layout> parseLayout(std::string_view name) {
  return parseKind<Layout, Layout::BSHD>(name);
}
inline std::optional<PositionalKind> parsePositionalKind(std::string_view name) {
  return parseKind<PositionalKind, PositionalKind::Rotary>(name);
}
inline std::optional<RotaryStyle> parseRotaryStyle(std::string_view name) {
  return parseKind<RotaryStyle, RotaryStyle::Interleaved>(name);
}

} // namespace attnc
