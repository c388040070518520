//===- RegionToHalide.h - attn expression regions to Halide Exprs -*- C++ -*-===//
//
// Translates a custom score / bias / mask region of attn.attention into an
// ExprBuilder: walking the region, each mlir::Value maps to a Halide::Expr
// (index -> Int(32), f32 -> Float(32), i1 -> Bool). The builder reads the
// region when the back end calls it, so the module must outlive the build.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include "mlir/IR/Region.h"
#include "mlir/Support/LogicalResult.h"

#include <map>
#include <string>

namespace attnc {

/// Checks that every op of `region` has a Halide translation (located error
/// otherwise) and returns a builder for it. `inputNames` names the tensors
/// attn.read may read (function arguments) by their contract name.
mlir::FailureOr<halide_backend::ExprBuilder>
translateExprRegion(mlir::Region &region, const std::map<void *, std::string> &inputNames);

} // namespace attnc
