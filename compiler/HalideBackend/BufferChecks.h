//===- BufferChecks.h - Halide's buffer checks, added after lowering -*- C++ -*-===//
//
// Halide 14 lowers a pipeline's checks of its buffer arguments with the rest
// of the code: every lowering pass then carries them, and the accessed-region
// asserts tie each buffer to the bounds inferred for it. Lowered without them
// (the no_asserts feature), a kernel compiled in 18-25% less CPU time (the
// spec example `all_bf16`: 1.47 -> 1.20 s). So attnc lowers with no_asserts
// and adds the checks back afterwards, as a custom lowering pass, with
// Halide's own error functions and messages: type, rank, host pointer,
// device state, every min at 0, negative extents, 32-bit size overflow, and
// every constraint (dense strides, fixed and shared sizes), which no_asserts
// leaves in place without a message. The module is then generated for the
// target with asserts, so require() checks (cu_seqlens, cache capacity)
// keep theirs.
//
// Lowered with no_bounds_query too: Halide's bounds-query mode (a buffer
// with neither host nor device memory gets the shape the pipeline needs
// written into it, and the call returns 0 having computed nothing) is no
// part of attnc's calling convention, whose shapes the header states. A
// null host pointer is an error ("The host pointer of Input buffer q is
// null, ..."), not a silent success; each entry point lost the branch that
// rewrote every buffer (a seventh of a cache kernel's entry function).
//
// Not added back: Halide's check of the region bounds inference asks of
// each input. It is implied: every dimension of every argument is either
// pinned by a constraint (checked) or defines a size, and the algorithm
// reads each tensor at indices clamped to, or bounded by, those sizes
// (AttentionAlgorithm.cpp). A caller's wrong shape is a constraint error:
// "Constraint violated: k.extent.1 (2) == q.extent.1 (3)".
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

namespace attnc::halide_backend {

/// A buffer argument of a kernel's entry point, as Halide checks it.
struct BufferArgument {
  std::string name;
  Halide::Type type;
  int dimensions = 0;
  bool isOutput = false;
};

/// The buffer arguments of a pipeline: its image parameters, then its
/// outputs' buffers.
std::vector<BufferArgument> bufferArguments(const std::vector<Halide::Argument> &inputs,
                                            const std::vector<Halide::Func> &outputs);

/// The target to lower with: no asserts (the checks come from the pass).
Halide::Target loweringTarget(const Halide::Target &target);

/// A custom lowering pass (Pipeline::add_custom_lowering_pass) that adds the
/// checks of `buffers` before the first constraint check of the lowered
/// statement, and gives every constraint check Halide's message.
/// `maximumBufferSize` is the target's (Target::maximum_buffer_size()).
Halide::Internal::IRMutator *newBufferChecksPass(std::vector<BufferArgument> buffers,
                                                 int64_t maximumBufferSize);

/// The same lowered module, to be generated for `target` (with asserts).
Halide::Module retargeted(const Halide::Module &lowered, const Halide::Target &target);

} // namespace attnc::halide_backend
