//===- attnc-opt.cpp - The project's mlir-opt ------------------------------===//
//
// Reads attn dialect IR and runs any registered pass (--attn-<verb>-<noun>),
// the default pipeline (--attn-default-pipeline) or upstream passes such as
// --canonicalize, with -verify-diagnostics and -split-input-file.
//
//===----------------------------------------------------------------------===//
#include "compiler/MLIRGen/MLIRGen.h"
#include "compiler/Pipeline/Pipeline.h"

#include "mlir/IR/Dialect.h"
#include "mlir/Support/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  attnc::registerAttncPasses();
  mlir::DialectRegistry registry;
  attnc::registerAttncDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attnc-opt: the attn dialect optimizer\n", registry));
}
