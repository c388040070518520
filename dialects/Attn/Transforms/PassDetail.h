//===- PassDetail.h - Base classes of the attn passes -----------*- C++ -*-===//
//
// Private to the pass implementations: the generated pass base classes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "dialects/Attn/IR/AttnOps.h"
#include "dialects/Attn/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::attn {
#define GEN_PASS_CLASSES
#include "dialects/Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn
