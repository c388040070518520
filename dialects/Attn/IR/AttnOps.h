//===- AttnOps.h - The attn dialect and its ops -----------------*- C++ -*-===//
//
// Declares the `attn` dialect, its string enums and its ops (generated from
// AttnBase.td / AttnOps.td). Include this header to use the dialect.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "mlir/Dialect/Arithmetic/IR/Arithmetic.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Attn/IR/AttnDialect.h.inc"
#include "dialects/Attn/IR/AttnEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/Attn/IR/AttnOps.h.inc"

namespace mlir::attn {

/// Block arguments of every expression region, in this order; the score
/// region has one more, the f32 `dot` of the current query and key rows.
enum ExprArg : unsigned { ArgB, ArgH, ArgI, ArgJ, ArgG, ArgIp, ArgDot, kNumIndexArgs = ArgDot };

/// Checks an expression region: one block with the index arguments (and
/// `dot` when `withDot`), only arith / math / select / attn.size / attn.read
/// ops, and an attn.yield of `yieldType`. `what` names it in messages.
LogicalResult verifyExprRegion(Operation *op, Region &region, StringRef what, bool withDot,
                               Type yieldType);

/// Verifiers of the region-only ops and the fold interface (AttnRegions.cpp).
LogicalResult verifySizeOp(SizeOp op);
LogicalResult verifyReadOp(ReadOp op);
std::unique_ptr<DialectInterface> makeAttnFoldInterface(AttnDialect *dialect);

} // namespace mlir::attn
