//===- CacheEntry.cpp - Size and digest records of cache entries ----------===//
//
// The record is one line, "attnc-entry-1 SIZE SHA256HEX\n". The size is
// compared first (cheap, and catches truncation), then the digest.
//
//===----------------------------------------------------------------------===//
#include "runtime/jit/CacheEntry.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attnc::jit {

std::string recordPath(const std::string &libraryPath) {
  std::string path = libraryPath;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".so") == 0)
    path.resize(path.size() - 3);
  return path + ".sum";
}

bool describeFile(const std::string &path, std::string &record, std::string &error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "cannot read '" + path + "': " + std::strerror(errno ? errno : EINVAL);
    if (fd >= 0)
      close(fd);
    return false;
  }
  llvm::SHA256 sha;
  char buffer[1 << 16];
  uint64_t total = 0;
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) != 0) {
    if (n < 0) {
      if (errno == EINTR)
        continue;
      error = "cannot read '" + path + "': " + std::strerror(errno);
      close(fd);
      return false;
    }
    sha.update(llvm::StringRef(buffer, size_t(n)));
    total += uint64_t(n);
  }
  close(fd);
  record = "attnc-entry-1 " + std::to_string(total) + " " + llvm::toHex(sha.final(), /*LowerCase=*/true) + "\n";
  return true;
}

bool entryIsIntact(const std::string &libraryPath) {
  std::ifstream in(recordPath(libraryPath), std::ios::binary);
  std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof())
    return false;
  std::istringstream fields(expected);
  std::string tag;
  uint64_t size = 0;
  if (!(fields >> tag >> size) || tag != "attnc-entry-1")
    return false;
  struct stat st;
  if (stat(libraryPath.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      uint64_t(st.st_size) != size)
    return false;
  std::string actual, ignored;
  return describeFile(libraryPath, actual, ignored) && actual == expected;
}

} // namespace attnc::jit
