//===- Jit.cpp - Compile .attn source into a cached kernel library --------===//
//
// The key is a SHA-256 over: a format tag, the compiler's version and a
// digest of the binary that holds the compiler (so a rebuilt compiler never
// reuses stale entries), the resolved Halide target ("host" becomes the
// host's feature string), the options in canonical form, and the source.
// Writers compile into a temporary file in the cache folder, record its size
// and digest (CacheEntry.h) and rename both into place, so no reader ever
// sees half a library and a library damaged later is noticed and rebuilt; a
// per-key lock (CacheLock.h) lets a second process wait, for a bounded time,
// for the first instead of compiling the same key again. Without working
// locks, rename alone still keeps it safe. The lock holder also removes
// temporary files of its key that a killed compile left behind.
//
// Each compile runs in a forked child process: a crash, an abort or a fatal
// LLVM error inside Halide or LLVM ends the child, never the application that
// asked for the kernel, and comes back as an error with attnc's message.
//
//===----------------------------------------------------------------------===//
#include "runtime/jit/Jit.h"

#include "runtime/CacheDirectory.h"
#include "runtime/JitPlugin.h"
#include "runtime/jit/CacheEntry.h"
#include "runtime/jit/CacheLock.h"

#include "compiler/Driver/CommandLine.h"
#include "compiler/Driver/Compiler.h"
#include "compiler/Driver/ProcessGuards.h"
#include "compiler/HalideBackend/EmitKernel.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio_ext.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

namespace attnc::jit {

using runtime::cacheDirectory;

namespace {

/// compilerVersion() plus a digest of the file this code was loaded from
/// (libattnc_jit.so).
const std::string &compilerFingerprint() {
  static std::string fingerprint = [] {
    std::string text = compilerVersion();
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&compileToLibrary), &info) && info.dli_fname) {
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
        text += " build " + llvm::toHex(sha.final(), /*LowerCase=*/true);
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

/// attnc's command-line options from `optionText`, minus those the runtime
/// decides itself (output, emit stage, runtime embedding, input file).
attn_status parseJitOptions(const std::string &optionText, CompileOptions &options,
                            std::string &error) {
  std::vector<std::string> words;
  CommandLine cl;
  std::string why;
  if (!splitOptionString(optionText, words, why) || !parseCommandLine(words, cl, why)) {
    error = "invalid compile options: " + why;
    return ATTN_ERROR_INVALID;
  }
  options = cl.compile;
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
  return ATTN_OK;
}

/// The Halide target string the entry is built for: `--target` resolved
/// ("host" becomes the host's features); it must be this machine's
/// architecture and OS, since this process loads the result.
attn_status resolveJitTarget(const std::string &requested, std::string &target,
                             std::string &error) {
  try {
    Halide::Target wanted = halide_backend::parseTarget(requested, true);
    Halide::Target host = Halide::get_host_target();
    if (wanted.arch != host.arch || wanted.bits != host.bits || wanted.os != host.os) {
      error = "invalid compile options: run-time compilation builds for this machine; --target=" +
              requested + " is for another architecture or OS";
      return ATTN_ERROR_INVALID;
    }
    target = wanted.to_string();
    return ATTN_OK;
  } catch (const std::exception &e) {
    error = std::string("invalid compile options: ") + e.what();
    return ATTN_ERROR_INVALID;
  }
}

/// The cache key: SHA-256 (first 40 hex digits) over length-prefixed parts.
std::string cacheKey(const CompileOptions &options, const std::string &target,
                     const std::string &source) {
  llvm::SHA256 sha;
  for (const std::string &part :
       {std::string("attnc-cache-1"), compilerFingerprint(), canonicalOptions(options, target),
        source}) {
    sha.update(llvm::StringRef(std::to_string(part.size()) + ":"));
    sha.update(llvm::StringRef(part));
  }
  return llvm::toHex(sha.final(), /*LowerCase=*/true).substr(0, 40);
}

/// Writes all of `text` to `fd` (a pipe to the parent); gives up on errors.
void writeAll(int fd, const std::string &text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    done += (size_t)n;
  }
}

/// Reads `fd` to its end.
std::string readAll(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return text;
    text.append(buffer, (size_t)n);
  }
}

/// compileSource in this process: where no child process can be made.
ExitCode compileHere(const std::string &source, const CompileOptions &options,
                     std::ostream &diagnostics) {
  try {
    return compileSource(source, options, diagnostics);
  } catch (const std::exception &e) {
    diagnostics << "attnc: internal error: " << e.what() << "\n";
    return InternalError;
  }
}

/// The child's side: attnc's process guards (its crash and LLVM fatal-error
/// messages, exit codes), diagnostics on the message pipe, the exit code as
/// one byte on the status pipe once the compile has returned.
[[noreturn]] void compileAsChild(const std::string &source, const CompileOptions &options,
                                 int messages, int status) {
  // The caller's unwritten stdio output belongs to the caller: never flushed
  // twice. Its signal handlers (a Python faulthandler, say) are not ours.
  __fpurge(stdout);
  __fpurge(stderr);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGINT, SIGTERM})
    std::signal(sig, SIG_DFL);
  if (dup2(messages, STDERR_FILENO) < 0)
    _exit(InternalError);
  installProcessGuards();
  std::ostringstream diagnostics;
  ExitCode code = compileHere(source, options, diagnostics);
  writeAll(STDERR_FILENO, diagnostics.str());
  writeAll(status, std::string(1, (char)code));
  _exit(0);
}

/// Runs compileSource in a child process and waits for it; its messages go to
/// `diagnostics`. A child that died without reporting is an internal error.
/// When no child can be made (no pipes left, a process limit, a strict
/// overcommit policy refusing to fork a large process), compiles here.
ExitCode compileInChild(const std::string &source, const CompileOptions &options,
                        std::ostream &diagnostics) {
  int messages[2], status[2];
  if (pipe2(messages, O_CLOEXEC) != 0)
    return compileHere(source, options, diagnostics);
  if (pipe2(status, O_CLOEXEC) != 0) {
    close(messages[0]);
    close(messages[1]);
    return compileHere(source, options, diagnostics);
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(messages[0]);
    close(status[0]);
    compileAsChild(source, options, messages[1], status[1]);
  }
  close(messages[1]);
  close(status[1]);
  if (pid < 0) {
    close(messages[0]);
    close(status[0]);
    return compileHere(source, options, diagnostics);
  }
  diagnostics << readAll(messages[0]);
  std::string reported = readAll(status[0]);
  close(messages[0]);
  close(status[0]);
  int wstatus = 0;
  pid_t waited;
  do
    waited = waitpid(pid, &wstatus, 0);
  while (waited < 0 && errno == EINTR);
  if (reported.size() == 1)
    return (ExitCode)(unsigned char)reported[0];
  // The child ended inside the compile: attnc's handlers said why (a crash, a
  // fatal LLVM error) and chose the code, or a signal they do not catch did.
  if (waited == pid && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0)
    return (ExitCode)WEXITSTATUS(wstatus);
  if (waited == pid && WIFSIGNALED(wstatus))
    diagnostics << "attnc: internal error: the compiler was killed by signal "
                << WTERMSIG(wstatus) << " (" << strsignal(WTERMSIG(wstatus))
                << "); this is a bug of attnc unless something else killed it";
  else
    diagnostics << "attnc: internal error: the compiler process ended without a result";
  return InternalError;
}

/// Compiles `source` into a new temporary library in `dir` (its path in
/// `tempPath`); on failure nothing is left behind.
attn_status compileIntoTemporary(const std::string &source, const std::string &sourceName,
                                 CompileOptions options, const std::string &dir,
                                 const std::string &key, std::string &tempPath,
                                 std::string &error) {
  std::string pattern = dir + "/.attnc-" + key + "-XXXXXX.so";
  std::vector<char> temp(pattern.begin(), pattern.end());
  temp.push_back('\0');
  int fd = mkstemps(temp.data(), 3);
  if (fd < 0) {
    error = "cannot create a file in the cache directory '" + dir + "': " + std::strerror(errno);
    return ATTN_ERROR_IO;
  }
  fchmod(fd, 0644); // mkstemps makes 0600; the linker keeps the mode it finds
  close(fd);
  tempPath = temp.data();

  options.inputFile = sourceName;
  options.outputFile = tempPath;
  options.writeHeader = false;
  std::ostringstream diagnostics;
  ExitCode code;
  {
    // Held across the fork: no other thread of this process is inside the
    // compiler (holding its locks) when the child starts.
    std::lock_guard<std::mutex> guard(compileMutex);
    code = compileInChild(source, options, diagnostics);
  }
  if (code == Success)
    return ATTN_OK;
  std::remove(tempPath.c_str());
  std::string text = diagnostics.str();
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  error = "cannot compile '" + sourceName + "':\n" + text;
  return ATTN_ERROR_COMPILE;
}

/// Moves a compiled temporary library to `path`, its record first: a reader
/// that sees the new library with the old record (or none) takes the lock
/// and waits for us instead of using it. On failure both temporaries go.
attn_status publishEntry(const std::string &tempPath, const std::string &path,
                         std::string &error) {
  std::string record, recordTemp = tempPath.substr(0, tempPath.size() - 3) + ".sum";
  bool recorded = describeFile(tempPath, record, error);
  if (recorded) {
    std::ofstream out(recordTemp, std::ios::binary | std::ios::trunc);
    out << record;
    out.close();
    recorded = bool(out) && std::rename(recordTemp.c_str(), recordPath(path).c_str()) == 0;
    if (!recorded)
      error = "cannot write the cache record '" + recordPath(path) +
              "': " + std::strerror(errno);
  }
  if (!recorded) {
    std::remove(recordTemp.c_str());
    std::remove(tempPath.c_str());
    return ATTN_ERROR_IO;
  }
  if (std::rename(tempPath.c_str(), path.c_str()) != 0) {
    error = "cannot move the compiled library into the cache as '" + path +
            "': " + std::strerror(errno);
    std::remove(tempPath.c_str());
    return ATTN_ERROR_IO;
  }
  return ATTN_OK;
}

} // namespace

attn_status compileToLibrary(const std::string &source, const std::string &sourceName,
                             const std::string &optionText, bool rebuild,
                             CachedLibrary &result, std::string &error) {
  CompileOptions options;
  std::string target, dir;
  if (attn_status status = parseJitOptions(optionText, options, error))
    return status;
  if (attn_status status = resolveJitTarget(options.backend.target, target, error))
    return status;
  result.key = cacheKey(options, target, source);
  if (!cacheDirectory(dir, error))
    return ATTN_ERROR_IO;
  result.path = dir + "/attnc-" + result.key + ".so";
  result.fromCache = false;

  if (!rebuild && entryIsIntact(result.path)) {
    result.fromCache = true;
    return ATTN_OK;
  }
  if (!makeDirectories(dir, error))
    return ATTN_ERROR_IO;
  CacheLock lock;
  if (!lock.acquire(dir + "/attnc-" + result.key + ".lock", lockTimeoutSeconds(), error))
    return ATTN_ERROR_IO;
  // Another process may have finished this key while we waited.
  if (!rebuild && entryIsIntact(result.path)) {
    result.fromCache = true;
    return ATTN_OK;
  }
  if (lock.held())
    removeOrphans(dir, result.key);

  std::string tempPath;
  if (attn_status status =
          compileIntoTemporary(source, sourceName, options, dir, result.key, tempPath, error))
    return status;
  return publishEntry(tempPath, result.path, error);
}

} // namespace attnc::jit

namespace {
char *copyText(const std::string &text) {
  char *copy = static_cast<char *>(std::malloc(text.size() + 1));
  if (copy)
    std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}
} // namespace

// The plugin's only exported entry points (JitPlugin.h).
extern "C" __attribute__((visibility("default"))) void
attnc_jit_compile_v1(const char *source, size_t length, const char *sourceName,
                     const char *options, int rebuild, attnc_jit_result *result) {
  *result = attnc_jit_result{ATTN_ERROR_COMPILE, 0, nullptr, nullptr, nullptr};
  try {
    attnc::jit::CachedLibrary entry;
    std::string error;
    result->status = attnc::jit::compileToLibrary(
        std::string(source, length), sourceName ? sourceName : "<source>",
        options ? options : "", rebuild != 0, entry, error);
    result->from_cache = entry.fromCache;
    if (result->status == ATTN_OK) {
      result->path = copyText(entry.path);
      result->key = copyText(entry.key);
    } else {
      result->error = copyText(error);
    }
  } catch (const std::exception &e) {
    result->status = ATTN_ERROR_COMPILE;
    result->error = copyText(std::string("attnc: internal error: ") + e.what());
  }
}

extern "C" __attribute__((visibility("default"))) void
attnc_jit_free_v1(attnc_jit_result *result) {
  std::free(result->path);
  std::free(result->key);
  std::free(result->error);
  *result = attnc_jit_result{};
}
