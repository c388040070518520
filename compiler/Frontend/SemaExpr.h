//===- SemaExpr.h - Type checking and constant folding of expressions -*- C++ -*-===//
//
// Checks the custom `score`, `bias` and `mask` expressions and the constant
// `scale` / `softcap` expressions of docs/language.md §5: name resolution
// (index variables, sizes, declared inputs), call arity, index counts, and
// types (bool vs numeric, int/float promotion). Fills Expr::type of every node.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"
#include "compiler/Frontend/Diagnostics.h"

namespace attnc {

/// Where an expression appears; decides which names and functions it may use.
enum class ExprContext { Score, Bias, Mask, Constant };

struct ExprScope {
  ExprContext context;
  const char *field;                 // "score", "bias", "mask", "scale", ...
  const std::vector<InputAST> *inputs; // declared inputs of the kernel
  const KernelSpec *spec;            // sizes resolved so far (for constants)
};

/// Type-checks `expr` in place. Returns its type, or Unknown after an error
/// (which has been reported; enclosing nodes then stay silent).
ExprType checkExpr(Expr &expr, const ExprScope &scope, DiagnosticEngine &diag);

/// Evaluates a checked constant expression in double precision. Reports and
/// returns false on division by zero, a domain error or a non-finite result
/// (the latter at `where`, the start of the value).
bool evaluateConstant(const Expr &expr, SourceLoc where, const ExprScope &scope,
                      DiagnosticEngine &diag, double &value);

/// True when `name` means something inside expressions of `context`
/// (an index variable, a size, a declared input, ...).
bool isExpressionName(const std::string &name, const ExprScope &scope);

/// Names that may not be given to a declared input: index variables, sizes,
/// functions, and the kernel's own argument names.
const std::vector<std::string> &reservedInputNames();

/// Size names usable in expressions and input shapes: B H G Lq Lk D Dk Dv M.
const std::vector<std::string> &sizeNames();

const char *toString(ExprType type);

} // namespace attnc
