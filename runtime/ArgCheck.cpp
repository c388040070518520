//===- ArgCheck.cpp - Caller tensors against a kernel's signature ---------===//
//
// One pass over the arguments in contract order; the first argument to use a
// size name binds it, and any later argument that disagrees is the one
// blamed, with both values in the message. Every check that would otherwise
// surface as a Halide bounds error, a crash or a silent wrong answer inside
// generated code happens here, where the message can speak in the .attn
// language's terms (size names, logical dimensions).
//
//===----------------------------------------------------------------------===//
#include "runtime/ArgCheck.h"

#include <climits>
#include <cstdint>

namespace attnc::runtime {

attn_dtype toDtype(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return ATTN_F32;
  case ElemType::I32:
    return ATTN_I32;
  case ElemType::U8:
    return ATTN_U8;
  case ElemType::F16:
    return ATTN_F16;
  case ElemType::BF16:
    return ATTN_BF16;
  }
  return ATTN_F32;
}

std::vector<int64_t> denseStrides(const int64_t *shape, int32_t rank) {
  std::vector<int64_t> strides(rank > 0 ? size_t(rank) : 0);
  int64_t stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    strides[size_t(d)] = stride;
    if (__builtin_mul_overflow(stride, shape[d], &stride))
      stride = INT64_MAX;
  }
  return strides;
}

namespace {
std::string listText(const int64_t *values, int32_t count) {
  std::string s = "[";
  for (int32_t i = 0; i < count; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}

std::string dimLabel(int32_t d, const ArgDim &dim) {
  std::string s = "dimension " + std::to_string(d);
  if (!dim.name.empty())
    s += " (" + dim.name + ")";
  return s;
}

/// Checks one tensor on its own and binds its size names. In-out arguments
/// (KV caches) are checked like inputs: their sizes (Lmax, num_blocks,
/// block) bind as any other.
bool checkOne(const ArgSpec &arg, const attn_tensor &t, SizeBindings &sizes,
              std::string &error) {
  std::string who = "argument '" + arg.name + "': ";
  attn_dtype want = toDtype(arg.type);
  if (!t.data) {
    error = who + "data is NULL";
    return false;
  }
  if (attn_dtype_size(t.dtype) == 0) {
    error = who + "dtype " + std::to_string(int(t.dtype)) +
            " is not an attn_dtype; the kernel expects " +
            attn_dtype_name(want);
    return false;
  }
  if (t.dtype != want) {
    error = who + "dtype is " + attn_dtype_name(t.dtype) +
            " but the kernel expects " + attn_dtype_name(want);
    return false;
  }
  int32_t rank = int32_t(arg.shape.size());
  if (t.rank != rank) {
    error = who + "rank is " + std::to_string(t.rank) +
            " but the kernel expects " + std::to_string(rank) + " (" +
            formatShape(arg) + ")";
    return false;
  }
  if (rank > 0 && !t.shape) {
    error = who + "shape is NULL";
    return false;
  }

  int64_t elements = 1;
  for (int32_t d = 0; d < rank; ++d) {
    const ArgDim &dim = arg.shape[size_t(d)];
    int64_t extent = t.shape[d];
    std::string label = who + dimLabel(d, dim);
    if (extent < 1) {
      error = label + " is " + std::to_string(extent) +
              "; sizes must be at least 1";
      return false;
    }
    if (dim.value && extent != dim.value) {
      error = label + " is " + std::to_string(extent) +
              (dim.name.empty()
                   ? " but the kernel expects " + std::to_string(dim.value)
                   : " but the kernel was compiled for " + dim.name + " = " +
                         std::to_string(dim.value));
      return false;
    }
    if (!dim.name.empty()) {
      auto [it, inserted] = sizes.try_emplace(dim.name, SizeBinding{extent, arg.name});
      if (!inserted && it->second.value != extent) {
        error = label + " is " + std::to_string(extent) + " but '" +
                it->second.argument + "' has " + dim.name + " = " +
                std::to_string(it->second.value);
        return false;
      }
    }
    // halide_dimension_t holds int32 extents and strides, and a buffer
    // without the large_buffers feature addresses at most 2^31 - 1 elements.
    if (extent > INT32_MAX) {
      error = label + " is " + std::to_string(extent) +
              ", above the 2147483647 limit of a Halide buffer dimension";
      return false;
    }
    if (__builtin_mul_overflow(elements, extent, &elements) ||
        elements > INT32_MAX) {
      error = who + "shape " + listText(t.shape, rank) +
              " has more than 2147483647 elements, the limit of a Halide "
              "buffer";
      return false;
    }
  }

  if (t.strides) {
    std::vector<int64_t> dense = denseStrides(t.shape, rank);
    for (int32_t d = 0; d < rank; ++d) {
      // A dimension of extent 1 is never stepped over, so its stride is
      // free (PyTorch reports arbitrary strides there).
      if (t.shape[d] != 1 && t.strides[d] != dense[size_t(d)]) {
        error = who + "strides " + listText(t.strides, rank) +
                " are not dense row-major (expected " +
                listText(dense.data(), rank) +
                "); this version of the runtime takes only dense row-major "
                "tensors";
        return false;
      }
    }
  }

  size_t align = attn_dtype_size(want);
  if (reinterpret_cast<uintptr_t>(t.data) % align != 0) {
    error = who + "data pointer is not aligned to " + std::to_string(align) +
            " bytes (the size of " + attn_dtype_name(want) + ")";
    return false;
  }
  return true;
}

struct Extent {
  uintptr_t begin = 0, end = 0;
};

Extent byteExtent(const attn_tensor &t) {
  uint64_t bytes = attn_dtype_size(t.dtype);
  for (int32_t d = 0; d < t.rank; ++d)
    bytes *= uint64_t(t.shape[d]); // bounded by checkOne: < 2^31 * 4
  uintptr_t begin = reinterpret_cast<uintptr_t>(t.data);
  return {begin, begin + bytes};
}
} // namespace

bool checkArguments(const std::string &kernel, const std::vector<ArgSpec> &args,
                    const attn_tensor *tensors, size_t count,
                    SizeBindings &sizes, std::string &error,
                    const CheckOptions &options) {
  sizes.clear();
  if (count != args.size()) {
    std::string names;
    for (const ArgSpec &arg : args)
      names += (names.empty() ? "" : ", ") + arg.name;
    error = "kernel '" + kernel + "' takes " + std::to_string(args.size()) +
            " arguments (" + names + ") but " + std::to_string(count) +
            (count == 1 ? " was" : " were") + " given";
    return false;
  }
  if (count && !tensors) {
    error = "the argument array is NULL";
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    if (options.inputsOnly && args[i].isOutput)
      continue;
    if (!checkOne(args[i], tensors[i], sizes, error))
      return false;
  }
  if (options.inputsOnly)
    return true;
  // Generated code reads inputs while it writes outputs and in-out
  // arguments (KV caches, updated in place); sharing memory would give wrong
  // answers without any error, so refuse it. Outputs are looked at first, so
  // an output that overlaps a cache is the one blamed.
  for (bool outputs : {true, false}) {
    for (size_t i = 0; i < count; ++i) {
      if (outputs ? !args[i].isOutput : !args[i].isWritten)
        continue;
      Extent written = byteExtent(tensors[i]);
      for (size_t j = 0; j < count; ++j) {
        if (j == i)
          continue;
        Extent other = byteExtent(tensors[j]);
        if (written.begin < other.end && other.begin < written.end) {
          error = "argument '" + args[i].name + "': its memory overlaps argument '" +
                  args[j].name + "'; " +
                  (outputs ? "an output" : "an in-out argument (written in place)") +
                  " must not share memory with another argument";
          return false;
        }
      }
    }
  }
  return true;
}

bool fitsHalideBuffer(const ArgSpec &arg, const std::vector<int64_t> &shape,
                      std::string &error) {
  int64_t elements = 1;
  int32_t rank = int32_t(shape.size());
  for (int32_t d = 0; d < rank; ++d) {
    int64_t extent = shape[size_t(d)];
    if (extent > INT32_MAX) {
      error = "argument '" + arg.name + "': " +
              dimLabel(d, d < int32_t(arg.shape.size()) ? arg.shape[size_t(d)] : ArgDim{}) +
              " is " + std::to_string(extent) +
              ", above the 2147483647 limit of a Halide buffer dimension";
      return false;
    }
    if (__builtin_mul_overflow(elements, extent, &elements) || elements > INT32_MAX) {
      error = "argument '" + arg.name + "': shape " + listText(shape.data(), rank) +
              " has more than 2147483647 elements, the limit of a Halide buffer";
      return false;
    }
  }
  return true;
}

bool shapeFromSizes(const ArgSpec &arg, const SizeBindings &sizes,
                    std::vector<int64_t> &shape, std::string &error) {
  shape.clear();
  for (const ArgDim &dim : arg.shape) {
    if (dim.value) {
      shape.push_back(dim.value);
      continue;
    }
    auto it = sizes.find(dim.name);
    if (it == sizes.end()) {
      error = "argument '" + arg.name + "': size " + dim.name +
              " is not given by any input";
      return false;
    }
    shape.push_back(it->second.value);
  }
  return true;
}

} // namespace attnc::runtime
