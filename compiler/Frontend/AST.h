//===- AST.h - Syntax and resolved kernels of the .attn language -*- C++ -*-===//
//
// The frontend's data model. The parser produces a `ModuleAST` of `KernelAST`s,
// each a list of raw fields; Sema resolves every field into a `KernelSpec`,
// the fully defaulted, checked description of one kernel that MLIRGen reads.
// Expressions (custom score / bias / mask, constant scales) are `Expr` trees.
// Nothing here depends on MLIR or Halide.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "abi/KernelAbi.h"
#include "compiler/Kinds/AttentionKinds.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnc {

/// A position in a source file; line and column are 1-based, 0 means unknown.
struct SourceLoc {
  uint32_t line = 0;
  uint32_t col = 0;
  /// Which text the position is in: 0 is the input file; other ids are
  /// registered with DiagnosticEngine::addBuffer (e.g. a `-D FIELD=VALUE`).
  uint32_t buffer = 0;
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

enum class ExprKind {
  IntLit,   // 42
  FloatLit, // 0.125, 1e-3
  BoolLit,  // true, false
  Name,     // i, j, ip, B, Lq, a declared scalar? (names are resolved by Sema)
  Index,    // slopes[h], lens[b, i]
  Call,     // exp(x), clamp(x, lo, hi), dot(q, k)
  Unary,    // -x, not c
  Binary,   // a + b, a < b, a and b
};

enum class UnaryOp { Neg, Not };
/// MaskAnd / MaskOr are `&` / `|` between the terms of `mask` (docs/language.md
/// 9.3), never inside an expression.
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or, MaskAnd, MaskOr };

/// Value types of expressions after Sema.
enum class ExprType { Unknown, Int, Float, Bool };

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
/// Checked expressions held by a KernelSpec: shared so that specs copy
/// cheaply between stages; nothing mutates them after Sema.
using SharedExpr = std::shared_ptr<Expr>;

struct Expr {
  ExprKind kind;
  SourceLoc loc;
  ExprType type = ExprType::Unknown; // filled by Sema
  int64_t intValue = 0;              // IntLit
  double floatValue = 0;             // FloatLit
  bool boolValue = false;            // BoolLit
  std::string name;                  // Name, Index (tensor), Call (callee)
  UnaryOp unaryOp = UnaryOp::Neg;
  BinaryOp binaryOp = BinaryOp::Add;
  std::vector<ExprPtr> operands;     // Index: indices; Call: args; Unary: 1; Binary: 2
  std::string argName;               // a keyword call argument (`hidden = 128`): "hidden"

  Expr(ExprKind kind, SourceLoc loc) : kind(kind), loc(loc) {}
  ExprPtr clone() const;
};

//===----------------------------------------------------------------------===//
// Syntax: what the parser produces
//===----------------------------------------------------------------------===//

/// The right-hand side of `field = value`, kept as written; Sema interprets it.
/// Enumerated values are bare identifiers or calls (`window(256)`,
/// `additive(hidden = 128)`); numbers, expressions and lists are expressions.
struct FieldAST {
  std::string name;
  SourceLoc nameLoc;
  SourceLoc valueLoc;
  ExprPtr value;     // the value parsed as an expression
  std::string text;  // the value's source text, for messages and the AST dump
  /// Further values after `value`: a list (`outputs = out, lse`, separator
  /// ',') or a mask conjunction (`mask = causal & window(64)`, separator '&').
  std::vector<ExprPtr> moreValues;
  std::vector<SourceLoc> moreValueLocs; // where each of moreValues starts
  char separator = 0; // ',' or '&' when moreValues is not empty
};

/// One dimension of a declared input or of an argument's logical shape:
/// a constant or a size name (`B`, `H`, `G`, `Lq`, `Lk`, `D`, `Dv`, ...).
struct DimAST {
  std::string sizeName; // empty for constants
  int64_t value = 0;
  SourceLoc loc;
};

/// `input NAME : TYPE[DIMS]`
struct InputAST {
  std::string name;
  SourceLoc loc;
  ElemType type = ElemType::F32;
  std::vector<DimAST> dims;
};

struct KernelAST {
  std::string name;
  SourceLoc loc;
  std::vector<FieldAST> fields;
  std::vector<InputAST> inputs;
  /// A syntax error inside the kernel dropped some of its items: Sema skips
  /// it (a dropped field would only cascade into bogus errors) and still
  /// analyzes the other kernels of the file.
  bool syntaxErrors = false;
};

struct ModuleAST {
  std::string fileName;
  std::vector<KernelAST> kernels;
};

//===----------------------------------------------------------------------===//
// Semantics: what Sema produces and MLIRGen consumes
//===----------------------------------------------------------------------===//

/// `batch`, `seq_q`, `seq_k`: a fixed size, `dynamic`, or (for seq_k) `seq_q`.
struct SizeSpec {
  enum Kind { Dynamic, Fixed, SameAsSeqQ } kind = Dynamic;
  int64_t value = 0;
  bool isFixed() const { return kind == Fixed; }
};

struct MaskTerm {
  MaskKind kind;
  SourceLoc loc;
  int64_t width = 0;  // W of window(W), S of sink(S)
  SharedExpr expr;    // Custom: boolean expression
};

/// A kernel with every field checked and defaulted (docs/language.md §4).
struct KernelSpec {
  std::string name;
  SourceLoc loc;

  int64_t heads = 1;    // H
  int64_t kvHeads = 1;  // G
  int64_t headDim = 0;  // D
  int64_t keyDim = 0;   // key width; == headDim except with additive
  int64_t valueDim = 0; // Dv
  SizeSpec batch, seqQ, seqK;
  /// batch = packed (docs/language.md, packed batches): sequences concatenated along the
  /// token axis (Tq, Tk tokens), delimited by cu_seqlens_q / cu_seqlens_k.
  bool packed = false;

  ScoreKind score = ScoreKind::ScaledDot;
  int64_t additiveHidden = 0; // additive(hidden = N)
  SharedExpr scoreExpr;       // Custom

  double scale = 1.0;         // the effective scale, default applied
  bool scaleExplicit = false; // written by the user
  std::optional<double> softcap;

  BiasKind bias = BiasKind::None;
  SharedExpr biasExpr; // Custom

  std::vector<MaskTerm> masks; // empty means every key is visible
  /// With '|': the mask in disjunctive normal form, each group the indices
  /// of `masks` that must all hold (a key is visible when some group holds).
  /// Empty: one group of every term (their conjunction).
  std::vector<std::vector<int>> maskGroups;

  ProjectKind project = ProjectKind::None;
  int64_t modelDim = 0;
  int64_t kvModelDim = 0; // kv_model_dim: the width of x_kv; 0 = model_dim
  ProjBias projBias; // proj_bias: which projections have a bias
  PositionalKind positional = PositionalKind::None;
  RotarySpec rotary; // PositionalKind::Rotary; dims filled in by Sema

  Layout layout = Layout::BHSD;
  CacheSpec cache; // cache = contiguous | paged(block = N)
  /// Storage types (docs/language.md, storage types): dtype for q, out, x, weights and
  /// biases; kvDtype for k and v. Arithmetic is f32 whatever they are.
  ElemType dtype = ElemType::F32;
  ElemType kvDtype = ElemType::F32;
  bool outputWeights = false;
  bool outputLse = false;
  /// backward = true (docs/language.md, training): also NAME_backward, the
  /// gradients of every float argument, recomputed from `lse`.
  bool backward = false;

  std::vector<InputAST> inputs; // declared extra inputs, declaration order

  /// The fields written in the source or given with -D, with the location of
  /// their value; fields left at their default are absent (for the AST dump).
  std::vector<std::pair<std::string, SourceLoc>> givenFields;
  bool isGiven(const std::string &field) const {
    for (const auto &given : givenFields)
      if (given.first == field)
        return true;
    return false;
  }

  bool hasMask(MaskKind kind) const {
    for (const MaskTerm &m : masks)
      if (m.kind == kind)
        return true;
    return false;
  }
};

//===----------------------------------------------------------------------===//
// Names shared by every stage
//===----------------------------------------------------------------------===//

// The kinds' spellings are in compiler/Kinds/AttentionKinds.h.
const char *toString(UnaryOp op);
const char *toString(BinaryOp op);

} // namespace attnc
