//===- npy_fuzzer.cpp - libFuzzer entry over the runtime's .npy reader -----===//
//
// Feeds arbitrary bytes to attnc::runtime::parseNpy, the parser attnc-run uses
// on user files. Beyond "no crash, no sanitizer report", every accepted file
// must be self-consistent (byte size = elements x element size) and survive a
// round trip: encodeNpy of what was read parses back to the same dtype, shape
// and bytes. A violation aborts, so libFuzzer saves the input.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace attnc::runtime;

static void require(bool condition, const char *what) {
  if (!condition) {
    std::fprintf(stderr, "npy_fuzzer: invariant violated: %s\n", what);
    std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NpyArray array;
  std::string error;
  if (!parseNpy(data, size, array, error)) {
    require(!error.empty(), "a rejected file has a message");
    return 0;
  }
  size_t bytes = 0;
  std::string sizeError;
  require(npyByteSize(array.dtype(), array.shape(), bytes, sizeError),
          "an accepted shape has a byte size");
  require(bytes == array.byteSize(), "byteSize() matches the shape");
  require(bytes <= size, "the data came from the file");
  require(int64_t(bytes) == array.elementCount() * int64_t(attn_dtype_size(array.dtype())),
          "element count matches the byte size");

  std::string image = encodeNpy(array.dtype(), array.shape(), array.data());
  NpyArray again;
  require(parseNpy(reinterpret_cast<const uint8_t *>(image.data()), image.size(), again, error),
          "encodeNpy output parses");
  require(again.dtype() == array.dtype(), "round trip keeps the dtype");
  require(again.shape() == array.shape(), "round trip keeps the shape");
  require(again.byteSize() == array.byteSize(), "round trip keeps the size");
  require(bytes == 0 || std::memcmp(again.data(), array.data(), bytes) == 0,
          "round trip keeps the data");
  return 0;
}
