//===- CApi.cpp - attn/runtime.h over the C++ runtime ---------------------===//
//
// The C ABI is a thin shell: handles own the C++ objects, every entry point
// checks its pointers, copies messages into the caller's buffer, and never
// lets a C++ exception cross into C (bad_alloc becomes an error status).
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.h"

#include "runtime/HalideHooks.h"
#include "runtime/CacheDirectory.h"
#include "runtime/JitLoader.h"
#include "runtime/KernelLibrary.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <sys/stat.h>
#include <sstream>

using namespace attnc::runtime;

struct attn_kernel {
  const Kernel *impl;
};

struct attn_library {
  std::unique_ptr<KernelLibrary> impl;
  std::vector<attn_kernel> kernels; // stable after open
  bool fromCache = false;
};

namespace {
attn_status fail(attn_status status, const std::string &message, char *err,
                 size_t errlen) {
  if (err && errlen) {
    size_t n = std::min(message.size(), errlen - 1);
    std::memcpy(err, message.data(), n);
    err[n] = '\0';
  }
  return status;
}

attn_status succeed(char *err, size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  return ATTN_OK;
}

attn_status wrap(std::unique_ptr<KernelLibrary> impl, attn_library **lib);

/// Compile through the cache, then load. An entry that is in the cache but
/// does not load (damaged by hand, or made by an incompatible build) is
/// compiled again once rather than reported.
attn_status compileAndOpen(const std::string &source, const std::string &name,
                           const char *options, attn_library **lib, char *err,
                           size_t errlen) {
  std::string error;
  CompiledEntry entry;
  for (bool rebuild : {false, true}) {
    attn_status status =
        compileWithPlugin(source, name, options ? options : "", rebuild, entry, error);
    if (status != ATTN_OK)
      return fail(status, error, err, errlen);
    auto impl = KernelLibrary::open(entry.path, error);
    if (impl) {
      wrap(std::move(impl), lib);
      (*lib)->fromCache = entry.fromCache;
      return succeed(err, errlen);
    }
    if (!entry.fromCache)
      break;
  }
  return fail(ATTN_ERROR_LOAD, error, err, errlen);
}

attn_status wrap(std::unique_ptr<KernelLibrary> impl, attn_library **lib) {
  auto *result = new attn_library;
  result->impl = std::move(impl);
  for (const auto &kernel : result->impl->kernels())
    result->kernels.push_back({kernel.get()});
  *lib = result;
  return ATTN_OK;
}
} // namespace

extern "C" {

const char *attn_version(void) { return "0.1.0"; }

attn_status attn_library_open(const char *path, attn_library **lib, char *err,
                              size_t errlen) {
  if (!path || !lib)
    return fail(ATTN_ERROR_INVALID, "attn_library_open: NULL path or result",
                err, errlen);
  *lib = nullptr;
  try {
    std::string error;
    auto impl = KernelLibrary::open(path, error);
    if (!impl)
      return fail(ATTN_ERROR_LOAD, error, err, errlen);
    wrap(std::move(impl), lib);
    return succeed(err, errlen);
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_LOAD, "out of memory", err, errlen);
  }
}

attn_status attn_library_compile(const char *source, size_t length,
                                 const char *options, attn_library **lib,
                                 char *err, size_t errlen) {
  if (!source || !lib)
    return fail(ATTN_ERROR_INVALID, "attn_library_compile: NULL source or result",
                err, errlen);
  *lib = nullptr;
  try {
    return compileAndOpen(std::string(source, length), "<source>", options, lib, err,
                          errlen);
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_LOAD, "out of memory", err, errlen);
  }
}

attn_status attn_library_compile_file(const char *path, const char *options,
                                      attn_library **lib, char *err,
                                      size_t errlen) {
  if (!path || !lib)
    return fail(ATTN_ERROR_INVALID,
                "attn_library_compile_file: NULL path or result", err, errlen);
  *lib = nullptr;
  try {
    // An ifstream opens a directory and then reads nothing: say what it is.
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
      return fail(ATTN_ERROR_IO, std::string("cannot compile '") + path + "': it is a directory",
                  err, errlen);
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return fail(ATTN_ERROR_IO,
                  std::string("cannot open '") + path + "': " +
                      std::strerror(errno),
                  err, errlen);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof())
      return fail(ATTN_ERROR_IO, std::string("cannot read '") + path + "'", err, errlen);
    return compileAndOpen(text.str(), path, options, lib, err, errlen);
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_LOAD, "out of memory", err, errlen);
  }
}

int attn_library_from_cache(const attn_library *lib) {
  return lib && lib->fromCache ? 1 : 0;
}

size_t attn_cache_directory(char *buffer, size_t len) {
  try {
    std::string dir, error;
    if (!cacheDirectory(dir, error))
      dir.clear();
    fail(ATTN_OK, dir, buffer, len);
    return dir.size();
  } catch (const std::bad_alloc &) {
    return 0;
  }
}

void attn_library_close(attn_library *lib) { delete lib; }

const char *attn_library_path(const attn_library *lib) {
  return lib ? lib->impl->path().c_str() : nullptr;
}

size_t attn_library_kernel_count(const attn_library *lib) {
  return lib ? lib->kernels.size() : 0;
}

const char *attn_library_kernel_name(const attn_library *lib, size_t index) {
  const attn_kernel *k = attn_library_kernel(lib, index);
  return k ? k->impl->name().c_str() : nullptr;
}

const attn_kernel *attn_library_kernel(const attn_library *lib, size_t index) {
  if (!lib || index >= lib->kernels.size())
    return nullptr;
  return &lib->kernels[index];
}

const attn_kernel *attn_kernel_find(const attn_library *lib, const char *name) {
  if (!lib || !name)
    return nullptr;
  for (const attn_kernel &k : lib->kernels)
    if (k.impl->name() == name)
      return &k;
  return nullptr;
}

const char *attn_kernel_name(const attn_kernel *kernel) {
  return kernel ? kernel->impl->name().c_str() : nullptr;
}

const char *attn_kernel_target(const attn_kernel *kernel) {
  return kernel ? kernel->impl->target().c_str() : nullptr;
}

const char *attn_kernel_variants(const attn_kernel *kernel) {
  return kernel ? kernel->impl->variants().c_str() : nullptr;
}

size_t attn_kernel_arg_count(const attn_kernel *kernel) {
  return kernel ? kernel->impl->argumentInfos().size() : 0;
}

const attn_arg_info *attn_kernel_arg(const attn_kernel *kernel, size_t index) {
  if (!kernel || index >= kernel->impl->argumentInfos().size())
    return nullptr;
  return &kernel->impl->argumentInfos()[index];
}

int64_t attn_kernel_arg_index(const attn_kernel *kernel, const char *name) {
  if (!kernel || !name)
    return -1;
  const auto &infos = kernel->impl->argumentInfos();
  for (size_t i = 0; i < infos.size(); ++i)
    if (std::strcmp(infos[i].name, name) == 0)
      return int64_t(i);
  return -1;
}

attn_status attn_kernel_check(const attn_kernel *kernel,
                              const attn_tensor *args, size_t nargs, char *err,
                              size_t errlen) {
  if (!kernel)
    return fail(ATTN_ERROR_INVALID, "attn_kernel_check: NULL kernel", err,
                errlen);
  try {
    SizeBindings sizes;
    std::string error;
    if (!kernel->impl->check(args, nargs, sizes, error))
      return fail(ATTN_ERROR_ARGUMENT, error, err, errlen);
    return succeed(err, errlen);
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_ARGUMENT, "out of memory", err, errlen);
  }
}

// Checks only the inputs: they determine every size an output uses, so
// callers that have not allocated outputs yet can still ask for sizes.
static bool checkInputs(const attn_kernel *kernel, const attn_tensor *args, size_t nargs,
                        SizeBindings &sizes, std::string &error) {
  CheckOptions options;
  options.inputsOnly = true;
  return kernel->impl->check(args, nargs, sizes, error, options);
}

attn_status attn_kernel_size(const attn_kernel *kernel, const attn_tensor *args,
                             size_t nargs, const char *size_name,
                             int64_t *value) {
  if (!kernel || !size_name || !value)
    return ATTN_ERROR_INVALID;
  try {
    SizeBindings sizes;
    std::string error;
    if (!checkInputs(kernel, args, nargs, sizes, error))
      return ATTN_ERROR_ARGUMENT;
    auto it = sizes.find(size_name);
    if (it != sizes.end()) {
      *value = it->second.value;
      return ATTN_OK;
    }
    // A fixed size that only outputs mention is still known.
    for (const attnc::ArgSpec &arg : kernel->impl->arguments())
      for (const attnc::ArgDim &dim : arg.shape)
        if (dim.name == size_name && dim.value) {
          *value = dim.value;
          return ATTN_OK;
        }
    return ATTN_ERROR_ARGUMENT;
  } catch (const std::bad_alloc &) {
    return ATTN_ERROR_ARGUMENT;
  }
}

attn_status attn_kernel_output_shape(const attn_kernel *kernel,
                                     const attn_tensor *args, size_t nargs,
                                     size_t index, int64_t *shape, char *err,
                                     size_t errlen) {
  if (!kernel || !shape)
    return fail(ATTN_ERROR_INVALID, "attn_kernel_output_shape: NULL argument",
                err, errlen);
  const auto &specs = kernel->impl->arguments();
  if (index >= specs.size())
    return fail(ATTN_ERROR_INVALID,
                "attn_kernel_output_shape: argument index " +
                    std::to_string(index) + " out of range",
                err, errlen);
  try {
    SizeBindings sizes;
    std::string error;
    if (!checkInputs(kernel, args, nargs, sizes, error))
      return fail(ATTN_ERROR_ARGUMENT, error, err, errlen);
    std::vector<int64_t> result;
    if (!shapeFromSizes(specs[index], sizes, result, error) ||
        !fitsHalideBuffer(specs[index], result, error))
      return fail(ATTN_ERROR_ARGUMENT, error, err, errlen);
    std::copy(result.begin(), result.end(), shape);
    return succeed(err, errlen);
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_ARGUMENT, "out of memory", err, errlen);
  }
}

attn_status attn_kernel_run(const attn_kernel *kernel, const attn_tensor *args,
                            size_t nargs, char *err, size_t errlen) {
  if (!kernel)
    return fail(ATTN_ERROR_INVALID, "attn_kernel_run: NULL kernel", err,
                errlen);
  try {
    std::string error;
    attn_status status = kernel->impl->run(args, nargs, error);
    if (status != ATTN_OK)
      return fail(status, error, err, errlen);
    return succeed(err, errlen);
  } catch (const std::bad_alloc &) {
    return fail(ATTN_ERROR_KERNEL, "out of memory", err, errlen);
  }
}

int attn_set_num_threads(int n) { return setNumThreads(n); }

int attn_get_num_threads(void) { return numThreads(); }

} // extern "C"
