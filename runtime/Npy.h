//===- Npy.h - NumPy .npy files for attnc-run and the tests ------*- C++ -*-===//
//
// Reads and writes NumPy's .npy format, versions 1.0, 2.0 and 3.0, for the
// element types a kernel takes: C-order little-endian `<f4` (f32), `<i4`
// (i32), `|u1` (u8), `<f2` (f16) and `<u2` (bf16 as raw bits: NumPy has no
// bfloat16). Arrays keep the file's own type; converting one to an
// argument's type is the caller's business (attnc-run). Any other input (bad
// magic, malformed header dict, Fortran order, other dtypes, shapes whose
// byte size overflows, truncated or over-long data) is rejected with a
// message, never a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "attn/runtime.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnc::runtime {

/// An n-dimensional array in C order that owns its (64-byte aligned) data.
class NpyArray {
public:
  NpyArray() = default;
  /// Zero-filled array; `shape` must already be validated (see npyByteSize).
  NpyArray(attn_dtype dtype, std::vector<int64_t> shape);

  attn_dtype dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t elementCount() const;
  size_t byteSize() const { return bytes_; }
  void *data() { return data_.get(); }
  const void *data() const { return data_.get(); }
  template <typename T> T *as() { return static_cast<T *>(data()); }
  template <typename T> const T *as() const { return static_cast<const T *>(data()); }

  /// A dense row-major view for attn_kernel_run, valid while *this lives.
  attn_tensor view();

private:
  struct Free {
    void operator()(void *p) const;
  };
  attn_dtype dtype_ = ATTN_F32;
  std::vector<int64_t> shape_;
  size_t bytes_ = 0;
  std::unique_ptr<void, Free> data_;
};

/// Byte size of a `dtype` array of `shape`; false (with a message) when an
/// extent is negative or the size overflows 2^62.
bool npyByteSize(attn_dtype dtype, const std::vector<int64_t> &shape,
                 size_t &bytes, std::string &error);

/// What a .npy header says.
struct NpyHeader {
  attn_dtype dtype = ATTN_F32;
  std::vector<int64_t> shape;
  size_t dataOffset = 0; // where the data starts (magic + length + header)
  size_t dataBytes = 0;  // how many bytes of data the shape needs
};

/// Parses the header at the start of `bytes`; needs only the header's bytes,
/// not the data. Messages do not name the file.
bool parseNpyHeader(const uint8_t *bytes, size_t size, NpyHeader &header,
                    std::string &error);
/// False (with a message) unless exactly `header.dataBytes` bytes of data
/// follow the header (`available` is what follows it).
bool checkNpyDataSize(const NpyHeader &header, uint64_t available, std::string &error);
/// "(2, 3)", "(4,)", "()": a shape as NumPy prints it.
std::string shapeText(const std::vector<int64_t> &shape);

/// Parses a whole .npy file image. Messages do not name the file.
bool parseNpy(const uint8_t *bytes, size_t size, NpyArray &array,
              std::string &error);
/// Reads `path`; messages start with "<path>: ". The header and the file
/// size are checked before any data is read, and only the bytes the header
/// promises are read (a stream such as a pipe or /dev/zero is read up to
/// them, then must end).
bool readNpy(const std::string &path, NpyArray &array, std::string &error);

/// The .npy image of an array (version 1.0 unless the header needs 2.0).
std::string encodeNpy(attn_dtype dtype, const std::vector<int64_t> &shape,
                      const void *data);
/// Writes `path` atomically: into a temporary file in the same folder, then
/// renamed over `path`, so a failed write leaves any existing file as it was
/// and no reader sees half a file.
bool writeNpy(const std::string &path, attn_dtype dtype,
              const std::vector<int64_t> &shape, const void *data,
              std::string &error);
/// The first half of writeNpy, for writing several files all or nothing:
/// the complete image in a new temporary file beside `path` (its name in
/// `temporary`). Nothing is left behind on failure.
bool writeNpyTemporary(const std::string &path, attn_dtype dtype,
                       const std::vector<int64_t> &shape, const void *data,
                       std::string &temporary, std::string &error);
/// The second half: renames `temporary` to `path` (removing it on failure).
bool commitNpy(const std::string &temporary, const std::string &path, std::string &error);
inline bool writeNpy(const std::string &path, const NpyArray &array,
                     std::string &error) {
  return writeNpy(path, array.dtype(), array.shape(), array.data(), error);
}

/// The descr string of a dtype: "<f4", "<i4", "|u1", "<f2", "<u2" (bf16).
const char *npyDescr(attn_dtype dtype);

} // namespace attnc::runtime
