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
