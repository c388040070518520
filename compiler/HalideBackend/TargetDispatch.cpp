//===- TargetDispatch.cpp - Kernel variants per target, picked at run time ===//
//
// Each variant's functions get explicit "target-cpu"/"target-features"
// attributes (Halide states them only as module flags), so one LLVM module
// can hold code for several instruction sets; everything else is pinned to
// the baseline x86-64. The dispatcher reads cpuid once per process (cached
// in a hidden global), compares it with each variant's feature mask, and
// calls the first that fits: one load and one compare per call.
//
//===----------------------------------------------------------------------===//
#include "compiler/HalideBackend/TargetDispatch.h"
#include "compiler/HalideBackend/EmitKernel.h"

#include "abi/CpuFeatures.h"

#include <llvm/ADT/Triple.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>

#include <algorithm>
#include <set>

namespace attnc::halide_backend {

using Halide::Target;

const char *const kPortableTargets =
    "x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake,"
    "x86-64-linux-sse41-avx-f16c-fma-avx2,"
    "x86-64-linux-sse41";

namespace {

/// The x86 instruction-set features of Halide's Target, weakest first.
const Target::Feature kIsaFeatures[] = {
    Target::SSE41,  Target::AVX,        Target::F16C,           Target::FMA,
    Target::FMA4,   Target::AVX2,       Target::AVX512,         Target::AVX512_KNL,
    Target::AVX512_Skylake, Target::AVX512_Cannonlake, Target::AVX512_SapphireRapids};

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// The comma-separated items of `list`, trimmed ("" gives one empty item).
std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> items;
  for (size_t pos = 0; pos <= list.size();) {
    size_t comma = std::min(list.find(',', pos), list.size());
    items.push_back(trim(list.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return items;
}

/// The entries of a `--target` value; an empty one means the host.
std::vector<std::string> targetEntries(const std::string &text) {
  return splitList(text.empty() ? "host" : text);
}

Target parseOne(const std::string &text) {
  if (text == "host")
    return Halide::get_host_target();
  if (!Target::validate_target_string(text))
    throw CommandLineError("invalid target '" + text +
                           "': expected a Halide target string such as 'host', "
                           "'x86-64-linux-avx2' or 'arm-64-linux', 'portable', or a "
                           "comma-separated list of them");
  return Target(text);
}

std::string moduleFlag(const llvm::Module &module, const char *key) {
  if (auto *md = llvm::dyn_cast_or_null<llvm::MDString>(module.getModuleFlag(key)))
    return md->getString().str();
  return "";
}

/// Removes the module flags Halide uses to make its target machine; each
/// variant carries them as function attributes instead, and differing flags
/// would make the linker complain.
void dropTargetFlags(llvm::Module &module) {
  llvm::NamedMDNode *flags = module.getModuleFlagsMetadata();
  if (!flags)
    return;
  std::vector<llvm::MDNode *> keep;
  for (llvm::MDNode *flag : flags->operands()) {
    auto *key = flag->getNumOperands() > 1 ? llvm::dyn_cast<llvm::MDString>(flag->getOperand(1))
                                           : nullptr;
    if (!key || (key->getString() != "halide_mcpu" && key->getString() != "halide_mattrs"))
      keep.push_back(flag);
  }
  flags->clearOperands();
  for (llvm::MDNode *flag : keep)
    flags->addOperand(flag);
}

/// Halide 14 names LLVM's "sapphirerapids" CPU for AVX512_SapphireRapids,
/// which its host detection also picks for AMD's Zen 4 and Zen 5 (they have
/// AVX512-BF16). Neither has AVX512-FP16 or AMX, and LLVM uses FP16's vmovw
/// for plain 16-bit moves: SIGILL there. Zen 4 has no AVX-VNNI either (only
/// AVX512-VNNI), and LLVM wrote int16 dot products with the VEX form of
/// vpdpwssd: SIGILL in a backward additive kernel. So a variant may use only
/// what requiredCpuFeatures makes the dispatcher check.
std::string featuresWithoutUnchecked(const std::string &mcpu, const std::string &mattrs) {
  if (mcpu != "sapphirerapids")
    return mattrs;
  static const std::vector<std::string> unchecked = {"avx512fp16", "avxvnni", "amx-tile",
                                                     "amx-int8", "amx-bf16"};
  auto isUnchecked = [](const std::string &feature) {
    return std::find(unchecked.begin(), unchecked.end(), feature.substr(1)) != unchecked.end();
  };
  std::string out;
  for (const std::string &feature : splitList(mattrs))
    if (!feature.empty() && !(feature[0] == '+' && isUnchecked(feature)))
      out += feature + ",";
  for (size_t i = 0; i < unchecked.size(); ++i)
    out += (i ? ",-" : "-") + unchecked[i];
  return out;
}

/// Renames NAME, NAME_argv (and NAME_metadata unless `keepMetadata`) to
/// NAME<suffix>..., and makes every other definition local, so variants of
/// the same kernel can share a module.
void prepareVariant(llvm::Module &module, const std::vector<std::string> &names,
                    const std::string &suffix, bool keepMetadata) {
  std::string mcpu = moduleFlag(module, "halide_mcpu");
  std::string mattrs = featuresWithoutUnchecked(mcpu, moduleFlag(module, "halide_mattrs"));
  std::set<llvm::GlobalValue *> entries;
  for (const std::string &name : names) {
    for (const char *part : {"", "_argv", "_metadata"}) {
      llvm::Function *f = module.getFunction(name + part);
      if (!f)
        throw BackendError("internal error: variant lacks '" + name + part + "'");
      entries.insert(f);
      if (std::string(part) != "_metadata" || !keepMetadata) {
        f->setName(name + suffix + part);
        f->setVisibility(llvm::GlobalValue::HiddenVisibility);
      }
    }
  }
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    if (!f.hasFnAttribute("target-cpu"))
      f.addFnAttr("target-cpu", mcpu);
    if (!f.hasFnAttribute("target-features"))
      f.addFnAttr("target-features", mattrs);
    if (!entries.count(&f) && !f.hasLocalLinkage()) {
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
      f.setComdat(nullptr);
    }
  }
  for (llvm::GlobalVariable &g : module.globals())
    if (!g.isDeclaration() && g.hasExternalLinkage()) {
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
      g.setComdat(nullptr);
    }
  dropTargetFlags(module);
}

/// i64 attnc_cpu_features_v1(): bit r set when row r of x86CpuFeatures() is
/// usable (cpuid bit and OS-saved state); bit 63 marks the cached value.
llvm::Function *cpuFeaturesFunction(llvm::Module &module) {
  const char *name = "attnc_cpu_features_v1";
  if (llvm::Function *f = module.getFunction(name))
    return f;
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx), *i64 = llvm::Type::getInt64Ty(ctx);
  auto *fn = llvm::Function::Create(llvm::FunctionType::get(i64, false),
                                    llvm::GlobalValue::LinkOnceODRLinkage, name, module);
  fn->setVisibility(llvm::GlobalValue::HiddenVisibility);
  auto *cache = new llvm::GlobalVariable(module, i64, false, llvm::GlobalValue::LinkOnceODRLinkage,
                                         llvm::ConstantInt::get(i64, 0),
                                         std::string(name) + "_cache");
  cache->setVisibility(llvm::GlobalValue::HiddenVisibility);
  // One copy per linked program where the format has COMDAT groups (ELF);
  // Mach-O merges linkonce definitions without them.
  if (llvm::Triple(module.getTargetTriple()).supportsCOMDAT()) {
    fn->setComdat(module.getOrInsertComdat(name));
    cache->setComdat(module.getOrInsertComdat(cache->getName()));
  }

  llvm::BasicBlock *entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  llvm::BasicBlock *compute = llvm::BasicBlock::Create(ctx, "compute", fn);
  llvm::BasicBlock *readXcr0 = llvm::BasicBlock::Create(ctx, "xgetbv", fn);
  llvm::BasicBlock *join = llvm::BasicBlock::Create(ctx, "join", fn);
  llvm::BasicBlock *cached = llvm::BasicBlock::Create(ctx, "cached", fn);
  llvm::IRBuilder<> b(entry);
  llvm::LoadInst *seen = b.CreateLoad(i64, cache, "seen");
  seen->setAtomic(llvm::AtomicOrdering::Monotonic);
  seen->setAlignment(llvm::Align(8));
  b.CreateCondBr(b.CreateICmpNE(seen, llvm::ConstantInt::get(i64, 0)), cached, compute);
  b.SetInsertPoint(cached);
  b.CreateRet(seen);

  b.SetInsertPoint(compute);
  llvm::StructType *regsT = llvm::StructType::get(ctx, {i32, i32, i32, i32});
  auto *cpuidAsm = llvm::InlineAsm::get(
      llvm::FunctionType::get(regsT, {i32, i32}, false), "cpuid",
      "={ax},={bx},={cx},={dx},{ax},{cx},~{dirflag},~{fpsr},~{flags}", true);
  auto cpuid = [&](uint32_t leaf, uint32_t sub) {
    return b.CreateCall(cpuidAsm, {b.getInt32(leaf), b.getInt32(sub)});
  };
  llvm::Value *maxLeaf = b.CreateExtractValue(cpuid(0, 0), 0);
  llvm::Value *maxExt = b.CreateExtractValue(cpuid(0x80000000u, 0), 0);
  llvm::Value *leaf1 = cpuid(1, 0), *leaf7 = cpuid(7, 0), *leaf71 = cpuid(7, 1);
  llvm::Value *ext1 = cpuid(0x80000001u, 0);
  // A leaf above the CPU's maximum returns another leaf's data: read as 0.
  llvm::Value *has7 = b.CreateICmpUGE(maxLeaf, b.getInt32(7));
  llvm::Value *has71 =
      b.CreateAnd(has7, b.CreateICmpUGE(b.CreateExtractValue(leaf7, 0), b.getInt32(1)));
  llvm::Value *hasExt1 = b.CreateICmpUGE(maxExt, b.getInt32(0x80000001u));
  llvm::Value *ecx1 = b.CreateExtractValue(leaf1, 2);
  llvm::Value *osxsave = b.CreateICmpNE(b.CreateAnd(ecx1, b.getInt32(1u << 27)), b.getInt32(0));
  b.CreateCondBr(osxsave, readXcr0, join);

  b.SetInsertPoint(readXcr0);
  auto *xgetbvAsm = llvm::InlineAsm::get(
      llvm::FunctionType::get(llvm::StructType::get(ctx, {i32, i32}), {i32}, false), "xgetbv",
      "={ax},={dx},{cx},~{dirflag},~{fpsr},~{flags}", true);
  llvm::Value *xcr0Low = b.CreateExtractValue(b.CreateCall(xgetbvAsm, {b.getInt32(0)}), 0);
  b.CreateBr(join);

  b.SetInsertPoint(join);
  llvm::PHINode *xcr0 = b.CreatePHI(i32, 2, "xcr0");
  xcr0->addIncoming(b.getInt32(0), compute);
  xcr0->addIncoming(xcr0Low, readXcr0);
  llvm::Value *mask = llvm::ConstantInt::get(i64, uint64_t(1) << 63);
  const std::vector<CpuFeature> &rows = x86CpuFeatures();
  for (size_t r = 0; r < rows.size(); ++r) {
    const CpuFeature &f = rows[r];
    llvm::Value *regs = f.leaf == 1 ? leaf1 : f.leaf == 0x80000001u ? ext1
                        : f.subleaf == 1 ? leaf71 : leaf7;
    llvm::Value *valid = f.leaf == 1 ? b.getTrue() : f.leaf == 0x80000001u ? hasExt1
                         : f.subleaf == 1 ? has71 : has7;
    llvm::Value *word = b.CreateSelect(valid, b.CreateExtractValue(regs, (unsigned)f.reg),
                                       b.getInt32(0));
    llvm::Value *ok = b.CreateICmpNE(b.CreateAnd(word, b.getInt32(1u << f.bit)), b.getInt32(0));
    if (f.xcr0)
      ok = b.CreateAnd(ok, b.CreateICmpEQ(b.CreateAnd(xcr0, b.getInt32(f.xcr0)),
                                          b.getInt32(f.xcr0)));
    mask = b.CreateOr(mask, b.CreateShl(b.CreateZExt(ok, i64), r));
  }
  llvm::StoreInst *store = b.CreateStore(mask, cache);
  store->setAtomic(llvm::AtomicOrdering::Monotonic);
  store->setAlignment(llvm::Align(8));
  b.CreateRet(mask);
  return fn;
}

uint64_t featureMask(const std::vector<std::string> &features) {
  uint64_t mask = 0;
  for (const std::string &name : features) {
    int row = x86CpuFeatureIndex(name);
    // A feature this table does not know cannot be checked: never pick the variant.
    mask |= row < 0 ? (uint64_t(1) << 62) : (uint64_t(1) << row);
  }
  return mask;
}

/// NAME<part>(args) { f = cpu features; if fits(v0) return NAME__v0<part>(args); ...
///                    return kErrorMissingCpuFeatures; }
void addDispatcher(llvm::Module &module, const std::string &name, const std::string &part,
                   const std::vector<uint64_t> &masks) {
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Function *first = module.getFunction(name + "__v0" + part);
  auto *fn = llvm::Function::Create(first->getFunctionType(), llvm::GlobalValue::ExternalLinkage,
                                    name + part, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::Value *features = b.CreateCall(cpuFeaturesFunction(module), {});
  for (size_t v = 0; v < masks.size(); ++v) {
    llvm::Function *variant = module.getFunction(name + "__v" + std::to_string(v) + part);
    llvm::BasicBlock *call = llvm::BasicBlock::Create(ctx, "v" + std::to_string(v), fn);
    llvm::BasicBlock *next = llvm::BasicBlock::Create(ctx, "not_v" + std::to_string(v), fn);
    llvm::Value *need = b.getInt64(masks[v]);
    b.CreateCondBr(b.CreateICmpEQ(b.CreateAnd(features, need), need), call, next);
    b.SetInsertPoint(call);
    returnCallWithArguments(b, fn, variant);
    b.SetInsertPoint(next);
  }
  b.CreateRet(b.getInt32(kErrorMissingCpuFeatures));
}

} // namespace

std::vector<Target> parseTargets(const std::string &text, bool withRuntime) {
  std::vector<Target> targets;
  for (const std::string &item : targetEntries(text)) {
    if (item.empty())
      throw CommandLineError("invalid target list '" + text + "': an entry is empty");
    if (item == "portable") {
      for (Target t : parseTargets(kPortableTargets, true))
        targets.push_back(t);
      continue;
    }
    targets.push_back(parseOne(item));
  }
  const Target &first = targets.front();
  for (const Target &t : targets) {
    if (t.arch != first.arch || t.bits != first.bits || t.os != first.os)
      throw CommandLineError("invalid target list '" + text + "': '" + t.to_string() +
                             "' and '" + first.to_string() +
                             "' differ in architecture or OS; one object holds variants of "
                             "one architecture and OS");
    if (targets.size() > 1 && !(t.arch == Target::X86 && t.bits == 64))
      throw CommandLineError("invalid target list '" + text +
                             "': a list of targets (run-time dispatch) is for x86-64 only");
  }
  if (!withRuntime)
    for (Target &t : targets)
      t = t.with_feature(Target::NoRuntime);
  return targets;
}

namespace {
enum class HostVendor { Intel, Amd };

/// Whether `targetText` names the host and the host is an x86 core of `vendor`.
bool namesHostOf(const std::string &targetText, HostVendor vendor) {
  std::vector<std::string> items = targetEntries(targetText);
  if (std::find(items.begin(), items.end(), "host") == items.end())
    return false;
#if defined(__x86_64__) || defined(__i386__)
  return vendor == HostVendor::Intel ? __builtin_cpu_is("intel") : __builtin_cpu_is("amd");
#else
  (void)vendor;
  return false;
#endif
}
} // namespace

bool bf16ProductsByDefault(const std::string &targetText) {
  return !namesHostOf(targetText, HostVendor::Intel);
}

bool decodeRowsByHardwareByDefault(const std::string &targetText) {
  return namesHostOf(targetText, HostVendor::Amd);
}

bool usesDispatch(const std::vector<Target> &targets) {
  return !targets.empty() && targets[0].arch == Target::X86 && targets[0].bits == 64;
}

std::vector<std::string> requiredCpuFeatures(const Target &t) {
  if (t.arch != Target::X86)
    return {};
  std::vector<std::string> out;
  auto add = [&](std::initializer_list<const char *> names) {
    for (const char *n : names)
      if (std::find(out.begin(), out.end(), n) == out.end())
        out.push_back(n);
  };
  // Halide picks the LLVM CPU from the strongest feature (penryn, corei7-avx,
  // haswell, skylake-avx512, cannonlake, sapphirerapids), and LLVM may use
  // anything that CPU has: each level requires the levels below it.
  bool avx512 = t.has_feature(Target::AVX512) || t.has_feature(Target::AVX512_KNL) ||
                t.has_feature(Target::AVX512_Skylake) ||
                t.has_feature(Target::AVX512_Cannonlake) ||
                t.has_feature(Target::AVX512_SapphireRapids);
  bool avx2 = avx512 || t.has_feature(Target::AVX2);
  bool avx = avx2 || t.has_feature(Target::AVX);
  if (avx || t.has_feature(Target::SSE41))
    add({"sse4.1"});
  if (avx)
    add({"sse4.2", "popcnt", "avx"});
  if (avx2)
    add({"avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe"});
  if (t.has_feature(Target::FMA))
    add({"fma"});
  if (t.has_feature(Target::F16C))
    add({"f16c"});
  if (t.has_feature(Target::FMA4))
    add({"fma4"});
  if (avx512)
    add({"avx512f", "avx512cd"});
  if (t.has_feature(Target::AVX512_KNL))
    add({"avx512er", "avx512pf"});
  if (t.has_feature(Target::AVX512_Skylake) || t.has_feature(Target::AVX512_Cannonlake) ||
      t.has_feature(Target::AVX512_SapphireRapids))
    add({"avx512vl", "avx512bw", "avx512dq"});
  if (t.has_feature(Target::AVX512_Cannonlake) || t.has_feature(Target::AVX512_SapphireRapids))
    add({"avx512ifma", "avx512vbmi"});
  if (t.has_feature(Target::AVX512_SapphireRapids))
    add({"avx512vnni", "avx512bf16"});
  return out;
}

Target baselineOf(const Target &target) {
  Target base = target;
  if (base.arch == Target::X86)
    for (Target::Feature f : kIsaFeatures)
      base = base.without_feature(f);
  return base;
}

void returnCallWithArguments(llvm::IRBuilderBase &b, llvm::Function *fn, llvm::Function *callee) {
  std::vector<llvm::Value *> args;
  for (llvm::Argument &a : fn->args())
    args.push_back(b.CreatePointerCast(&a, callee->getFunctionType()->getParamType(a.getArgNo())));
  b.CreateRet(b.CreateCall(callee->getFunctionType(), callee, args));
}

void linkVariants(llvm::Module &base, std::vector<Variant> variants,
                  const std::vector<std::string> &kernelNames) {
  std::vector<uint64_t> masks;
  std::string table;
  for (size_t v = 0; v < variants.size(); ++v) {
    masks.push_back(featureMask(requiredCpuFeatures(variants[v].target)));
    table += describeTarget(variants[v].target);
    prepareVariant(*variants[v].module, kernelNames, "__v" + std::to_string(v), v == 0);
    if (llvm::Linker::linkModules(base, std::move(variants[v].module)))
      throw BackendError("internal error: cannot link the variant for " +
                         variants[v].target.to_string());
  }
  for (const std::string &name : kernelNames) {
    addDispatcher(base, name, "", masks);
    addDispatcher(base, name, "_argv", masks);
  }
  addTargetsTable(base, kernelNames, table);
}

std::string describeTarget(const Target &target) {
  std::string list;
  for (const std::string &f : requiredCpuFeatures(target))
    list += (list.empty() ? "" : ",") + f;
  return target.without_feature(Target::NoRuntime).to_string() + " " +
         (list.empty() ? "-" : list) + "\n";
}

void addTargetsTable(llvm::Module &module, const std::vector<std::string> &kernelNames,
                     const std::string &table) {
  for (const std::string &name : kernelNames) {
    llvm::Constant *text = llvm::ConstantDataArray::getString(module.getContext(), table, true);
    new llvm::GlobalVariable(module, text->getType(), true, llvm::GlobalValue::ExternalLinkage,
                             text, name + "_attnc_targets");
  }
}

void pinBaselineTarget(llvm::Module &module) {
  for (llvm::Function &f : module) {
    if (f.isDeclaration() || f.hasFnAttribute("target-cpu"))
      continue;
    f.addFnAttr("target-cpu", "x86-64");
    f.addFnAttr("target-features", "+cx8,+fxsr,+mmx,+sse,+sse2,+x87");
  }
}

} // namespace attnc::halide_backend
