//===- JitPlugin.h - The C interface of the run-time compiler plugin -*- C++ -*-===//
//
// libattnrt loads libattnc_jit (the compiler: attnc_driver, libMLIR,
// libHalide, libLLVM) with dlopen on the first attn_library_compile call, so
// apps that only run prebuilt kernels never map the compiler. The two meet
// only through this C interface, looked up by name with dlsym; the version
// in the symbol's name changes whenever the interface does, so a stale
// plugin is refused instead of misread.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <stddef.h>

#define ATTNC_JIT_PLUGIN_FILE "libattnc_jit.so"
#define ATTNC_JIT_COMPILE_SYMBOL "attnc_jit_compile_v1"
#define ATTNC_JIT_FREE_SYMBOL "attnc_jit_free_v1"

extern "C" {

/// What one compile request produced; strings are malloc'ed by the plugin
/// and released with attnc_jit_free_v1.
struct attnc_jit_result {
  int status;      // an attn_status
  int from_cache;  // 1: found in the cache, not compiled by this call
  char *path;      // the cache entry (on success)
  char *key;       // its key (on success)
  char *error;     // the message (on failure)
};

/// Compiles `source` (`length` bytes, named `source_name` in diagnostics)
/// with attnc `options` into the cache, or finds it there; `rebuild`
/// replaces an existing entry. Never throws.
typedef void (*attnc_jit_compile_fn)(const char *source, size_t length,
                                     const char *source_name, const char *options,
                                     int rebuild, struct attnc_jit_result *result);
typedef void (*attnc_jit_free_fn)(struct attnc_jit_result *result);

} // extern "C"
