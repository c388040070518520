//===- CpuFeatures.h - The x86 CPU features a kernel variant may need -*- C++ -*-===//
//
// One table of the x86-64 instruction-set extensions attnc's kernels can be
// compiled for, each with the cpuid bit that reports it and the OS-saved
// register state (XCR0) it needs. The compiler turns it into the generated
// dispatcher's check (compiler/HalideBackend/TargetDispatch.cpp), so a kernel
// never executes an instruction the CPU lacks; the runtime uses it to say
// which features are missing when a kernel refuses to run (docs/targets.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnc {

/// Returned by a kernel entry point (and its NAME_run) when the running CPU
/// lacks a feature that every variant of the kernel needs.
constexpr int kErrorMissingCpuFeatures = -100;

struct CpuFeature {
  const char *name;           // LLVM's spelling: "sse4.1", "avx2", "avx512bw", ...
  uint32_t leaf, subleaf;     // cpuid leaf (and ECX sub-leaf) that reports it
  enum Register { EAX, EBX, ECX, EDX } reg;
  uint32_t bit;
  uint32_t xcr0;              // XCR0 bits the OS must save (AVX: 0x6, AVX-512: 0xe6); 0 if none
};

/// Every feature attnc can require, in a fixed order (bit i of a feature mask
/// is row i).
const std::vector<CpuFeature> &x86CpuFeatures();

/// The row of `name`, or -1.
int x86CpuFeatureIndex(const std::string &name);

/// Those of `required` (feature names) that the CPU running this process lacks;
/// empty on other architectures. Unknown names count as missing.
std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &required);

} // namespace attnc
