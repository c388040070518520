//===- OutputFiles.cpp - Writes that fail loudly --------------------------===//
//
// Plain POSIX calls for files, so errors of write() and close() are seen
// directly (an ofstream reports a failed flush only in its destructor, where
// nobody looks). Standard output keeps C stdio, shared with std::cout.
//
//===----------------------------------------------------------------------===//
#include "compiler/Support/OutputFiles.h"
#include "compiler/Support/EnvironmentError.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <iostream>
#include <unistd.h>

namespace attnc {

void writeFile(const std::string &path, const std::string &data) {
  auto fail = [&](int err) {
    throw EnvironmentError("cannot write '" + path + "': " + errnoText(err));
  };
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    fail(errno);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = n < 0 ? errno : ENOSPC;
      close(fd);
      fail(err);
    }
    done += size_t(n);
  }
  if (close(fd) != 0)
    fail(errno);
}

void writeStdout(const std::string &data) {
  std::cout.flush(); // anything std::cout holds goes first
  errno = 0;
  if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size() ||
      std::fflush(stdout) != 0)
    throw EnvironmentError("cannot write to standard output: " +
                           errnoText(errno ? errno : EIO));
}

bool flushStdout(std::string &error) {
  errno = 0;
  std::cout.flush();
  bool ok = std::cout.good() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!ok)
    error = "cannot write to standard output: " + errnoText(errno ? errno : EIO);
  return ok;
}

} // namespace attnc
