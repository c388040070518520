//===- ArgCheck.h - Caller tensors against a kernel's signature --*- C++ -*-===//
//
// The checks attn_kernel_run makes before calling generated code: argument
// count, NULL data, element type, rank, fixed sizes, agreement of each size
// name across arguments, dense strides, Halide's int32 buffer limits, data
// alignment and outputs or in-out arguments (KV caches, written in place)
// aliasing other arguments. It works on a decoded signature alone, so it is
// tested without any kernel library.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "attn/runtime.h"
#include "abi/KernelAbi.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc::runtime {

attn_dtype toDtype(ElemType type);

/// The value each size name takes, and the first argument that fixed it.
struct SizeBinding {
  int64_t value = 0;
  std::string argument;
};
using SizeBindings = std::map<std::string, SizeBinding>;

struct CheckOptions {
  /// Only look at inputs and in-out arguments (outputs may be anything):
  /// used to infer the shapes of outputs before allocating them.
  bool inputsOnly = false;
};

/// Returns true when `tensors[0..count)` fit `args`; otherwise false with the
/// first problem in `error` ("argument 'k': ..."). `kernel` names the kernel
/// in count mismatches. `sizes` receives the value of every size name seen.
bool checkArguments(const std::string &kernel, const std::vector<ArgSpec> &args,
                    const attn_tensor *tensors, size_t count,
                    SizeBindings &sizes, std::string &error,
                    const CheckOptions &options = {});

/// The shape of argument `index` given the sizes bound by checkArguments;
/// false when a dynamic size is unbound.
bool shapeFromSizes(const ArgSpec &arg, const SizeBindings &sizes,
                    std::vector<int64_t> &shape, std::string &error);

/// Whether `shape` fits one halide_buffer_t (int32 extents, at most
/// 2^31 - 1 elements); false with the checker's message naming `arg`
/// otherwise. Lets callers refuse an output before allocating it.
bool fitsHalideBuffer(const ArgSpec &arg, const std::vector<int64_t> &shape,
                      std::string &error);

/// Dense row-major strides (in elements) of `shape`.
std::vector<int64_t> denseStrides(const int64_t *shape, int32_t rank);

} // namespace attnc::runtime
