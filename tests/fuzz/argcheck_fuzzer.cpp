//===- argcheck_fuzzer.cpp - libFuzzer entry over the runtime's argument check ===//
//
// Loads a real kernel library (argcheck.attn, compiled by attnc at build time)
// and hands attn_kernel_check / attn_kernel_size / attn_kernel_output_shape
// tensors built from the fuzz input: shapes that agree with the kernel's size
// names, then perturbed (wrong, huge, negative or overflowing extents, bad
// ranks, dtypes and strides, NULL, aliased or misaligned data). When the check
// accepts and every tensor owns a buffer of exactly its claimed size, the
// kernel runs too: an accepted call must then succeed, so a Halide error or a
// sanitizer report means the checker let something through.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.h"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#ifndef ATTN_FUZZ_KERNEL_LIB
#error "ATTN_FUZZ_KERNEL_LIB must name the library compiled from argcheck.attn"
#endif

namespace {

void require(bool condition, const char *what, const char *detail = "") {
  if (!condition) {
    std::fprintf(stderr, "argcheck_fuzzer: invariant violated: %s %s\n", what, detail);
    std::abort();
  }
}

/// Reads the fuzz input front to back; zeros once it runs out.
class Bytes {
public:
  Bytes(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v = (v << 8) | byte();
    return v;
  }
  /// Extents that tend to find edges: limits of int32/int64, their
  /// neighbours, products that overflow, and small values.
  int64_t interestingExtent() {
    static const int64_t kValues[] = {0, 1, -1, 2, 3, 64, 65, INT32_MAX, int64_t(INT32_MAX) + 1,
                                      int64_t(1) << 32, 46341, 65536, INT64_MAX, INT64_MIN,
                                      -int64_t(INT32_MAX), int64_t(1) << 62};
    uint8_t pick = byte();
    if (pick < 2 * (sizeof kValues / sizeof kValues[0]))
      return kValues[pick / 2];
    return int64_t(u64());
  }

private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

const attn_library *library() {
  static attn_library *lib = [] {
    attn_library *l = nullptr;
    char err[1024];
    // $ATTN_FUZZ_KERNEL_LIB overrides the built-in path (e.g. other targets).
    const char *path = std::getenv("ATTN_FUZZ_KERNEL_LIB");
    if (attn_library_open(path ? path : ATTN_FUZZ_KERNEL_LIB, &l, err, sizeof err) != ATTN_OK) {
      std::fprintf(stderr, "argcheck_fuzzer: %s\n", err);
      std::abort();
    }
    attn_set_num_threads(1);
    return l;
  }();
  return lib;
}

/// A 64-byte aligned, zero-filled buffer of `bytes` bytes (at least 1).
struct Buffer {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> memory;
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes(n) {
    memory.reset(std::aligned_alloc(64, (n + 63) / 64 * 64 ? (n + 63) / 64 * 64 : 64));
    std::memset(memory.get(), 0, n);
  }
};

// Largest tensor the fuzzer allocates and runs, in elements.
constexpr int64_t kMaxRunElements = 1 << 14;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const attn_library *lib = library();
  Bytes in(data, size);
  size_t kernelCount = attn_library_kernel_count(lib);
  const attn_kernel *kernel = attn_library_kernel(lib, in.byte() % kernelCount);
  size_t nargs = attn_kernel_arg_count(kernel);
  uint8_t mode = in.byte();

  // A value for every size name, small enough to run.
  std::map<std::string, int64_t> sizes;
  for (size_t a = 0; a < nargs; ++a) {
    const attn_arg_info *info = attn_kernel_arg(kernel, a);
    for (int32_t d = 0; d < info->rank; ++d) {
      const attn_dim_info &dim = info->dims[d];
      if (dim.name[0] && !sizes.count(dim.name))
        sizes[dim.name] = dim.value ? dim.value : 1 + in.byte() % 70;
    }
  }

  struct Arg {
    attn_tensor tensor{};
    std::vector<int64_t> shape, strides;
    std::unique_ptr<Buffer> buffer;
    bool ownsExactBuffer = true; // data is its own buffer of the claimed size
  };
  std::vector<Arg> args(nargs);
  for (size_t a = 0; a < nargs; ++a) {
    const attn_arg_info *info = attn_kernel_arg(kernel, a);
    Arg &arg = args[a];
    uint8_t perturb = in.byte();
    arg.tensor.dtype = info->dtype;
    if ((perturb & 0x07) == 1)
      // Non-negative: attn_dtype's range is 0..2^31-1, so a negative value
      // is undefined behaviour in C++ before the runtime can refuse it.
      arg.tensor.dtype = attn_dtype(int32_t(in.u64() & 0x7fffffff));
    arg.tensor.rank = info->rank;
    if ((perturb & 0x07) == 2)
      arg.tensor.rank = int32_t(in.byte() % 12) - 2;
    int32_t rank = arg.tensor.rank > 0 ? arg.tensor.rank : 0;
    arg.shape.resize(size_t(rank));
    for (int32_t d = 0; d < rank; ++d) {
      int64_t extent = 1;
      if (d < info->rank) {
        const attn_dim_info &dim = info->dims[d];
        extent = dim.name[0] ? sizes[dim.name] : dim.value;
      }
      if ((perturb & 0x07) == 3 && (in.byte() & 1))
        extent = in.interestingExtent();
      arg.shape[size_t(d)] = extent;
    }
    arg.tensor.shape = (perturb & 0x07) == 4 && rank ? nullptr : arg.shape.data();

    // Strides: NULL, dense, or perturbed.
    if (perturb & 0x08) {
      arg.strides.assign(size_t(rank), 1);
      for (int32_t d = rank - 2; d >= 0; --d)
        arg.strides[size_t(d)] = arg.strides[size_t(d) + 1] * (arg.shape[size_t(d) + 1] & 0xffff);
      if ((perturb & 0x30) == 0x10 && rank)
        arg.strides[in.byte() % size_t(rank)] = in.interestingExtent();
      arg.tensor.strides = arg.strides.data();
    }

    // Data: an exact buffer when the shape is small and sane, else a dummy.
    int64_t elements = 1;
    bool sane = arg.tensor.shape || rank == 0;
    for (int64_t e : arg.shape)
      sane = sane && e >= 1 && !__builtin_mul_overflow(elements, e, &elements) &&
             elements <= kMaxRunElements;
    size_t elementSize = attn_dtype_size(arg.tensor.dtype);
    if (sane && elementSize) {
      arg.buffer = std::make_unique<Buffer>(size_t(elements) * elementSize);
    } else {
      arg.buffer = std::make_unique<Buffer>(64);
      arg.ownsExactBuffer = false;
    }
    arg.tensor.data = arg.buffer->memory.get();
    switch (perturb >> 6) {
    case 1:
      arg.tensor.data = nullptr;
      arg.ownsExactBuffer = false;
      break;
    case 2:
      if (in.byte() & 1) { // misaligned
        arg.tensor.data = static_cast<char *>(arg.tensor.data) + 1 + in.byte() % 3;
        arg.ownsExactBuffer = false;
      }
      break;
    default:
      break;
    }
  }
  // Aliasing: point one argument into another's buffer.
  if ((mode & 0x03) == 1 && nargs > 1) {
    size_t to = in.byte() % nargs, from = in.byte() % nargs;
    Arg &target = args[to];
    target.tensor.data = static_cast<char *>(args[from].buffer->memory.get()) +
                         (in.byte() % 4) * attn_dtype_size(ATTN_F32);
    target.ownsExactBuffer = false;
  }
  // Fill inputs with bytes derived from the input (any float, index, mask).
  uint32_t seed = 2166136261u;
  for (size_t i = 0; i < size; ++i)
    seed = (seed ^ data[i]) * 16777619u;
  for (Arg &arg : args) {
    if (!arg.ownsExactBuffer)
      continue;
    auto *p = static_cast<uint8_t *>(arg.buffer->memory.get());
    for (size_t i = 0; i < arg.buffer->bytes; ++i) {
      seed = seed * 1664525u + 1013904223u;
      p[i] = uint8_t(seed >> 24);
    }
  }

  std::vector<attn_tensor> tensors;
  for (Arg &arg : args)
    tensors.push_back(arg.tensor);
  size_t given = nargs;
  if ((mode & 0x0c) == 0x04)
    given = in.byte() % (nargs + 2);
  const attn_tensor *argv = (mode & 0x0c) == 0x08 ? nullptr : tensors.data();

  char err[256];
  err[0] = '\0';
  attn_status status = attn_kernel_check(kernel, argv, given, err, sizeof err);
  require(status == ATTN_OK || status == ATTN_ERROR_ARGUMENT || status == ATTN_ERROR_INVALID,
          "attn_kernel_check returns OK or an argument error", err);
  require(status == ATTN_OK || std::strlen(err) > 0, "a refusal has a message");

  // Size queries and output shapes never crash, whatever the outputs hold.
  static const char *kNames[] = {"B", "Lq", "Lk", "H", "D", "nope", ""};
  for (const char *name : kNames) {
    int64_t value = -7;
    attn_kernel_size(kernel, argv, given, name, &value);
  }
  for (size_t a = 0; a < nargs; ++a) {
    const attn_arg_info *info = attn_kernel_arg(kernel, a);
    std::vector<int64_t> shape(size_t(info->rank) + 1, -7);
    attn_status s = attn_kernel_output_shape(kernel, argv, given, a, shape.data(), err, sizeof err);
    if (status == ATTN_OK && info->is_output) {
      require(s == ATTN_OK, "an accepted call has output shapes", err);
      require(std::memcmp(shape.data(), args[a].shape.data(),
                          sizeof(int64_t) * size_t(info->rank)) == 0,
              "output shapes agree with the accepted outputs");
    }
  }

  bool runnable = status == ATTN_OK && given == nargs && argv;
  for (const Arg &arg : args)
    runnable = runnable && arg.ownsExactBuffer;
  if (runnable && (mode & 0x10) == 0) {
    err[0] = '\0';
    attn_status ran = attn_kernel_run(kernel, argv, given, err, sizeof err);
    require(ran == ATTN_OK, "an accepted call runs", err);
  }
  return 0;
}
