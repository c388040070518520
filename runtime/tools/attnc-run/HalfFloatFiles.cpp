//===- HalfFloatFiles.cpp - attnc-run's 16-bit arguments ------------------===//
//
// The conversions themselves are runtime/HalfFloat.h; this file only decides
// which file types an argument accepts and says so when it refuses one.
//
//===----------------------------------------------------------------------===//
#include "runtime/tools/attnc-run/HalfFloatFiles.h"

#include "runtime/HalfFloat.h"

namespace attnc::run {

using runtime::NpyArray;

namespace {

/// The accepted files of a 16-bit argument, for messages.
const char *accepted(attn_dtype want) {
  return want == ATTN_F16 ? "'<f2' (f16) or '<f4' (f32, rounded to f16 on load)"
                          : "'<f4' (f32, rounded to bf16 on load) or '<u2' (raw bf16 bits)";
}

/// A file's type as the user knows it: `<u2` is bits, not a number type.
std::string fileType(attn_dtype type) {
  return std::string("'") + runtime::npyDescr(type) + "' (" +
         (type == ATTN_BF16 ? "raw bf16 bits" : attn_dtype_name(type)) + ")";
}

} // namespace

bool convertInput(const std::string &name, attn_dtype want, NpyArray &array,
                  std::string &error) {
  if ((want != ATTN_F16 && want != ATTN_BF16) || array.dtype() == want)
    return true;
  if (array.dtype() != ATTN_F32) {
    error = "argument '" + name + "' is " + attn_dtype_name(want) + ": it takes " +
            accepted(want) + ", not " + fileType(array.dtype());
    return false;
  }
  NpyArray narrowed(want, array.shape());
  if (!narrowed.data()) {
    error = "argument '" + name + "': out of memory";
    return false;
  }
  size_t n = size_t(array.elementCount());
  if (want == ATTN_F16)
    runtime::narrowToF16(array.as<float>(), narrowed.as<uint16_t>(), n);
  else
    runtime::narrowToBf16(array.as<float>(), narrowed.as<uint16_t>(), n);
  array = std::move(narrowed);
  return true;
}

bool checkInoutFile(const std::string &name, attn_dtype want, const NpyArray &array,
                    std::string &error) {
  if ((want != ATTN_F16 && want != ATTN_BF16) || array.dtype() == want)
    return true;
  error = "argument '" + name + "' is an in-out " + attn_dtype_name(want) +
          " argument, written back to its file after the run: the file must hold " +
          fileType(want) + ", not " + fileType(array.dtype()) +
          (array.dtype() == ATTN_F32
               ? std::string(", which writing back would change to ") + fileType(want) +
                     "; convert it first (NumPy: " +
                     (want == ATTN_F16 ? "a.astype('<f2')" : "attnc.f32_to_bf16(a)") + ")"
               : std::string());
  return false;
}

const NpyArray *outputToWrite(const NpyArray &array, bool raw, NpyArray &storage) {
  if (raw || (array.dtype() != ATTN_F16 && array.dtype() != ATTN_BF16))
    return &array;
  storage = NpyArray(ATTN_F32, array.shape());
  if (!storage.data())
    return nullptr;
  size_t n = size_t(array.elementCount());
  if (array.dtype() == ATTN_F16)
    runtime::widenF16(array.as<uint16_t>(), storage.as<float>(), n);
  else
    runtime::widenBf16(array.as<uint16_t>(), storage.as<float>(), n);
  return &storage;
}

} // namespace attnc::run
