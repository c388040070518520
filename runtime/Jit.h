//===- Jit.h - Compile .attn source into a cached kernel library -*- C++ -*-===//
//
// Run-time compilation (TOOLS.md section 4): `.attn` text is compiled with
// the compiler library into a shared library in the cache directory, keyed by
// a hash of source, options, target and compiler version, then loaded like
// any other kernel library. Version 1 of libattnrt does not link the compiler
// yet; this is the single place that will change when it does.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc::runtime {

/// The cache directory: $ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else
/// ~/.cache/attnc.
std::string cacheDirectory();

/// Compiles `source` (named `sourceName` in diagnostics) with `options`
/// (attnc command-line options such as "-D seq_q=128 --target=host") into a
/// shared library and returns its path. Returns false with a message; in this
/// version it always does, saying that run-time compilation is not available.
bool compileToLibrary(const std::string &source, const std::string &sourceName,
                      const std::string &options, std::string &libraryPath,
                      std::string &error);

} // namespace attnc::runtime
