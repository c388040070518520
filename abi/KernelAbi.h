//===- KernelAbi.h - The argument contract shared by compiler and runtime -*- C++ -*-===//
//
// What a generated kernel library promises about its arguments: element
// types, logical shapes with size names, and the `NAME_attnc_signature`
// text that carries them. The compiler writes it, libattnrt reads it; this
// library depends on nothing but the C++ standard library, so the runtime
// that only loads kernels needs no compiler (docs/runtime.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnc {

/// F16 is IEEE binary16, BF16 bfloat16 (the upper half of an f32); both are
/// storage types: kernels compute in f32 (docs/language.md, storage types).
enum class ElemType { F32, I32, U8, F16, BF16 };

/// "f32", "i32", "u8", "f16", "bf16".
const char *toString(ElemType type);

/// One logical dimension: a size name with its fixed value (0 when dynamic),
/// or an anonymous constant (empty name).
struct ArgDim {
  std::string name; // "B", "H", "Lq", ...; empty for a literal constant
  int64_t value = 0; // fixed value, 0 when the size is dynamic
  bool isDynamic() const { return value == 0; }
};

/// What every layer needs to know of an element type, in one row: its name
/// in `.attn` and signatures, its C type in headers (16-bit floats travel
/// as their bits), its bytes, and its halide_type_t code and bits.
struct ElemTypeInfo {
  ElemType type;
  const char *name;
  const char *cType;
  uint8_t bytes;
  uint8_t halideCode; // halide_type_code_t: 0 int, 1 uint, 2 float, 4 bfloat
};
const ElemTypeInfo &info(ElemType type);

/// Whether `type` is one of the 16-bit float storage types.
inline bool isHalfFloat(ElemType type) {
  return type == ElemType::F16 || type == ElemType::BF16;
}

struct ArgSpec {
  std::string name;
  ElemType type = ElemType::F32;
  bool isOutput = false;
  std::vector<ArgDim> shape; // logical, row-major, outermost first
  /// An input the kernel also writes, in place (a KV cache): the caller's
  /// data is read, then updated. Never set together with isOutput.
  bool isWritten = false;
};

/// Whether `type` holds real numbers (f32 or a 16-bit float): the arguments
/// that have gradients.
inline bool isFloat(ElemType type) { return type == ElemType::F32 || isHalfFloat(type); }

/// The contract of NAME_backward (docs/language.md, training; 9.8) from
/// NAME's: the forward kernel's arguments (outputs excluded), then `out`,
/// `lse` and `d_out` (out's shape and type) as inputs; then the outputs
/// `d_` + each float argument of the forward kernel, in its shape and type.
std::vector<ArgSpec> backwardArguments(const std::vector<ArgSpec> &forward);

/// `f32[B, H, Lq, D]`-style rendering, for headers and messages.
std::string formatShape(const ArgSpec &arg);

/// The signature string that generated code embeds as `NAME_attnc_signature`
/// so the runtime can show and check logical shapes: one line per argument,
/// `<name> <in|out|inout> <f32|i32|u8|f16|bf16> <dim>,<dim>,...`, where a dim is `NAME=VALUE`
/// (fixed size), `NAME` (dynamic size) or `VALUE` (a constant); a rank-0
/// argument has `-` for its dims.
std::string encodeSignature(const std::vector<ArgSpec> &args);
/// Parses encodeSignature's output; returns false on malformed text.
bool decodeSignature(const std::string &text, std::vector<ArgSpec> &args);

} // namespace attnc
