//===- Jit.cpp - Compile .attn source into a cached kernel library --------===//
//
// Placeholder until the compiler library (compiler/Driver) can be linked into
// the runtime: every request fails with a message naming the workaround, so
// callers (attn_library_compile, attnc-run on a .attn file) already take the
// final code path and report the failure like any other.
//
//===----------------------------------------------------------------------===//
#include "runtime/Jit.h"

#include <cstdlib>

namespace attnc::runtime {

std::string cacheDirectory() {
  if (const char *dir = std::getenv("ATTNC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/attnc";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/attnc";
  return ".attnc-cache";
}

bool compileToLibrary(const std::string & /*source*/,
                      const std::string &sourceName,
                      const std::string & /*options*/,
                      std::string & /*libraryPath*/, std::string &error) {
  error = "cannot compile '" + sourceName +
          "': run-time compilation of .attn source is not available yet in "
          "this version of libattnrt; compile it first with `attnc " +
          sourceName + " -o libNAME.so` and pass the .so";
  return false;
}

} // namespace attnc::runtime
