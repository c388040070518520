//===- EmitKernel.cpp - Artifacts from a file's kernels ------------------===//
//
// buildAlgorithm + applySchedule per kernel, Pipeline::compile_to_module
// (lowered without asserts, BufferChecks.h adds the buffer checks back),
// Halide::link_modules, one LLVM module (plus RunWrapper's additions), then
// the requested artifact: LLVM's object/assembly/IR writers, Halide's static
// library writer, `cc -shared` for shared libraries (compiler/Support runs
// it and owns temporary files and checked writes), Module::compile for the
// lowered statement, and our own header and Halide printers. Every Halide
// failure becomes a BackendError; failures of the machine (TMPDIR, disk, C
// compiler) stay EnvironmentErrors.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/EmitKernel.h"
#include "compiler/HalideBackend/AlignedStackScalars.h"
#include "compiler/HalideBackend/AttentionAlgorithm.h"
#include "compiler/HalideBackend/Bf16PairLoads.h"
#include "compiler/HalideBackend/BufferChecks.h"
#include "compiler/HalideBackend/DecodeDispatch.h"
#include "compiler/HalideBackend/HalfConversions.h"
#include "compiler/HalideBackend/HalideFixes/HalideFixes.h"
#include "compiler/HalideBackend/HalideText.h"
#include "compiler/HalideBackend/HalideWarnings.h"
#include "compiler/HalideBackend/HeaderWriter.h"
#include "compiler/HalideBackend/HeaviestTasksFirst.h"
#include "compiler/HalideBackend/OpaqueClampedIndices.h"
#include "compiler/HalideBackend/Prefetches.h"
#include "compiler/HalideBackend/RunWrapper.h"
#include "compiler/HalideBackend/Schedules.h"
#include "compiler/HalideBackend/SingleAddendSums.h"
#include "compiler/HalideBackend/TargetDispatch.h"
#include "compiler/HalideBackend/UnreadStores.h"
#include "compiler/Support/CodegenDeadline.h"
#include "compiler/Support/EnvironmentError.h"
#include "compiler/Support/OutputFiles.h"
#include "compiler/Support/StageTimes.h"
#include "compiler/Support/Subprocess.h"
#include "compiler/Support/TempFiles.h"

#include <iostream>

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace Halide;

namespace attnc::halide_backend {

// attnc::Expr is the frontend's AST node; here Expr means Halide's.
using Halide::Expr;

namespace {

bool isText(Artifact artifact) {
  switch (artifact) {
  case Artifact::Assembly:
  case Artifact::LLVMIR:
  case Artifact::Stmt:
  case Artifact::HalideText:
  case Artifact::Header:
    return true;
  default:
    return false;
  }
}

/// Checked writes (compiler/Support): a lost output is an error, not exit 0.
void writeOutput(const std::string &path, const std::string &data) {
  if (path == "-")
    writeStdout(data);
  else
    writeFile(path, data);
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

/// Fails early, before minutes of compiling, when `path` cannot be created:
/// its folder is missing or is not a folder, or `path` is a folder.
void checkWritable(const std::string &path) {
  if (path == "-")
    return;
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw CommandLineError("cannot write '" + path + "': it is a directory");
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return;
  std::string dir = slash == 0 ? "/" : path.substr(0, slash);
  if (stat(dir.c_str(), &st) != 0)
    throw CommandLineError("cannot write '" + path + "': the directory '" + dir +
                           "' does not exist");
  if (!S_ISDIR(st.st_mode))
    throw CommandLineError("cannot write '" + path + "': '" + dir + "' is not a directory");
}

struct CompiledKernels {
  std::vector<AlgorithmFuncs> funcs;
  std::vector<const AttentionConfig *> configs;
  Halide::Module module{"", Target()};
};

/// Halide 14 lowers an atomic reduction it cannot vectorize to serial loops
/// (it must prove the store's and the load's index equal; it failed for
/// block_pv of causal tiles with a run-time seq_q until
/// HalideFixes/VectorizeAtomics.cpp): a pair loop of the bf16 products left
/// in the lowered code would run one bf16 product at a time. Returns the
/// products to build again with instead, if so (a second whole lowering).
std::optional<Bf16Products> scalarBf16Fallback(const AlgorithmFuncs &funcs,
                                               const Halide::Module &module) {
  if (!funcs.bf16Products)
    return std::nullopt;
  struct PairLoops : Halide::Internal::IRVisitor {
    bool scores = false, values = false;
    using IRVisitor::visit;
    void visit(const Halide::Internal::For *loop) override {
      auto endsWith = [&](const std::string &suffix) {
        return loop->name.size() >= suffix.size() &&
               loop->name.compare(loop->name.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      scores = scores || endsWith(funcs_.rdPairs.x.name());
      values = values || (funcs_.rjPairs.defined() && endsWith(funcs_.rjPairs.x.name()));
      IRVisitor::visit(loop);
    }
    explicit PairLoops(const AlgorithmFuncs &funcs) : funcs_(funcs) {}
    const AlgorithmFuncs &funcs_;
  } loops(funcs);
  for (const Halide::Internal::LoweredFunc &fn : module.functions())
    fn.body.accept(&loops);
  if (loops.scores)
    return Bf16Products::None;
  if (loops.values)
    return Bf16Products::ScoresOnly;
  return std::nullopt;
}

/// The query tile's own stages and dimension, which must not split the loop
/// over tiles into copies of its key loop (HalideFixes/PartitionLoops.cpp).
/// Fixed sizes keep Halide's own partitioning: their tile loop splits at
/// most once, at a last partial tile, and the steady state of the tiles'
/// stages is a little faster (the window(256) row, 1-3%).
QueryTileStages::Names queryTileStages(const AlgorithmFuncs &f) {
  if (Halide::Internal::is_const(f.Lq) && Halide::Internal::is_const(f.Lk))
    return {};
  QueryTileStages::Names names{{}, f.qt.name(), {}};
  for (const Halide::Func &fn : {f.qs, f.qRow, f.qIn, f.qPairs, f.qHoist})
    if (fn.defined())
      names.tileProducers.push_back(fn.name());
  if (f.cacheLen.defined())
    names.keyLoop = f.state.name() + ".s1." + f.rk.name();
  return names;
}

/// The buffers of the softmax state's m, l and u (components 0, 1 and 3 of
/// the state and of the chunks' merge), which are read at a row's last value
/// column only (UnreadStores.h).
std::set<std::string> rowOnlyStateBuffers(const AlgorithmFuncs &f) {
  std::set<std::string> names;
  for (const Halide::Func &fn : {f.state, f.merged})
    for (const char *component : {".0", ".1", ".3"})
      names.insert(fn.name() + component);
  return names;
}

CompiledKernels compileKernels(const std::vector<AttentionConfig> &configs,
                               const EmitOptions &options, const Target &target,
                               bool lower) {
  if (configs.empty())
    throw BackendError("no kernel to compile");
  CompiledKernels result;
  std::set<std::string> names;
  std::vector<Halide::Module> modules;
  for (const AttentionConfig &config : configs) {
    if (!names.insert(config.name).second)
      throw BackendError("two kernels are named '" + config.name + "'");
    result.configs.push_back(&config);
    std::optional<AlgorithmFuncs> funcs;
    Bf16Products bf16 = options.bf16Products.value_or(bf16ProductsByDefault(options.target))
                            ? Bf16Products::ScoresAndValues
                            : Bf16Products::None;
    const DecodeRows decodeRows = decodeRowsByHardwareByDefault(options.target)
                                      ? DecodeRows::HardwarePrefetch
                                      : DecodeRows::SoftwarePrefetch;
    const Bf16Rows bf16Rows = options.schedule == SchedulePolicy::Tuned
                                  ? Bf16Rows::AsChannelPairs
                                  : Bf16Rows::InChannelOrder;
    for (;;) {
      {
        StageTimer timer("Halide algorithm, schedule");
        funcs.emplace(buildAlgorithm(config, target, bf16, decodeRows, bf16Rows));
        applySchedule(*funcs, config, options.schedule, target);
      }
      if (!lower)
        break;
      StageTimer timer("Halide lowering");
      Halide::Pipeline pipeline = funcs->pipeline();
      addRowPrefetches(pipeline, funcs->rowPrefetches);
      QueryTileStages tileStages(queryTileStages(*funcs));
      std::vector<std::string> warnings;
      std::optional<Halide::Module> lowered;
      {
        HalideWarningScope collect(warnings);
        std::vector<Halide::Argument> arguments = funcs->arguments();
        pipeline.add_custom_lowering_pass(
            newBufferChecksPass(bufferArguments(arguments, funcs->outputs),
                                target.maximum_buffer_size()));
        // evenOddLanes reads k and v, or the caches (rows of even width).
        if (funcs->evenOddLanes)
          pipeline.add_custom_lowering_pass(
              newBf16PairLoadsPass({"k", "v", "k_cache", "v_cache"}));
        if (funcs->qkSummedOnce)
          pipeline.add_custom_lowering_pass(newSingleAddendSumsPass(funcs->qk.name()));
        pipeline.add_custom_lowering_pass(newUnreadStoresPass(rowOnlyStateBuffers(*funcs)));
        pipeline.add_custom_lowering_pass(newAlignedStackScalarsPass());
        if (!funcs->heaviestTasksFirst.first.empty())
          pipeline.add_custom_lowering_pass(newHeaviestTasksFirstPass(
              funcs->heaviestTasksFirst.first, funcs->heaviestTasksFirst.second));
        lowered = pipeline.compile_to_module(arguments, config.name, loweringTarget(target));
      }
      Halide::Module module = retargeted(*lowered, target);
      for (const std::string &w : warnings)
        if (!isUnreachableBoundsAssertion(w))
          std::cerr << "attnc: warning: Halide, kernel '" << config.name << "': " << w << "\n";
      std::optional<Bf16Products> fallback = scalarBf16Fallback(*funcs, module);
      if (!fallback) {
        modules.push_back(module);
        break;
      }
      bf16 = *fallback;
    }
    result.funcs.push_back(std::move(*funcs));
  }
  if (lower) {
    StageTimer timer("Halide lowering");
    result.module = modules.size() == 1 ? modules[0] : link_modules(configs[0].name, modules);
  }
  return result;
}

/// attnc's own steps on a module Halide has optimised, before code generation.
void finishHalideModule(llvm::Module &module, const Target &target) {
  lowerHalfConversions(module, target);
  keepPrefetchesInL2(module);
  hideClampedIndicesFromLSR(module);
}

std::unique_ptr<llvm::Module> lowerToLLVM(CompiledKernels &kernels, llvm::LLVMContext &ctx) {
  StageTimer timer("LLVM IR, optimisation");
  std::unique_ptr<llvm::Module> module = compile_module_to_llvm_module(kernels.module, ctx);
  if (!module)
    throw BackendError("Halide produced no LLVM module");
  finishHalideModule(*module, kernels.module.target());
  addRunWrappers(*module, kernels.configs);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os))
    throw BackendError("internal error: the generated LLVM module is invalid: " + os.str());
  return module;
}

/// x86-64: one variant of every kernel per target, the runtime and the
/// dispatchers built for the baseline (TargetDispatch.h).
std::unique_ptr<llvm::Module> lowerWithDispatch(const std::vector<AttentionConfig> &configs,
                                                const EmitOptions &options,
                                                const std::vector<Target> &targets,
                                                llvm::LLVMContext &ctx) {
  std::vector<Variant> variants;
  // Each kernel, then the decode variants of cache kernels (DecodeDispatch.h).
  std::vector<AttentionConfig> withVariants = configs;
  for (AttentionConfig &variant : decodeVariants(configs))
    withVariants.push_back(std::move(variant));
  std::vector<const AttentionConfig *> compiled;
  for (const Target &target : targets) {
    CompiledKernels kernels =
        compileKernels(withVariants, options, target.with_feature(Target::NoRuntime), true);
    StageTimer timer("LLVM IR, optimisation");
    variants.push_back({target, compile_module_to_llvm_module(kernels.module, ctx)});
    if (!variants.back().module)
      throw BackendError("Halide produced no LLVM module for " + target.to_string());
    finishHalideModule(*variants.back().module, target);
    addDecodeDispatch(*variants.back().module, configs);
    compiled.assign(kernels.configs.begin(), kernels.configs.begin() + configs.size());
  }
  // An empty Halide module: the runtime (unless no_runtime) and the flags of
  // the baseline target, which the object writer's target machine reads.
  StageTimer timer("LLVM IR, optimisation");
  std::unique_ptr<llvm::Module> module =
      compile_module_to_llvm_module(Halide::Module("attnc_dispatch", baselineOf(targets[0])), ctx);
  std::vector<std::string> names;
  for (const AttentionConfig *config : compiled)
    names.push_back(config->name);
  linkVariants(*module, std::move(variants), names);
  addRunWrappers(*module, compiled);
  pinBaselineTarget(*module);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os))
    throw BackendError("internal error: the generated LLVM module is invalid: " + os.str());
  return module;
}

std::string objectCode(llvm::Module &module) {
  StageTimer timer("LLVM code generation");
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  CodegenDeadline deadline("code generation");
  compile_llvm_module_to_object(module, os);
  return std::string(buffer.data(), buffer.size());
}

/// Whether an object or static library takes attnc's prebuilt runtime object
/// (EmitOptions::runtimeObject) instead of compiling the runtime: when it is
/// for the target's baseline (the same features beside the ISA: not
/// `profile` or `debug`), and, for an object, a C compiler can merge it.
bool prebuiltRuntimeFits(const EmitOptions &options, Artifact artifact) {
  if (options.runtimeObject.empty() ||
      (artifact != Artifact::Object && artifact != Artifact::StaticLibrary))
    return false;
  Target baseline = baselineOf(parseTargets(options.target, true)[0]);
  if (baseline != baselineOf(parseTargets("host", true)[0]))
    return false;
  return artifact == Artifact::StaticLibrary || hasCCompiler();
}

void emit(const std::vector<AttentionConfig> &configs, const EmitOptions &options,
          Artifact artifact, const std::string &path) {
  if (path.empty())
    throw CommandLineError("no output path given");
  if (path == "-" && !isText(artifact))
    throw CommandLineError("a binary artifact cannot be written to standard output; use -o FILE");
  checkWritable(path);
  linkHalideFixes();
  // A shared library linked against the shared runtime carries none itself.
  bool linkSharedRuntime = artifact == Artifact::SharedLibrary && !options.sharedRuntime.empty();
  bool mergeRuntime = options.withRuntime && prebuiltRuntimeFits(options, artifact);
  std::vector<Target> targets =
      parseTargets(options.target, options.withRuntime && !linkSharedRuntime && !mergeRuntime);
  // The printed stages (Halide, statement) show the first target's kernel.
  Target target = targets[0];

  switch (artifact) {
  case Artifact::RuntimeObject: {
    // Built for the baseline ISA: kernels of every variant share it.
    StageTimer timer("Halide runtime");
    compile_standalone_runtime(path, baselineOf(target).without_feature(Target::NoRuntime));
    return;
  }
  case Artifact::Header: {
    std::vector<const AttentionConfig *> list;
    for (const AttentionConfig &c : configs)
      list.push_back(&c);
    if (list.empty())
      throw BackendError("no kernel to declare");
    StageTimer timer("header");
    writeOutput(path, writeHeader(list, path == "-" ? configs[0].name : baseName(path)));
    return;
  }
  case Artifact::HalideText: {
    CompiledKernels kernels = compileKernels(configs, options, target, false);
    std::string text;
    for (const AlgorithmFuncs &f : kernels.funcs)
      text += printHalide(f) + "\n";
    writeOutput(path, text);
    return;
  }
  case Artifact::Stmt: {
    CompiledKernels kernels = compileKernels(configs, options, target, true);
    // What Module::compile writes for OutputFileType::stmt, printed in memory:
    // its unchecked file write lost the text on a full disk.
    std::ostringstream stmt;
    stmt << kernels.module;
    writeOutput(path, stmt.str());
    return;
  }
  default:
    break;
  }

  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> module;
  if (usesDispatch(targets)) {
    module = lowerWithDispatch(configs, options, targets, ctx);
  } else {
    CompiledKernels kernels = compileKernels(configs, options, target, true);
    module = lowerToLLVM(kernels, ctx);
    std::vector<std::string> names;
    for (const AttentionConfig *config : kernels.configs)
      names.push_back(config->name);
    addTargetsTable(*module, names, describeTarget(target));
  }
  switch (artifact) {
  case Artifact::LLVMIR: {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, nullptr);
    writeOutput(path, os.str());
    return;
  }
  case Artifact::Assembly: {
    llvm::SmallVector<char, 0> buffer;
    llvm::raw_svector_ostream os(buffer);
    StageTimer timer("LLVM code generation");
    CodegenDeadline deadline("code generation");
    compile_llvm_module_to_assembly(*module, os);
    writeOutput(path, std::string(buffer.data(), buffer.size()));
    return;
  }
  case Artifact::Object: {
    if (!mergeRuntime) {
      writeOutput(path, objectCode(*module));
      return;
    }
    TempFile object(".o");
    writeOutput(object.path(), objectCode(*module));
    StageTimer timer("link");
    runCCompiler({"-r", "-nostdlib", "-o", path, object.path(), options.runtimeObject},
                 "merge the Halide runtime into '" + path + "'");
    return;
  }
  case Artifact::StaticLibrary: {
    TempFile object(".o");
    writeOutput(object.path(), objectCode(*module));
    std::remove(path.c_str()); // create_static_library appends otherwise
    StageTimer timer("link");
    std::vector<std::string> members = {object.path()};
    // Halide takes the members from one folder: the runtime is copied there.
    std::optional<TempFile> runtime;
    if (mergeRuntime) {
      runtime.emplace(".o");
      std::error_code error;
      std::filesystem::copy_file(options.runtimeObject, runtime->path(),
                                 std::filesystem::copy_options::overwrite_existing, error);
      if (error)
        throw EnvironmentError("cannot copy the Halide runtime object '" + options.runtimeObject +
                               "' to '" + runtime->path() + "': " + error.message());
      members.push_back(runtime->path());
    }
    create_static_library(members, target, path);
    return;
  }
  case Artifact::SharedLibrary: {
    TempFile object(".o");
    writeOutput(object.path(), objectCode(*module));
    std::vector<std::string> command = {"-shared", "-o", path, object.path()};
    if (linkSharedRuntime) {
      // DT_NEEDED on the runtime's soname, found through the RUNPATH of its
      // folder; a process that already holds the runtime reuses that copy.
      const std::string &rt = options.sharedRuntime;
      size_t slash = rt.find_last_of('/');
      std::string dir = slash == std::string::npos ? "." : rt.substr(0, slash);
      command.push_back(rt);
      command.push_back("-Wl,-rpath," + dir);
    }
    for (const char *lib : {"-lpthread", "-ldl", "-lm"})
      command.push_back(lib);
    StageTimer timer("link");
    runCCompiler(command, "link the shared library '" + path + "'");
    return;
  }
  default:
    throw BackendError("internal error: unhandled artifact kind");
  }
}

/// "a" or "a, b": the kernels of one artifact, for messages.
std::string kernelNames(const std::vector<AttentionConfig> &configs) {
  std::string names;
  for (const AttentionConfig &config : configs)
    names += (names.empty() ? "" : ", ") + config.name;
  return names;
}

} // namespace

Target parseTarget(const std::string &text, bool withRuntime) {
  return parseTargets(text, withRuntime)[0];
}

void emitArtifact(const std::vector<AttentionConfig> &configs, const EmitOptions &options,
                  Artifact artifact, const std::string &path) {
  try {
    emit(configs, options, artifact, path);
  } catch (const BackendError &) {
    throw;
  } catch (const EnvironmentError &) {
    throw; // the machine's fault (TMPDIR, disk, C compiler): exit 2, not a bug
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const Halide::CompileError &e) {
    // The autoscheduler's choices are its own (window(256) at a fixed
    // N=8192: a buffer past Halide's 2 GiB, whose size wraps negative).
    if (options.schedule == SchedulePolicy::Auto)
      refuseAutoSchedule(kernelNames(configs), "chose a schedule Halide cannot compile",
                         e.what());
    throw BackendError(std::string("Halide compile error: ") + e.what());
  } catch (const Halide::RuntimeError &e) {
    throw BackendError(std::string("Halide runtime error: ") + e.what());
  } catch (const Halide::InternalError &e) {
    throw BackendError(std::string("Halide internal error: ") + e.what());
  } catch (const Halide::Error &e) {
    throw BackendError(std::string("Halide error: ") + e.what());
  } catch (const std::exception &e) {
    throw BackendError(std::string("back end failure: ") + e.what());
  }
}

} // namespace attnc::halide_backend
