//===- ReadContract.h - A kernel function's argument contract -*- C++ -*-===//
//
// Reads `attn.arguments` (name, role, logical shape of every argument and
// result, in order) and the element types of the function's signature into
// the back end's ArgSpec list, checking that they agree.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace attnc {

struct KernelContract {
  std::vector<ArgSpec> arguments;         // inputs, then outputs
  std::vector<std::string> roles;         // data, weight, mask, declared, output
  /// The contract name of function argument n (inputs only).
  const std::string &inputName(unsigned n) const { return arguments[n].name; }
  /// The argument named `name`, or null.
  const ArgSpec *find(const std::string &name) const {
    for (const ArgSpec &arg : arguments)
      if (arg.name == name)
        return &arg;
    return nullptr;
  }
  bool has(const std::string &name) const { return find(name) != nullptr; }
};

mlir::LogicalResult readContract(mlir::FuncOp func, KernelContract &contract);

} // namespace attnc
