//===- HeaderWriter.h - The C header of a kernel artifact -*- C++ -*-===//
//
// Writes the C header that goes with an object or library: for each kernel a
// comment block (fields, every argument's logical shape and layout, an
// example call) and the declarations of NAME, NAME_argv, NAME_metadata,
// NAME_run and NAME_attnc_signature, plus the module's attnc_kernels list.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/HalideBackend/AttentionConfig.h"

#include <string>
#include <vector>

namespace attnc::halide_backend {

/// The header text; `guardName` seeds the include guard.
std::string writeHeader(const std::vector<const AttentionConfig *> &configs,
                        const std::string &guardName);

} // namespace attnc::halide_backend
