//===- RunWrapper.h - NAME_run and the runtime's metadata globals -*- C++ -*-===//
//
// Adds to the LLVM module Halide produced, for each kernel: `NAME_run`, an
// entry point on plain pointers plus the dynamic sizes that fills
// halide_buffer_t descriptors on the stack and calls `NAME`; the signature
// string `NAME_attnc_signature`; and once per module the null-terminated
// kernel list `attnc_kernels`. It is IR, so it works for cross targets too.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include <vector>

namespace llvm {
class Module;
}

namespace attnc::halide_backend {

/// NAME_run's error codes (Halide's own codes are other negative numbers).
enum RunError : int {
  kRunBadSize = -1,    // a dynamic size < 1, or a size / stride above INT32_MAX
  kRunNullPointer = -2, // a tensor pointer is NULL
  kRunBadOffsets = -3,  // packed: cu_seqlens do not start at 0, decrease, or miss Tq / Tk
  kRunCacheOverflow = -4 // a sequence's new rows do not fit its cache, or its block table
                         // names a block outside the pool; nothing was written
};

/// Adds the wrappers and globals for `configs` (all compiled into `module`).
/// Throws BackendError if a kernel function is missing.
void addRunWrappers(llvm::Module &module, const std::vector<const AttentionConfig *> &configs);

} // namespace attnc::halide_backend
