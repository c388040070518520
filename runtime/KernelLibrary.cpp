//===- KernelLibrary.cpp - A loaded attnc kernel library ------------------===//
//
// Loading trusts nothing the library says: the kernel list is bounded, names
// must be C identifiers, the signature must decode and agree with Halide's
// metadata argument by argument. Running maps each logical shape (outermost
// first) onto Halide's dimension order (innermost first) with dense strides;
// ArgCheck has already proved that every extent and stride fits in int32.
//
//===----------------------------------------------------------------------===//
#include "runtime/KernelLibrary.h"

#include "runtime/ElfCheck.h"

#include "abi/CpuFeatures.h"

#include "runtime/HalideHooks.h"

#include <HalideRuntime.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace attnc::runtime {

/// "kernel 'k' cannot run on this CPU: it lacks F1, F2 needed by ..." for the
/// variant that misses the fewest features (docs/targets.md).
static std::string missingFeaturesMessage(const std::string &kernel,
                                          const std::string &variants) {
  std::string best, bestTarget;
  size_t bestCount = SIZE_MAX, count = 0, pos = 0;
  std::string targets;
  while (pos < variants.size()) {
    size_t end = variants.find('\n', pos);
    if (end == std::string::npos)
      end = variants.size();
    std::string line = variants.substr(pos, end - pos);
    pos = end + 1;
    size_t space = line.find(' ');
    std::string target = line.substr(0, space);
    std::vector<std::string> features;
    if (space != std::string::npos) {
      std::string list = line.substr(space + 1);
      for (size_t p = 0; p < list.size() && list != "-";) {
        size_t comma = list.find(',', p);
        if (comma == std::string::npos)
          comma = list.size();
        features.push_back(list.substr(p, comma - p));
        p = comma + 1;
      }
    }
    std::vector<std::string> missing = missingCpuFeatures(features);
    targets += (targets.empty() ? "" : ", ") + target;
    ++count;
    if (missing.size() < bestCount) {
      bestCount = missing.size();
      bestTarget = target;
      best.clear();
      for (const std::string &m : missing)
        best += (best.empty() ? "" : ", ") + m;
    }
  }
  if (count == 0)
    return "kernel '" + kernel + "' cannot run on this CPU: it lacks instruction-set "
           "features the kernel was compiled for; rebuild with --target=portable or a "
           "target this CPU has";
  return "kernel '" + kernel + "' cannot run on this CPU: it lacks " + best +
         (count == 1 ? " needed by its only variant (" + bestTarget + ")"
                     : " needed by its closest variant (" + bestTarget +
                           "; variants: " + targets + ")") +
         "; rebuild with --target=portable or a target this CPU has";
}

// Halide's condition text is the generated code's expression (names of
// internal Funcs), meaningless to the caller; the message after it is what
// the compiler wrote for the user, except that Halide 14's `require(cond,
// value, args...)` prints the value first (one number: the KV cache checks
// give "0 KV cache: sequence 1 ..."), so that token goes too.
std::string readableHalideError(const std::string &message) {
  static const char kPrefix[] = "Requirement Failed: (";
  size_t prefix = sizeof kPrefix - 1;
  if (message.compare(0, prefix, kPrefix) != 0)
    return message;
  int depth = 1;
  size_t i = prefix;
  for (; i < message.size() && depth > 0; ++i)
    depth += message[i] == '(' ? 1 : message[i] == ')' ? -1 : 0;
  if (depth != 0)
    return message;
  size_t start = message.find_first_not_of(" \n", i);
  if (start == std::string::npos)
    return message;
  std::string text = message.substr(start);
  size_t space = text.find(' ');
  size_t words = space == std::string::npos ? space : text.find_first_not_of(' ', space);
  // The value: a number up to the first space (or the whole text).
  bool valueFirst = space != 0 && text.find_first_not_of("+-.0123456789e") == space;
  if (valueFirst)
    return words == std::string::npos ? message : text.substr(words);
  return text;
}

namespace {
constexpr size_t kMaxKernels = 4096;
constexpr size_t kMaxNameLength = 255;
constexpr int32_t kMaxArguments = 4096;

bool isIdentifier(const char *s, size_t length) {
  if (length == 0 || length > kMaxNameLength)
    return false;
  for (size_t i = 0; i < length; ++i) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok)
      return false;
  }
  return true;
}

halide_type_t halideType(ElemType type) {
  const ElemTypeInfo &row = info(type);
  return halide_type_t(halide_type_code_t(row.halideCode), uint8_t(row.bytes * 8));
}

std::string typeText(const halide_type_t &t) {
  const char *code = t.code == halide_type_int     ? "int"
                     : t.code == halide_type_uint  ? "uint"
                     : t.code == halide_type_float ? "float"
                     : t.code == halide_type_bfloat ? "bfloat"
                                                   : "handle";
  return std::string(code) + std::to_string(t.bits) +
         (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

/// The signature text: the brief allows `const char *NAME_attnc_signature`;
/// a `const char NAME_attnc_signature[]` is accepted too. The text form is
/// tried first: a pointer's bytes never decode as a signature line.
bool readSignature(void *symbol, std::vector<ArgSpec> &args) {
  const char *asArray = static_cast<const char *>(symbol);
  size_t n = strnlen(asArray, 1 << 20);
  if (n && n < (1 << 20) && decodeSignature(std::string(asArray, n), args) &&
      !args.empty())
    return true;
  const char *asPointer = *static_cast<const char *const *>(symbol);
  if (!asPointer)
    return false;
  n = strnlen(asPointer, 1 << 20);
  return n < (1 << 20) && decodeSignature(std::string(asPointer, n), args);
}
} // namespace

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

bool Kernel::bind(const halide_filter_metadata_t *md, std::string &error) {
  std::string who = "kernel '" + name_ + "': ";
  if (!md || md->num_arguments < 0 || md->num_arguments > kMaxArguments ||
      (md->num_arguments > 0 && !md->arguments)) {
    error = who + "malformed Halide metadata";
    return false;
  }
  target_ = md->target ? md->target : "";
  slotCount_ = md->num_arguments;
  slots_.assign(args_.size(), -1);
  std::vector<bool> used(size_t(slotCount_), false);
  for (int32_t s = 0; s < slotCount_; ++s) {
    const char *name = md->arguments[s].name;
    if (name && std::strcmp(name, "__user_context") == 0) {
      userContextSlot_ = s;
      used[size_t(s)] = true;
    }
  }
  for (size_t i = 0; i < args_.size(); ++i) {
    for (int32_t s = 0; s < slotCount_; ++s) {
      const char *name = md->arguments[s].name;
      if (!used[size_t(s)] && name && args_[i].name == name) {
        slots_[i] = s;
        used[size_t(s)] = true;
        break;
      }
    }
  }
  // Halide may rename an argument (a Func called differently from the
  // contract name); fall back on position when the counts agree.
  int32_t buffers = slotCount_ - (userContextSlot_ >= 0 ? 1 : 0);
  bool allNamed = std::find(slots_.begin(), slots_.end(), -1) == slots_.end();
  if (!allNamed) {
    if (size_t(buffers) != args_.size()) {
      std::string metaNames, sigNames;
      for (int32_t s = 0; s < slotCount_; ++s)
        metaNames += std::string(metaNames.empty() ? "" : ", ") +
                     (md->arguments[s].name ? md->arguments[s].name : "?");
      for (const ArgSpec &a : args_)
        sigNames += (sigNames.empty() ? "" : ", ") + a.name;
      error = who + "its Halide metadata has arguments (" + metaNames +
              ") but its signature lists (" + sigNames + ")";
      return false;
    }
    int32_t s = 0;
    for (size_t i = 0; i < args_.size(); ++i, ++s) {
      if (s == userContextSlot_)
        ++s;
      slots_[i] = s;
    }
  } else {
    for (int32_t s = 0; s < slotCount_; ++s) {
      if (!used[size_t(s)]) {
        const char *name = md->arguments[s].name;
        error = who + "its Halide metadata has an argument '" +
                (name ? name : "?") + "' that its signature does not list";
        return false;
      }
    }
  }

  for (size_t i = 0; i < args_.size(); ++i) {
    const ArgSpec &arg = args_[i];
    const halide_filter_argument_t &m = md->arguments[slots_[i]];
    // An in-out argument (a KV cache) is read and written in place: Halide
    // sees it as an output buffer whose contents the pipeline keeps.
    int32_t kind = arg.isOutput || arg.isWritten ? halide_argument_kind_output_buffer
                                                 : halide_argument_kind_input_buffer;
    if (m.kind != kind) {
      error = who + "argument '" + arg.name + "' is " +
              (arg.isOutput    ? "an output"
               : arg.isWritten ? "in-out (a Halide output buffer)"
                               : "an input") +
              " in the signature but not in the Halide metadata";
      return false;
    }
    if (m.dimensions != int32_t(arg.shape.size())) {
      error = who + "argument '" + arg.name + "' has rank " +
              std::to_string(arg.shape.size()) + " in the signature but " +
              std::to_string(m.dimensions) + " in the Halide metadata";
      return false;
    }
    halide_type_t want = halideType(arg.type);
    if (!(m.type == want)) {
      error = who + "argument '" + arg.name + "' is " + toString(arg.type) +
              " in the signature but " + typeText(m.type) +
              " in the Halide metadata";
      return false;
    }
  }
  return true;
}

void Kernel::buildInfos() {
  // Built once the vectors are final: the infos point into args_' strings.
  dims_.clear();
  shapeTexts_.clear();
  infos_.clear();
  for (const ArgSpec &arg : args_) {
    std::vector<attn_dim_info> dims;
    for (const ArgDim &d : arg.shape)
      dims.push_back({d.name.c_str(), d.value});
    dims_.push_back(std::move(dims));
    shapeTexts_.push_back(formatShape(arg));
  }
  for (size_t i = 0; i < args_.size(); ++i) {
    const ArgSpec &arg = args_[i];
    infos_.push_back({arg.name.c_str(), arg.isOutput ? 1 : 0, toDtype(arg.type),
                      int32_t(arg.shape.size()), dims_[i].data(),
                      shapeTexts_[i].c_str(), arg.isWritten ? 1 : 0});
  }
}

bool Kernel::check(const attn_tensor *tensors, size_t count,
                   SizeBindings &sizes, std::string &error,
                   const CheckOptions &options) const {
  return checkArguments(name_, args_, tensors, count, sizes, error, options);
}

attn_status Kernel::run(const attn_tensor *tensors, size_t count,
                        std::string &error) const {
  SizeBindings sizes;
  if (!check(tensors, count, sizes, error))
    return ATTN_ERROR_ARGUMENT;

  size_t totalRank = 0;
  for (const ArgSpec &arg : args_)
    totalRank += arg.shape.size();
  std::vector<halide_dimension_t> dims(totalRank);
  std::vector<halide_buffer_t> buffers(static_cast<size_t>(slotCount_));
  std::vector<void *> argv(size_t(slotCount_), nullptr);
  void *userContext = nullptr;
  if (userContextSlot_ >= 0)
    argv[size_t(userContextSlot_)] = &userContext;

  size_t next = 0;
  for (size_t i = 0; i < args_.size(); ++i) {
    const attn_tensor &t = tensors[i];
    int32_t rank = t.rank;
    halide_buffer_t &buf = buffers[size_t(slots_[i])];
    buf = halide_buffer_t(); // no device, no flags
    buf.host = static_cast<uint8_t *>(t.data);
    buf.type = halideType(args_[i].type);
    buf.dimensions = rank;
    buf.dim = rank ? &dims[next] : nullptr;
    // Halide's dimension 0 is the innermost (last logical) dimension.
    int64_t stride = 1;
    for (int32_t d = 0; d < rank; ++d) {
      int64_t extent = t.shape[rank - 1 - d];
      dims[next + size_t(d)] =
          halide_dimension_t(0, int32_t(extent), int32_t(stride));
      stride *= extent;
    }
    next += size_t(rank);
    argv[size_t(slots_[i])] = &buf;
  }

  ErrorCapture capture;
  int code = argv_(argv.data());
  if (code == kErrorMissingCpuFeatures) {
    error = missingFeaturesMessage(name_, variants_);
    return ATTN_ERROR_KERNEL;
  }
  if (code != 0) {
    std::string message = readableHalideError(capture.message());
    error = "kernel '" + name_ + "' failed: " +
            (message.empty() ? "Halide error code " + std::to_string(code)
                             : message);
    return ATTN_ERROR_KERNEL;
  }
  return ATTN_OK;
}

//===----------------------------------------------------------------------===//
// KernelLibrary
//===----------------------------------------------------------------------===//

std::unique_ptr<KernelLibrary> KernelLibrary::open(const std::string &path,
                                                   std::string &error) {
  if (path.empty()) {
    error = "empty library path";
    return nullptr;
  }
  // dlopen searches the library path for names without '/'; a user naming a
  // file means that file.
  std::string openPath = path.find('/') == std::string::npos ? "./" + path : path;
  // A damaged file would crash the process inside dlopen.
  if (!checkSharedLibrary(path, error))
    return nullptr;
  dlerror();
  void *handle = dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = "cannot load '" + path + "': " + (why ? why : "unknown error");
    return nullptr;
  }
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary);
  lib->path_ = path;
  lib->handle_ = handle;

  auto names = static_cast<const char *const *>(dlsym(handle, "attnc_kernels"));
  if (!names) {
    error = "'" + path + "' is not an attnc kernel library (it has no "
            "'attnc_kernels' list)";
    return nullptr;
  }
  std::set<std::string> seen;
  for (size_t k = 0; names[k]; ++k) {
    std::string who = "'" + path + "': ";
    if (k == kMaxKernels) {
      error = who + "'attnc_kernels' is not NULL-terminated";
      return nullptr;
    }
    size_t length = strnlen(names[k], kMaxNameLength + 1);
    if (!isIdentifier(names[k], length)) {
      error = who + "'attnc_kernels' entry " + std::to_string(k) +
              " is not a kernel name";
      return nullptr;
    }
    auto kernel = std::make_unique<Kernel>();
    kernel->name_.assign(names[k], length);
    const std::string &name = kernel->name_;
    if (!seen.insert(name).second) {
      error = who + "kernel '" + name + "' is listed twice";
      return nullptr;
    }
    using MetadataFn = const halide_filter_metadata_t *(*)();
    kernel->argv_ = reinterpret_cast<int (*)(void **)>(
        dlsym(handle, (name + "_argv").c_str()));
    auto metadata = reinterpret_cast<MetadataFn>(
        dlsym(handle, (name + "_metadata").c_str()));
    void *signature = dlsym(handle, (name + "_attnc_signature").c_str());
    const char *missing = !kernel->argv_ ? "_argv"
                          : !metadata    ? "_metadata"
                          : !signature   ? "_attnc_signature"
                                         : nullptr;
    if (missing) {
      error = who + "kernel '" + name + "' has no '" + name + missing + "'";
      return nullptr;
    }
    // Optional: libraries from before multi-target objects lack it.
    if (const char *variants = static_cast<const char *>(
            dlsym(handle, (name + "_attnc_targets").c_str())))
      kernel->variants_.assign(variants, strnlen(variants, 1 << 16));
    if (!readSignature(signature, kernel->args_)) {
      error = who + "kernel '" + name + "' has a malformed '" + name +
              "_attnc_signature'";
      return nullptr;
    }
    if (!kernel->bind(metadata(), error)) {
      error = who + error;
      return nullptr;
    }
    kernel->buildInfos();
    lib->kernels_.push_back(std::move(kernel));
  }
  if (lib->kernels_.empty()) {
    error = "'" + path + "' lists no kernels";
    return nullptr;
  }
  attachHalideRuntime(handle);
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_) {
    detachHalideRuntime(handle_);
    dlclose(handle_);
  }
}

const Kernel *KernelLibrary::find(const std::string &name) const {
  for (const auto &kernel : kernels_)
    if (kernel->name() == name)
      return kernel.get();
  return nullptr;
}

} // namespace attnc::runtime
