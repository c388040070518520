//===- SharedRuntime.cpp - Where the shared Halide runtime library is -----===//
//
// dladdr on a function of this file names the executable or shared library
// that contains the compiler (bin/attnc, or lib/libattnrt.so for run-time
// compilation); the runtime library and the runtime object are installed in
// the library folder of the same prefix, and sit in lib/ of the build tree.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/SharedRuntime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <vector>

#ifndef ATTNC_HALIDE_RUNTIME_FILE
#define ATTNC_HALIDE_RUNTIME_FILE "libattnc_halide_runtime.so"
#endif
#ifndef ATTNC_HALIDE_RUNTIME_OBJECT_FILE
#define ATTNC_HALIDE_RUNTIME_OBJECT_FILE "attnc_halide_runtime.o"
#endif
#ifndef ATTNC_INSTALL_LIBDIR
#define ATTNC_INSTALL_LIBDIR "lib"
#endif

namespace attnc {

namespace {
std::string moduleDirectory() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&findSharedHalideRuntime), &info) || !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  // The executable may be reported by its bare name; /proc knows better.
  if (path.find('/') == std::string::npos) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
      return "";
    path.assign(buf, size_t(n));
  }
  char real[PATH_MAX];
  if (realpath(path.c_str(), real))
    path = real;
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool isFile(const std::string &path) { return access(path.c_str(), R_OK) == 0; }

/// `file` beside the module holding this code, or in its ../lib folders.
std::string findBesideCompiler(const std::string &file, std::string &searched) {
  std::string dir = moduleDirectory();
  if (dir.empty())
    return "";
  std::vector<std::string> candidates = {dir + "/" + file,
                                         dir + "/../" ATTNC_INSTALL_LIBDIR "/" + file,
                                         dir + "/../lib/" + file};
  for (const std::string &candidate : candidates) {
    searched += (searched.empty() ? "" : ", ") + candidate;
    if (isFile(candidate)) {
      char real[PATH_MAX];
      return realpath(candidate.c_str(), real) ? std::string(real) : candidate;
    }
  }
  return "";
}
} // namespace

std::string findSharedHalideRuntime(std::string &searched) {
  searched.clear();
  if (const char *env = std::getenv("ATTNC_HALIDE_RUNTIME"); env && *env) {
    searched = env;
    return isFile(env) ? env : "";
  }
  return findBesideCompiler(ATTNC_HALIDE_RUNTIME_FILE, searched);
}

std::string findHalideRuntimeObject(std::string &searched) {
  searched.clear();
  return findBesideCompiler(ATTNC_HALIDE_RUNTIME_OBJECT_FILE, searched);
}

} // namespace attnc
