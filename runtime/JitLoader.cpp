//===- JitLoader.cpp - Run-time compilation through libattnc_jit ----------===//
//
// The plugin is looked for beside libattnrt (build tree: build/lib; install
// tree: PREFIX/lib), found with dladdr on a function of this file, so it
// works from any prefix without a search path. It is loaded once per
// process and never unloaded (LLVM and MLIR keep global state that does
// not survive dlclose).
//
//===----------------------------------------------------------------------===//
#include "runtime/JitLoader.h"

#include "runtime/JitPlugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace attnc::runtime {

namespace {

struct Plugin {
  attnc_jit_compile_fn compile = nullptr;
  attnc_jit_free_fn release = nullptr;
  std::string error; // why it did not load
};

std::string pluginPath() {
  if (const char *env = std::getenv("ATTNC_JIT_LIBRARY"); env && *env)
    return env;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&compileWithPlugin), &info) && info.dli_fname) {
    std::string self = info.dli_fname;
    size_t slash = self.rfind('/');
    if (slash != std::string::npos)
      return self.substr(0, slash + 1) + ATTNC_JIT_PLUGIN_FILE;
  }
  return ATTNC_JIT_PLUGIN_FILE;
}

const Plugin &plugin() {
  static Plugin loaded = [] {
    Plugin p;
    std::string path = pluginPath();
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      p.error = "run-time compilation is not available: cannot load the compiler plugin '" +
                path + "' (" + (why ? why : "unknown error") +
                "); install it beside libattnrt or set ATTNC_JIT_LIBRARY";
      return p;
    }
    p.compile = reinterpret_cast<attnc_jit_compile_fn>(dlsym(handle, ATTNC_JIT_COMPILE_SYMBOL));
    p.release = reinterpret_cast<attnc_jit_free_fn>(dlsym(handle, ATTNC_JIT_FREE_SYMBOL));
    if (!p.compile || !p.release) {
      p.compile = nullptr;
      p.error = "run-time compilation is not available: '" + path + "' has no " +
                ATTNC_JIT_COMPILE_SYMBOL + " (a plugin of another libattnrt version)";
    }
    return p;
  }();
  return loaded;
}

} // namespace

attn_status compileWithPlugin(const std::string &source, const std::string &sourceName,
                              const std::string &options, bool rebuild,
                              CompiledEntry &entry, std::string &error) {
  const Plugin &p = plugin();
  if (!p.compile) {
    error = p.error;
    return ATTN_ERROR_COMPILE;
  }
  attnc_jit_result result{};
  p.compile(source.data(), source.size(), sourceName.c_str(), options.c_str(), rebuild ? 1 : 0,
            &result);
  attn_status status = attn_status(result.status);
  if (status == ATTN_OK && result.path) {
    entry.path = result.path;
    entry.fromCache = result.from_cache != 0;
  } else {
    if (status == ATTN_OK)
      status = ATTN_ERROR_COMPILE;
    error = result.error ? result.error : "out of memory";
  }
  p.release(&result);
  return status;
}

} // namespace attnc::runtime
