//===- CacheDirectory.cpp - Where run-time compilation keeps its cache ----===//
//
// Compiled into both libattnrt and libattnc_jit so the two always agree.
//
//===----------------------------------------------------------------------===//
#include "runtime/CacheDirectory.h"

#include <cstdlib>

namespace attnc::runtime {

bool cacheDirectory(std::string &dir, std::string &error) {
  if (const char *env = std::getenv("ATTNC_CACHE_DIR"); env && *env) {
    dir = env;
    return true;
  }
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = std::string(xdg) + "/attnc";
    return true;
  }
  if (const char *home = std::getenv("HOME"); home && *home) {
    dir = std::string(home) + "/.cache/attnc";
    return true;
  }
  dir.clear();
  error = "no cache directory for run-time compilation: set ATTNC_CACHE_DIR "
          "(or XDG_CACHE_HOME or HOME)";
  return false;
}

} // namespace attnc::runtime
