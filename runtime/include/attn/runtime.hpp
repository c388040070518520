//===- attn/runtime.hpp - RAII C++ layer over attn/runtime.h -----*- C++ -*-===//
//
// Header-only, so it adds nothing to the ABI: Library owns an attn_library,
// Kernel is a non-owning view valid while its Library lives, Tensor is a view
// of caller memory with its own shape storage. Failures throw attn::Error,
// which carries the C status and the runtime's message.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "attn/runtime.h"

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attn {

class Error : public std::runtime_error {
public:
  Error(attn_status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}
  attn_status status() const { return status_; }

private:
  attn_status status_;
};

namespace detail {
constexpr size_t kErrorSize = 1024;
constexpr size_t kCompileErrorSize = 16384; // diagnostics span several lines
inline void check(attn_status status, const char *message) {
  if (status != ATTN_OK)
    throw Error(status, message);
}
template <typename T> struct DtypeOf;
template <> struct DtypeOf<float> { static constexpr attn_dtype value = ATTN_F32; };
template <> struct DtypeOf<int32_t> { static constexpr attn_dtype value = ATTN_I32; };
template <> struct DtypeOf<uint8_t> { static constexpr attn_dtype value = ATTN_U8; };
} // namespace detail

/// A view of caller memory: dense row-major, shape outermost first.
class Tensor {
public:
  Tensor() = default;
  Tensor(void *data, attn_dtype dtype, std::vector<int64_t> shape)
      : data_(data), dtype_(dtype), shape_(std::move(shape)) {}
  template <typename T>
  Tensor(T *data, std::vector<int64_t> shape)
      : Tensor(static_cast<void *>(data), detail::DtypeOf<T>::value,
               std::move(shape)) {}
  template <typename T>
  Tensor(const T *data, std::vector<int64_t> shape)
      : Tensor(const_cast<T *>(data), std::move(shape)) {}

  void *data() const { return data_; }
  attn_dtype dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// The C view; valid while *this is alive and unchanged.
  attn_tensor c() const {
    return {data_, dtype_, int32_t(shape_.size()), shape_.data(), nullptr};
  }

private:
  void *data_ = nullptr;
  attn_dtype dtype_ = ATTN_F32;
  std::vector<int64_t> shape_;
};

/// An argument's description (see attn_arg_info).
struct Argument {
  std::string name;
  bool isOutput;
  attn_dtype dtype;
  std::vector<attn_dim_info> dims;
  std::string shapeText;
  /// An in-out argument (a KV cache): read, then updated in place.
  bool isWritten = false;
  /// "in", "out" or "inout".
  const char *direction() const { return isOutput ? "out" : isWritten ? "inout" : "in"; }
};

class Kernel {
public:
  explicit Kernel(const attn_kernel *kernel) : kernel_(kernel) {}
  const attn_kernel *c() const { return kernel_; }
  std::string name() const { return attn_kernel_name(kernel_); }
  std::string target() const { return attn_kernel_target(kernel_); }
  std::string variants() const { return attn_kernel_variants(kernel_); }
  size_t argumentCount() const { return attn_kernel_arg_count(kernel_); }
  Argument argument(size_t i) const {
    const attn_arg_info *info = attn_kernel_arg(kernel_, i);
    if (!info)
      throw Error(ATTN_ERROR_INVALID, "argument index out of range");
    return {info->name, info->is_output != 0, info->dtype,
            std::vector<attn_dim_info>(info->dims, info->dims + info->rank),
            info->shape_text, info->is_written != 0};
  }
  std::vector<Argument> arguments() const {
    std::vector<Argument> args;
    for (size_t i = 0; i < argumentCount(); ++i)
      args.push_back(argument(i));
    return args;
  }

  /// Throws attn::Error with the checker's message when `args` do not fit.
  void check(const std::vector<Tensor> &args) const {
    call(args, &attn_kernel_check);
  }
  void run(const std::vector<Tensor> &args) const {
    call(args, &attn_kernel_run);
  }
  /// The shape of argument `index` implied by the inputs in `args`.
  std::vector<int64_t> outputShape(const std::vector<Tensor> &args,
                                   size_t index) const {
    std::vector<attn_tensor> c = toC(args);
    std::vector<int64_t> shape(size_t(argument(index).dims.size()));
    char err[detail::kErrorSize];
    detail::check(attn_kernel_output_shape(kernel_, c.data(), c.size(), index,
                                           shape.data(), err, sizeof err),
                  err);
    return shape;
  }

private:
  using Entry = attn_status (*)(const attn_kernel *, const attn_tensor *,
                                size_t, char *, size_t);
  static std::vector<attn_tensor> toC(const std::vector<Tensor> &args) {
    std::vector<attn_tensor> c;
    c.reserve(args.size());
    for (const Tensor &t : args)
      c.push_back(t.c());
    return c;
  }
  void call(const std::vector<Tensor> &args, Entry entry) const {
    std::vector<attn_tensor> c = toC(args);
    char err[detail::kErrorSize];
    detail::check(entry(kernel_, c.data(), c.size(), err, sizeof err), err);
  }
  const attn_kernel *kernel_;
};

class Library {
public:
  /// Loads `path`; throws attn::Error (ATTN_ERROR_LOAD) with the reason.
  static Library open(const std::string &path) {
    attn_library *lib = nullptr;
    char err[detail::kErrorSize];
    detail::check(attn_library_open(path.c_str(), &lib, err, sizeof err), err);
    return Library(lib);
  }
  /// Compiles `.attn` source at run time through the cache (see
  /// attn_library_compile); throws attn::Error with the diagnostics.
  static Library compile(const std::string &source, const std::string &options = "") {
    attn_library *lib = nullptr;
    std::vector<char> err(detail::kCompileErrorSize);
    detail::check(attn_library_compile(source.data(), source.size(), options.c_str(), &lib,
                                       err.data(), err.size()),
                  err.data());
    return Library(lib);
  }
  static Library compileFile(const std::string &path, const std::string &options = "") {
    attn_library *lib = nullptr;
    std::vector<char> err(detail::kCompileErrorSize);
    detail::check(attn_library_compile_file(path.c_str(), options.c_str(), &lib, err.data(),
                                            err.size()),
                  err.data());
    return Library(lib);
  }
  Library() = default;
  Library(Library &&other) noexcept : lib_(std::exchange(other.lib_, nullptr)) {}
  Library &operator=(Library &&other) noexcept {
    if (this != &other) {
      attn_library_close(lib_);
      lib_ = std::exchange(other.lib_, nullptr);
    }
    return *this;
  }
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;
  ~Library() { attn_library_close(lib_); }

  const attn_library *c() const { return lib_; }
  std::string path() const { return attn_library_path(lib_); }
  /// True when compile() found the library in the cache.
  bool fromCache() const { return attn_library_from_cache(lib_) != 0; }
  std::vector<Kernel> kernels() const {
    std::vector<Kernel> ks;
    for (size_t i = 0; i < attn_library_kernel_count(lib_); ++i)
      ks.emplace_back(attn_library_kernel(lib_, i));
    return ks;
  }
  /// Throws when there is no kernel `name`.
  Kernel kernel(const std::string &name) const {
    const attn_kernel *k = attn_kernel_find(lib_, name.c_str());
    if (!k)
      throw Error(ATTN_ERROR_INVALID, "no kernel '" + name + "' in '" +
                                          attn_library_path(lib_) + "'");
    return Kernel(k);
  }

private:
  explicit Library(attn_library *lib) : lib_(lib) {}
  attn_library *lib_ = nullptr;
};

/// Sets the Halide thread count (0 = default); returns the previous setting.
inline int setNumThreads(int n) { return attn_set_num_threads(n); }

} // namespace attn
