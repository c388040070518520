//===- Dtype.cpp - Names and sizes of the runtime's element types ---------===//
//
// Part of the C API, in a file of its own so that the .npy reader and writer
// (which need them) can be built into tools that do not link libattnrt, such
// as the benchmark harness.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.h"

extern "C" {

const char *attn_dtype_name(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_F32:
    return "f32";
  case ATTN_I32:
    return "i32";
  case ATTN_U8:
    return "u8";
  case ATTN_F16:
    return "f16";
  case ATTN_BF16:
    return "bf16";
  default:
    break;
  }
  return "?";
}

size_t attn_dtype_size(attn_dtype dtype) {
  switch (dtype) {
  case ATTN_F32:
  case ATTN_I32:
    return 4;
  case ATTN_U8:
    return 1;
  case ATTN_F16:
  case ATTN_BF16:
    return 2;
  default:
    break;
  }
  return 0;
}

} // extern "C"
