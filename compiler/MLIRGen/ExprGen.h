//===- ExprGen.h - Expressions to attn expression regions -------*- C++ -*-===//
//
// Builds the body of a custom score / bias / mask region from a checked
// frontend Expr: one arith / math / select op per node, index block
// arguments (b, h, i, j, g, ip) for the index variables, attn.size for
// dynamic sizes and attn.read for declared inputs, ending in attn.yield.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"

#include "mlir/IR/Builders.h"

#include <functional>
#include <map>
#include <set>
#include <string>

namespace attnc {

struct ExprRegionContext {
  const KernelSpec &spec;
  /// The function arguments of the declared inputs, by name.
  const std::map<std::string, mlir::Value> &inputs;
  std::function<mlir::Location(SourceLoc)> loc;
};

/// Fills the empty `region` with one block computing `expr`; `withDot` adds
/// the f32 `dot` argument (score). The yield is f32, or i1 when `boolean`.
void buildExprRegion(mlir::OpBuilder &builder, mlir::Region &region, const Expr &expr,
                     bool withDot, bool boolean, const ExprRegionContext &context);

/// The declared inputs an expression reads, in first-use order.
std::vector<std::string> inputsReadBy(const Expr &expr, const KernelSpec &spec);

} // namespace attnc
