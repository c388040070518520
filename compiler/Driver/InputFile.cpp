//===- InputFile.cpp - Reading a source file within the limits ------------===//
//
// POSIX open/fstat/read so that the type and size are known before reading
// and every read error is seen (`ss << in.rdbuf()` stops silently on an
// error or on bad_alloc and leaves a truncated source that compiles).
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver/InputFile.h"

#include "compiler/Frontend/Limits.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnc {

namespace {

const size_t kLimit = size_t(limits::kMaxSourceBytes);

/// `size` is "N bytes" for a file, "longer" for a stream read to the limit.
std::string tooLarge(const std::string &path, const std::string &size) {
  return "'" + path + "' is " + size + " than the limit of " + std::to_string(kLimit) +
         " bytes (100 MiB) for a source file";
}

/// Why a file of this type is not read, or nullptr when it is.
const char *refusedType(mode_t mode) {
  if (S_ISDIR(mode))
    return "it is a directory";
  if (S_ISREG(mode) || S_ISFIFO(mode))
    return nullptr;
  return "it is not a regular file (a device or socket)";
}

} // namespace

bool readSourceFile(const std::string &path, std::string &text, FileIdentity &identity,
                    std::string &error) {
  bool isStdin = path == "-";
  std::string name = isStdin ? "<stdin>" : path;
  struct stat st;
  // stat before open: opening a device can have effects of its own.
  if (!isStdin && stat(path.c_str(), &st) == 0 && refusedType(st.st_mode)) {
    error = "cannot read '" + name + "': " + refusedType(st.st_mode);
    return false;
  }
  int fd = isStdin ? 0 : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + name + "': " + std::strerror(errno);
    return false;
  }
  auto fail = [&](const std::string &message) {
    if (!isStdin)
      close(fd);
    error = message;
    return false;
  };
  if (fstat(fd, &st) != 0)
    return fail("cannot read '" + name + "': " + std::strerror(errno));
  if (!isStdin && refusedType(st.st_mode))
    return fail("cannot read '" + name + "': " + refusedType(st.st_mode));
  if (S_ISREG(st.st_mode)) {
    identity = {st.st_dev, st.st_ino, true};
    if (uint64_t(st.st_size) > kLimit)
      return fail(tooLarge(name, std::to_string(st.st_size) + " bytes, more"));
  }

  text.clear();
  if (S_ISREG(st.st_mode))
    text.reserve(size_t(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fail("cannot read '" + name + "': " + std::strerror(errno));
    if (n == 0)
      break;
    // One byte past the limit is enough to know (a pipe or /dev/zero via stdin).
    if (text.size() + size_t(n) > kLimit)
      return fail(tooLarge(name, "longer"));
    text.append(buffer, size_t(n));
  }
  if (!isStdin)
    close(fd);
  return true;
}

std::string outputNamingInput(const FileIdentity &input, const std::vector<std::string> &outputs) {
  if (!input.known)
    return "";
  for (const std::string &out : outputs) {
    struct stat st;
    if (stat(out.c_str(), &st) == 0 && st.st_dev == input.device && st.st_ino == input.inode)
      return out;
  }
  return "";
}

} // namespace attnc
