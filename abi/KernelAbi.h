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

enum class ElemType { F32, I32, U8 };

/// "f32", "i32", "u8".
const char *toString(ElemType type);

/// One logical dimension: a size name with its fixed value (0 when dynamic),
/// or an anonymous constant (empty name).
struct ArgDim {
  std::string name; // "B", "H", "Lq", ...; empty for a literal constant
  int64_t value = 0; // fixed value, 0 when the size is dynamic
  bool isDynamic() const { return value == 0; }
};

struct ArgSpec {
  std::string name;
  ElemType type = ElemType::F32;
  bool isOutput = false;
  std::vector<ArgDim> shape; // logical, row-major, outermost first
};

/// `f32[B, H, Lq, D]`-style rendering, for headers and messages.
std::string formatShape(const ArgSpec &arg);

/// The signature string that generated code embeds as `NAME_attnc_signature`
/// so the runtime can show and check logical shapes: one line per argument,
/// `<name> <in|out> <f32|i32|u8> <dim>,<dim>,...`, where a dim is `NAME=VALUE`
/// (fixed size), `NAME` (dynamic size) or `VALUE` (a constant); a rank-0
/// argument has `-` for its dims.
std::string encodeSignature(const std::vector<ArgSpec> &args);
/// Parses encodeSignature's output; returns false on malformed text.
bool decodeSignature(const std::string &text, std::vector<ArgSpec> &args);

} // namespace attnc
