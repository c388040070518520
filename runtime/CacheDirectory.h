//===- CacheDirectory.h - Where run-time compilation keeps its cache -*- C++ -*-===//
//
// One rule for libattnrt (attn_cache_directory) and the run-time compiler
// plugin (libattnc_jit): $ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else
// $HOME/.cache/attnc. With none of the three set there is no directory: a
// cache in whatever the working directory happens to be would scatter
// compiled code (that the runtime later executes) across the file system.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc::runtime {

/// The cache directory; false with a message naming the variables to set
/// when none of them is set (or all are empty).
bool cacheDirectory(std::string &dir, std::string &error);

} // namespace attnc::runtime
