//===- RegionToHalide.h - attn expression regions to expression graphs -*- C++ -*-===//
//
// Translates a custom score / bias / mask region of attn.attention into the
// back end's ExprGraph: each mlir::Value becomes a node (index -> int32,
// f32 -> float, i1 -> bool). The graph is plain data, so the MLIR module may
// be destroyed before the back end builds it into Halide.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/ExprGraph.h"

#include "mlir/IR/Region.h"
#include "mlir/Support/LogicalResult.h"

#include <map>
#include <string>

namespace attnc {

/// Checks that every op of `region` has a translation (located error
/// otherwise) and returns its graph. `inputNames` names the tensors
/// attn.read may read (function arguments) by their contract name. The
/// graph's `source` is the yield's `source` attribute, when present.
mlir::FailureOr<halide_backend::ExprGraph>
translateExprRegion(mlir::Region &region, const std::map<void *, std::string> &inputNames);

} // namespace attnc
