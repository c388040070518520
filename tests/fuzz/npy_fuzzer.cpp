//===- npy_fuzzer.cpp - libFuzzer entry over the runtime's .npy reader -----===//
//
// Feeds arbitrary bytes to attnc::runtime::parseNpy, the parser attnc-run uses
// on user files. Beyond "no crash, no sanitizer report", every accepted file
// must be self-consistent (byte size = elements x element size) and survive a
// round trip: encodeNpy of what was read parses back to the same dtype, shape
// and bytes. The file reader readNpy, which reads the header first and then
// only the bytes it promises, must agree with parseNpy on every input: the
// same verdict, the same message (after the path) and the same array. A
// violation aborts, so libFuzzer saves the input.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"

#include <sys/mman.h>
#include <unistd.h>

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

/// readNpy on the bytes as a file (an in-memory one).
static bool readAsFile(const uint8_t *data, size_t size, NpyArray &array, std::string &error) {
  int fd = memfd_create("npy_fuzzer", MFD_CLOEXEC);
  require(fd >= 0, "memfd_create works");
  require(write(fd, data, size) == ssize_t(size), "the bytes are written");
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  bool ok = readNpy(path, array, error);
  close(fd);
  if (!ok)
    require(error.compare(0, path.size() + 2, path + ": ") == 0, "readNpy names the path");
  error = ok ? "" : error.substr(path.size() + 2);
  return ok;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NpyArray array, fromFile;
  std::string error, fileError;
  bool parsed = parseNpy(data, size, array, error);
  bool read = readAsFile(data, size, fromFile, fileError);
  require(parsed == read, "readNpy and parseNpy agree on accepting");
  require(parsed || fileError == error, "readNpy and parseNpy give the same message");
  if (!parsed) {
    require(!error.empty(), "a rejected file has a message");
    return 0;
  }
  require(fromFile.dtype() == array.dtype() && fromFile.shape() == array.shape() &&
              (array.byteSize() == 0 ||
               std::memcmp(fromFile.data(), array.data(), array.byteSize()) == 0),
          "readNpy and parseNpy read the same array");
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
