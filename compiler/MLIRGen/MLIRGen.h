//===- MLIRGen.h - KernelSpecs to the attn dialect --------------*- C++ -*-===//
//
// Builds one func.func per kernel in the attn dialect, one op per concept in
// the order score -> scale -> softcap -> bias -> mask -> softmax ->
// weighted_sum, and verifies the module before returning it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace attnc {

/// Returns a null module after emitting located errors for anything the
/// dialect cannot express yet.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const std::string &fileName,
                                          const std::vector<KernelSpec> &kernels);

/// Registers every dialect attnc's IR uses.
void registerAttncDialects(mlir::DialectRegistry &registry);

} // namespace attnc
