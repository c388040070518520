//===- BufferChecks.cpp - Halide's buffer checks, added after lowering ----===//
//
// See BufferChecks.h. The checks are those of Halide 14's AddImageChecks.cpp
// (the same error functions, names and order of arguments), built from the
// buffer fields directly: the statement's own unpacked fields (`q.extent.1`)
// exist only where lowering used them.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/BufferChecks.h"

#include <sstream>

using namespace Halide;
using namespace Halide::Internal;

namespace attnc::halide_backend {

namespace {

Expr errorCall(const std::string &function, const std::vector<Expr> &args) {
  return Call::make(Int(32), function, args, Call::Extern);
}

/// Halide's message for a constraint check `field == constrained`.
Expr constraintMessage(const Expr &condition) {
  std::ostringstream text;
  const EQ *eq = condition.as<EQ>();
  const Variable *field = eq ? eq->a.as<Variable>() : nullptr;
  if (field && eq->a.type() == Int(32) && eq->b.type() == Int(32)) {
    text << eq->b;
    return errorCall("halide_error_constraint_violated",
                     {field->name, eq->a, text.str(), eq->b});
  }
  text << condition;
  return errorCall("halide_error_requirement_failed",
                   {Expr(text.str()),
                    Expr("a buffer argument does not have the shape the kernel needs")});
}

/// The checks of the buffer arguments, in the order they run. The fields
/// they read are bound to names first, so every condition is pure and
/// Halide's code generator tests a run of them at once (one branch for up to
/// 63, not one each: the calls in the conditions cost 10% more LLVM time).
Stmt checksOf(const std::vector<BufferArgument> &buffers, int64_t maximumBufferSize) {
  std::vector<std::pair<std::string, Expr>> fields;
  std::vector<Stmt> checks;
  auto check = [&](const Expr &condition, const Expr &message) {
    checks.push_back(AssertStmt::make(condition, message));
  };
  for (const BufferArgument &buffer : buffers) {
    const std::string errorName =
        std::string(buffer.isOutput ? "Output" : "Input") + " buffer " + buffer.name;
    Expr handle = Variable::make(type_of<halide_buffer_t *>(), buffer.name + ".buffer");
    auto field = [&](Type type, const char *accessor, const std::string &what,
                     std::vector<Expr> more = {}) {
      std::vector<Expr> args{handle};
      args.insert(args.end(), more.begin(), more.end());
      std::string name = buffer.name + ".checked." + what;
      fields.emplace_back(name, Call::make(type, accessor, args, Call::Extern));
      return Variable::make(type, name);
    };

    Expr type = field(UInt(32), Call::buffer_get_type, "type");
    Expr expectedType = make_const(UInt(32), ((halide_type_t)buffer.type).as_u32());
    check(type == expectedType,
          errorCall("halide_error_bad_type", {errorName, type, expectedType}));
    Expr rank = field(Int(32), Call::buffer_get_dimensions, "dimensions");
    check(rank == buffer.dimensions,
          errorCall("halide_error_bad_dimensions", {errorName, rank, buffer.dimensions}));
    Expr host = field(type_of<void *>(), Call::buffer_get_host, "host");
    check(host != make_zero(host.type()), errorCall("halide_error_host_is_null", {errorName}));
    Expr deviceDirty = field(Bool(), Call::buffer_get_device_dirty, "device_dirty");
    check(!deviceDirty,
          errorCall("halide_error_device_dirty_with_no_device_support", {errorName}));

    Expr maxSize = make_const(UInt(64), maximumBufferSize);
    Expr totalExtent;
    for (int j = 0; j < buffer.dimensions; ++j) {
      std::string dim = std::to_string(j);
      // Every argument starts at 0; constraints say so for all but a KV
      // cache's channel axis (AttentionAlgorithm.cpp, constrainDims).
      Expr min = field(Int(32), Call::buffer_get_min, "min." + dim, {j});
      check(min == 0, errorCall("halide_error_constraint_violated",
                                {buffer.name + ".min." + dim, min, Expr("0"), 0}));
      Expr extent = field(Int(32), Call::buffer_get_extent, "extent." + dim, {j});
      Expr stride = field(Int(32), Call::buffer_get_stride, "stride." + dim, {j});
      check(extent >= 0,
            errorCall("halide_error_buffer_extents_negative", {errorName, j, extent}));
      Expr size = abs(cast<int64_t>(extent) * stride);
      check(size <= maxSize,
            errorCall("halide_error_buffer_allocation_too_large", {buffer.name, size, maxSize}));
      if (j == 0) {
        totalExtent = cast<int64_t>(extent);
        continue;
      }
      totalExtent = extent * totalExtent;
      Expr maxExtent = cast<int64_t>(maxSize);
      check(totalExtent <= maxExtent, errorCall("halide_error_buffer_extents_too_large",
                                                {buffer.name, totalExtent, maxExtent}));
    }
  }
  if (checks.empty())
    return Stmt();
  Stmt all = Block::make(checks);
  for (auto it = fields.rbegin(); it != fields.rend(); ++it)
    all = LetStmt::make(it->first, it->second, all);
  return all;
}

/// Gives each message-less check (a constraint, under no_asserts) Halide's
/// message, and puts the buffers' checks before the first one.
class NameConstraints : public IRMutator {
public:
  explicit NameConstraints(Stmt bufferChecks) : bufferChecks(std::move(bufferChecks)) {}
  bool added = false;

private:
  using IRMutator::visit;
  Stmt bufferChecks;

  Stmt visit(const AssertStmt *op) override {
    if (!is_const_zero(op->message))
      return op;
    Stmt named = AssertStmt::make(op->condition, constraintMessage(op->condition));
    if (added)
      return named;
    added = true;
    return Block::make(bufferChecks, named);
  }
};

class BufferChecksPass : public IRMutator {
public:
  BufferChecksPass(std::vector<BufferArgument> buffers, int64_t maximumBufferSize)
      : buffers(std::move(buffers)), maximumBufferSize(maximumBufferSize) {}

  Stmt mutate(const Stmt &s) override {
    Stmt all = checksOf(buffers, maximumBufferSize);
    if (!all.defined())
      return s;
    NameConstraints namer(all);
    Stmt result = namer.mutate(s);
    // Every kernel constrains its arguments, so this is a fallback only.
    return namer.added ? result : Block::make(all, result);
  }

private:
  std::vector<BufferArgument> buffers;
  int64_t maximumBufferSize;
};

} // namespace

std::vector<BufferArgument> bufferArguments(const std::vector<Argument> &inputs,
                                            const std::vector<Func> &outputs) {
  std::vector<BufferArgument> buffers;
  for (const Argument &arg : inputs)
    if (arg.is_buffer())
      buffers.push_back({arg.name, arg.type, arg.dimensions, false});
  for (const Func &out : outputs)
    for (const OutputImageParam &buf : out.output_buffers())
      buffers.push_back({buf.name(), buf.type(), buf.dimensions(), true});
  return buffers;
}

Target loweringTarget(const Target &target) {
  return target.with_feature(Target::NoAsserts).with_feature(Target::NoBoundsQuery);
}

IRMutator *newBufferChecksPass(std::vector<BufferArgument> buffers, int64_t maximumBufferSize) {
  return new BufferChecksPass(std::move(buffers), maximumBufferSize);
}

Module retargeted(const Module &lowered, const Target &target) {
  Module module(lowered.name(), target);
  for (const Buffer<void> &buffer : lowered.buffers())
    module.append(buffer);
  for (const LoweredFunc &function : lowered.functions())
    module.append(function);
  for (const Module &submodule : lowered.submodules())
    module.append(submodule);
  for (const ExternalCode &code : lowered.external_code())
    module.append(code);
  module.set_any_strict_float(lowered.any_strict_float());
  return module;
}

} // namespace attnc::halide_backend
