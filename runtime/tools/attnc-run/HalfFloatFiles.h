//===- HalfFloatFiles.h - attnc-run's 16-bit arguments -----------*- C++ -*-===//
//
// How .npy files meet f16 and bf16 arguments (docs/tools.md §4). NumPy has
// float16 but no bfloat16, and most users hold f32 data: an f16 argument
// takes `<f2` as is or `<f4` rounded on load; a bf16 argument takes `<f4`
// rounded on load or `<u2` raw bits. 16-bit outputs are written widened to
// `<f4` (exact) unless --raw asks for their own bits. In-out arguments (KV
// caches) are written back as they were read, so they take only their own
// bits.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Npy.h"

#include <string>

namespace attnc::run {

/// Makes `array`, read from a file for argument `name` of type `want`, an
/// array of `want` when the rules above allow it (rounding f32 to nearest
/// even); false with a message naming the argument and what it accepts
/// otherwise. Arguments of other types are left to the runtime's checks.
bool convertInput(const std::string &name, attn_dtype want, runtime::NpyArray &array,
                  std::string &error);

/// An in-out argument's file is written back in the type it was read as, so
/// a 16-bit in-out argument takes only files of its own type (`<f2` for
/// f16, `<u2` bits for bf16): rounding an `<f4` file on load would change
/// the file's type when it is written back. False with a message naming the
/// argument otherwise. Arguments of other types are left to the runtime.
bool checkInoutFile(const std::string &name, attn_dtype want,
                    const runtime::NpyArray &array, std::string &error);

/// What to write for an output array: 16-bit arrays widened to f32 unless
/// `raw`, anything else as it is. `storage` holds a widened copy; NULL when
/// there is no memory for it.
const runtime::NpyArray *outputToWrite(const runtime::NpyArray &array, bool raw,
                                       runtime::NpyArray &storage);

} // namespace attnc::run
