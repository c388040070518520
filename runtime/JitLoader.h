//===- JitLoader.h - Run-time compilation through libattnc_jit -*- C++ -*-===//
//
// libattnrt itself never links the compiler: the first compile request
// loads the plugin libattnc_jit.so (JitPlugin.h) from the folder libattnrt
// was loaded from, or from $ATTNC_JIT_LIBRARY, and later requests reuse it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "attn/runtime.h"

#include <string>

namespace attnc::runtime {

/// Where a compiled library is and how it got there.
struct CompiledEntry {
  std::string path;       // CACHE/attnc-KEY.so
  bool fromCache = false; // true: found, not compiled by this call
};

/// Compiles through the plugin (see JitPlugin.h for the arguments). When the
/// plugin cannot be loaded: ATTN_ERROR_COMPILE with a message that names
/// the file looked for and why it failed.
attn_status compileWithPlugin(const std::string &source, const std::string &sourceName,
                              const std::string &options, bool rebuild,
                              CompiledEntry &entry, std::string &error);

} // namespace attnc::runtime
