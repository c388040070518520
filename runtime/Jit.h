//===- Jit.h - Compile .attn source into a cached kernel library -*- C++ -*-===//
//
// Run-time compilation (docs/tools.md §4): `.attn` text is compiled with
// the compiler library (compiler/Driver, linked into libattnrt) into a
// shared library in the cache directory, keyed by a hash of source, options,
// target and compiler version, then loaded like any other kernel library.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "attn/runtime.h"

#include <string>

namespace attnc::runtime {

/// The cache directory: $ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else
/// ~/.cache/attnc.
std::string cacheDirectory();

/// Where a compiled library is and how it got there.
struct CachedLibrary {
  std::string path;       // CACHE/attnc-KEY.so
  std::string key;        // hex digest of source, options, target, compiler
  bool fromCache = false; // true: found, not compiled by this call
};

/// Compiles `source` (named `sourceName` in diagnostics) with `options`
/// (attnc options as one string, e.g. "-D seq_q=128 --target=host
/// --kernel=mha --schedule=simple") into the cache, or finds it there.
/// `rebuild` ignores (and replaces) an existing entry. Returns ATTN_OK, or an
/// error status with a message: ATTN_ERROR_INVALID (options),
/// ATTN_ERROR_COMPILE (diagnostics of the source), ATTN_ERROR_IO (cache).
attn_status compileToLibrary(const std::string &source, const std::string &sourceName,
                             const std::string &options, bool rebuild,
                             CachedLibrary &result, std::string &error);

} // namespace attnc::runtime
