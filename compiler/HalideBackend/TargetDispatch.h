//===- TargetDispatch.h - Kernel variants per target, picked at run time -*- C++ -*-===//
//
// `--target` names one target or a comma-separated list (`portable` is the
// project's standard x86-64 list). On x86-64 every target becomes a variant
// of each kernel, compiled for its own instruction set into one LLVM module,
// and NAME / NAME_argv become dispatchers built for the baseline x86-64 that
// read cpuid once and call the first variant the CPU can run, or return
// kErrorMissingCpuFeatures. So no kernel executes an instruction the CPU
// lacks, a single `host` target included (docs/targets.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Function;
class IRBuilderBase;
class LLVMContext;
class Module;
} // namespace llvm

namespace attnc::halide_backend {

/// The project's standard x86-64 list for `--target=portable`, best first.
extern const char *const kPortableTargets;

/// Parses `--target`: `host`, a Halide target string, `portable`, or a
/// comma-separated list of those. Lists must share architecture, bits and OS.
/// Adds no_runtime to every target unless `withRuntime`. Throws
/// CommandLineError naming the bad entry.
std::vector<Halide::Target> parseTargets(const std::string &text, bool withRuntime);

/// Whether bf16 kernels form their products with vdpbf16ps unless told
/// (EmitOptions::bf16Products): yes, except for a `--target` naming the host
/// when the host is an Intel core. Zen 5 runs vdpbf16ps at the FLOP rate of
/// two f32 FMAs, the Sapphire and Granite Rapids cores measured at half of it
/// (docs/benchmarks.md); an explicit target string names instructions, not a
/// core, and gets them.
bool bf16ProductsByDefault(const std::string &targetText);

/// Whether decode leaves reading K and V to the core's prefetchers
/// (DecodeRows::HardwarePrefetch): for a `--target` naming the host when the
/// host is an AMD core; elsewhere it prefetches them in software. Zen 5's
/// prefetchers follow decode's row streams, and the prefetch instructions
/// made a GQA decode 1.25x slower there (all but V's row of each key, which
/// the Q.K^T loop asks for: K and V then stream at once, 1.1x faster); on the
/// Intel Xeon of 2026-11-27 they made it 1.3x faster (docs/benchmarks.md).
/// Paged caches keep them everywhere.
bool decodeRowsByHardwareByDefault(const std::string &targetText);

/// Whether `targets` are compiled as dispatched variants (x86-64 only).
bool usesDispatch(const std::vector<Halide::Target> &targets);

/// The CPU features (abi/CpuFeatures.h names) that code compiled for
/// `target` may execute; empty for the baseline x86-64 and other architectures.
std::vector<std::string> requiredCpuFeatures(const Halide::Target &target);

/// One variant of every kernel: the LLVM module Halide made for `target`
/// (compiled without a runtime).
struct Variant {
  Halide::Target target;
  std::unique_ptr<llvm::Module> module;
};

/// Links the variants into `base` (a module for the baseline target, holding
/// the Halide runtime or nothing), renaming each kernel's entry points per
/// variant and adding the dispatchers NAME and NAME_argv, the variants'
/// NAME_metadata (the first variant's) and `NAME_attnc_targets`: one line per
/// variant, "<target string> <feature>,<feature>,..." ("-" for none).
void linkVariants(llvm::Module &base, std::vector<Variant> variants,
                  const std::vector<std::string> &kernelNames);

/// One line of `NAME_attnc_targets`: "<target string> <feature>,...\n".
std::string describeTarget(const Halide::Target &target);

/// Adds `NAME_attnc_targets` = `table` for every kernel.
void addTargetsTable(llvm::Module &module, const std::vector<std::string> &kernelNames,
                     const std::string &table);

/// Gives every function definition of `module` without explicit target
/// attributes those of the baseline x86-64, so code outside the variants (the
/// dispatchers, NAME_run, the runtime) runs on any x86-64 CPU.
void pinBaselineTarget(llvm::Module &module);

/// `target` with every x86 instruction-set feature removed: the target of the
/// Halide runtime and of the dispatch code.
Halide::Target baselineOf(const Halide::Target &target);

/// At `b`'s insertion point in dispatcher `fn`: `return callee(fn's arguments)`.
/// Each variant came from its own Halide module, so its buffer struct may be
/// another (isomorphic) named type: pointers are cast.
void returnCallWithArguments(llvm::IRBuilderBase &b, llvm::Function *fn, llvm::Function *callee);

} // namespace attnc::halide_backend
