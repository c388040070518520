//===- Jit.cpp - Compile .attn source into a cached kernel library --------===//
//
// The key is a SHA-256 over: a format tag, the compiler's version and a
// digest of the binary that holds the compiler (so a rebuilt compiler never
// reuses stale entries), the resolved Halide target ("host" becomes the
// host's feature string), the options in canonical form, and the source.
// Writers compile into a temporary file in the cache folder and rename it
// into place, so no reader ever sees half a library; a per-key lock file
// (flock) lets a second process wait for the first instead of compiling the
// same key again. Without working locks, rename alone still keeps it safe.
// The lock holder also removes temporary files of its key that a killed
// compile left behind.
//
//===----------------------------------------------------------------------===//
#include "runtime/Jit.h"

#include "compiler/Driver/CommandLine.h"
#include "compiler/Driver/Compiler.h"
#include "compiler/HalideBackend/EmitKernel.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/SHA256.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

namespace attnc::runtime {

std::string cacheDirectory() {
  if (const char *dir = std::getenv("ATTNC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/attnc";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/attnc";
  return ".attnc-cache";
}

namespace {

std::string hex(llvm::StringRef bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (unsigned char c : bytes) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

/// compilerVersion() plus a digest of the file this code was loaded from
/// (libattnrt.so, or an executable linking the compiler statically).
const std::string &compilerFingerprint() {
  static std::string fingerprint = [] {
    std::string text = compilerVersion();
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&cacheDirectory), &info) && info.dli_fname) {
      std::string path = info.dli_fname;
      if (path.find('/') == std::string::npos)
        path = "/proc/self/exe";
      std::ifstream in(path, std::ios::binary);
      llvm::SHA256 sha;
      char buffer[1 << 16];
      bool any = false;
      while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        sha.update(llvm::StringRef(buffer, size_t(in.gcount())));
        any = true;
      }
      if (any)
        text += " build " + hex(sha.final());
    }
    return text;
  }();
  return fingerprint;
}

/// mkdir -p with mode 0755; true when `dir` is a directory afterwards.
bool makeDirectories(const std::string &dir, std::string &error) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty())
      continue;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create the cache directory '" + partial + "': " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = "the cache directory '" + dir + "' is not a directory";
    return false;
  }
  return true;
}

bool isNonEmptyFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

/// Holds an exclusive flock on `path` while alive; a no-op where locking
/// fails (some network file systems), as rename keeps entries whole anyway.
class FileLock {
public:
  explicit FileLock(const std::string &path) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      return;
    int rc;
    while ((rc = flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    }
    locked_ = rc == 0;
  }
  /// True when this process holds the key: no one else is writing it.
  bool locked() const { return locked_; }
  ~FileLock() {
    if (fd_ >= 0)
      close(fd_); // releases the lock
  }
  FileLock(const FileLock &) = delete;
  FileLock &operator=(const FileLock &) = delete;

private:
  int fd_ = -1;
  bool locked_ = false;
};

/// Removes the temporary files of `key` left by compiles that died (killed
/// or crashed) before their rename; only called while holding the key's
/// lock, when no live process can be writing one.
void removeOrphans(const std::string &dir, const std::string &key) {
  std::string prefix = ".attnc-" + key + "-";
  DIR *d = opendir(dir.c_str());
  if (!d)
    return;
  while (dirent *entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) == 0)
      std::remove((dir + "/" + name).c_str());
  }
  closedir(d);
}

/// Halide and LLVM keep global state; one compile at a time per process.
std::mutex compileMutex;

/// The canonical text of the options that change the generated code.
std::string canonicalOptions(const CompileOptions &options, const std::string &target) {
  std::string text = "target=" + target + "\nschedule=" +
                     std::to_string(int(options.backend.schedule)) + "\n";
  for (const std::string &kernel : options.frontend.kernels)
    text += "kernel=" + kernel + "\n";
  for (const auto &[field, value] : options.frontend.overrides)
    text += "define=" + field + "=" + value + "\n";
  return text;
}

} // namespace

attn_status compileToLibrary(const std::string &source, const std::string &sourceName,
                             const std::string &optionText, bool rebuild,
                             CachedLibrary &result, std::string &error) {
  // Options: attnc's own parser, minus what the runtime decides itself.
  std::vector<std::string> words;
  CommandLine cl;
  std::string why;
  if (!splitOptionString(optionText, words, why) || !parseCommandLine(words, cl, why)) {
    error = "invalid compile options: " + why;
    return ATTN_ERROR_INVALID;
  }
  CompileOptions &options = cl.compile;
  const char *refused = cl.help                               ? "--help"
                        : cl.version                          ? "--version"
                        : !options.outputFile.empty()         ? "-o"
                        : options.emit != EmitStage::None     ? "--emit"
                        : !options.backend.withRuntime        ? "--no-runtime"
                        : !options.inputFile.empty()          ? "an input file"
                                                              : nullptr;
  if (refused) {
    error = std::string("invalid compile options: ") + refused +
            " cannot be used in run-time compilation (the runtime chooses the output "
            "and the source is given as text); accepted: --kernel, --target, "
            "--schedule, -D FIELD=VALUE";
    return ATTN_ERROR_INVALID;
  }

  std::string target;
  try {
    Halide::Target wanted = halide_backend::parseTarget(options.backend.target, true);
    Halide::Target host = Halide::get_host_target();
    // The entry is a shared library this process loads: it must be built for
    // this machine's architecture and OS (features such as avx2 may differ).
    if (wanted.arch != host.arch || wanted.bits != host.bits || wanted.os != host.os) {
      error = "invalid compile options: run-time compilation builds for this machine; --target=" +
              options.backend.target + " is for another architecture or OS";
      return ATTN_ERROR_INVALID;
    }
    target = wanted.to_string();
  } catch (const std::exception &e) {
    error = std::string("invalid compile options: ") + e.what();
    return ATTN_ERROR_INVALID;
  }

  llvm::SHA256 sha;
  for (const std::string &part :
       {std::string("attnc-cache-1"), compilerFingerprint(), canonicalOptions(options, target),
        source}) {
    sha.update(llvm::StringRef(std::to_string(part.size()) + ":"));
    sha.update(llvm::StringRef(part));
  }
  result.key = hex(sha.final()).substr(0, 40);
  std::string dir = cacheDirectory();
  result.path = dir + "/attnc-" + result.key + ".so";
  result.fromCache = false;

  if (!rebuild && isNonEmptyFile(result.path)) {
    result.fromCache = true;
    return ATTN_OK;
  }
  if (!makeDirectories(dir, error))
    return ATTN_ERROR_IO;
  FileLock lock(dir + "/attnc-" + result.key + ".lock");
  // Another process may have finished this key while we waited.
  if (!rebuild && isNonEmptyFile(result.path)) {
    result.fromCache = true;
    return ATTN_OK;
  }
  if (lock.locked())
    removeOrphans(dir, result.key);

  std::string pattern = dir + "/.attnc-" + result.key + "-XXXXXX.so";
  std::vector<char> temp(pattern.begin(), pattern.end());
  temp.push_back('\0');
  int fd = mkstemps(temp.data(), 3);
  if (fd < 0) {
    error = "cannot create a file in the cache directory '" + dir + "': " + std::strerror(errno);
    return ATTN_ERROR_IO;
  }
  fchmod(fd, 0644); // mkstemps makes 0600; the linker keeps the mode it finds
  close(fd);
  std::string tempPath = temp.data();

  options.inputFile = sourceName;
  options.outputFile = tempPath;
  options.writeHeader = false;
  std::ostringstream diagnostics;
  ExitCode code;
  {
    std::lock_guard<std::mutex> guard(compileMutex);
    try {
      code = compileSource(source, options, diagnostics);
    } catch (const std::exception &e) {
      diagnostics << "attnc: internal error: " << e.what() << "\n";
      code = InternalError;
    }
  }
  if (code != Success) {
    std::remove(tempPath.c_str());
    std::string text = diagnostics.str();
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    error = "cannot compile '" + sourceName + "':\n" + text;
    return ATTN_ERROR_COMPILE;
  }
  if (std::rename(tempPath.c_str(), result.path.c_str()) != 0) {
    error = "cannot move the compiled library into the cache as '" + result.path +
            "': " + std::strerror(errno);
    std::remove(tempPath.c_str());
    return ATTN_ERROR_IO;
  }
  return ATTN_OK;
}

} // namespace attnc::runtime
