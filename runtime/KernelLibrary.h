//===- KernelLibrary.h - A loaded attnc kernel library -----------*- C++ -*-===//
//
// dlopens a shared library made by `attnc -o libx.so`, reads its kernel list
// (`attnc_kernels`), and for each kernel joins the attnc signature (logical
// shapes with size names) with Halide's metadata (argv slots, element types,
// ranks), refusing any disagreement at load time. A Kernel runs on caller
// tensors by building halide_buffer_t views and calling NAME_argv.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "attn/runtime.h"
#include "abi/KernelAbi.h"
#include "runtime/ArgCheck.h"

#include <memory>
#include <string>
#include <vector>

struct halide_filter_metadata_t;

namespace attnc::runtime {

/// A Halide run-time error as the caller should read it: a failed
/// `require` ("Requirement Failed: (CONDITION) MESSAGE") becomes MESSAGE,
/// which generated code words for the user (a KV cache that would overflow
/// names the sequence); anything else is returned unchanged.
std::string readableHalideError(const std::string &message);

class Kernel {
public:
  const std::string &name() const { return name_; }
  const std::string &target() const { return target_; }
  /// The compiled variants, one line each: "<target> <cpu features>" (see
  /// docs/targets.md); empty for libraries made before attnc recorded them.
  const std::string &variants() const { return variants_; }
  const std::vector<ArgSpec> &arguments() const { return args_; }
  const std::vector<attn_arg_info> &argumentInfos() const { return infos_; }

  bool check(const attn_tensor *tensors, size_t count, SizeBindings &sizes,
             std::string &error, const CheckOptions &options = {}) const;
  /// check() then the call; ATTN_ERROR_KERNEL carries Halide's message.
  attn_status run(const attn_tensor *tensors, size_t count,
                  std::string &error) const;

private:
  friend class KernelLibrary;
  /// Fills slots_ and the C infos; false when metadata and signature differ.
  bool bind(const halide_filter_metadata_t *metadata, std::string &error);
  void buildInfos();

  std::string name_;
  std::string target_;
  std::string variants_;
  int (*argv_)(void **) = nullptr;
  std::vector<ArgSpec> args_;  // contract order
  std::vector<int> slots_;     // argv slot of args_[i]
  int slotCount_ = 0;
  int userContextSlot_ = -1;
  std::vector<std::vector<attn_dim_info>> dims_;
  std::vector<std::string> shapeTexts_;
  std::vector<attn_arg_info> infos_;
};

class KernelLibrary {
public:
  /// nullptr (with a message) when `path` cannot be loaded or is not an
  /// attnc kernel library.
  static std::unique_ptr<KernelLibrary> open(const std::string &path,
                                             std::string &error);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;

  const std::string &path() const { return path_; }
  const std::vector<std::unique_ptr<Kernel>> &kernels() const { return kernels_; }
  const Kernel *find(const std::string &name) const;

private:
  KernelLibrary() = default;
  std::string path_;
  void *handle_ = nullptr;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

} // namespace attnc::runtime
