//===- NpyFile.cpp - Reading a .npy file without trusting its size --------===//
//
// The header comes first (at most 1 MiB + 12 bytes), then the data size it
// implies is compared with the file size before anything large is read or
// allocated, and exactly that many bytes are read: a 6 GB file whose header
// says 192 bytes is refused after a few hundred bytes instead of being read
// whole. Streams (pipes, /dev/zero) have no size up front: they are read up
// to what the header promises, in chunks so memory follows what arrives,
// and must then be at their end.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace attnc::runtime {

namespace {

/// Reads up to `length` bytes (fewer only at the end of the file); -1 on a
/// read error.
int64_t readUpTo(int fd, void *out, size_t length) {
  size_t done = 0;
  while (done < length) {
    ssize_t n = read(fd, static_cast<char *>(out) + done, length - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0)
      break;
    done += size_t(n);
  }
  return int64_t(done);
}

/// How many bytes the magic, version, length field and header take, when
/// the first bytes say so; 0 when they do not (parseNpyHeader explains).
size_t headerEnd(const uint8_t *bytes, size_t size) {
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0)
    return 0;
  size_t lengthBytes = bytes[6] == 1 ? 2 : 4;
  if (size < 8 + lengthBytes)
    return 0;
  size_t length = 0;
  for (size_t i = lengthBytes; i-- > 0;)
    length = (length << 8) | bytes[8 + i];
  return length <= (size_t(1) << 20) ? 8 + lengthBytes + length : 0;
}

bool readOpen(int fd, const std::string &path, NpyArray &array, std::string &error) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    error = path + ": is a directory";
    return false;
  }
  const std::string readError = path + ": read error";

  std::vector<uint8_t> head(12);
  int64_t n = readUpTo(fd, head.data(), head.size());
  if (n < 0)
    return error = readError, false;
  head.resize(size_t(n));
  if (size_t end = headerEnd(head.data(), head.size()); end > head.size()) {
    size_t have = head.size();
    head.resize(end);
    n = readUpTo(fd, head.data() + have, end - have);
    if (n < 0)
      return error = readError, false;
    head.resize(have + size_t(n));
  }
  NpyHeader header;
  if (!parseNpyHeader(head.data(), head.size(), header, error)) {
    error = path + ": " + error;
    return false;
  }

  bool sized = S_ISREG(st.st_mode);
  if (sized) {
    uint64_t size = uint64_t(st.st_size);
    uint64_t available = size > header.dataOffset ? size - header.dataOffset : 0;
    if (!checkNpyDataSize(header, available, error)) {
      error = path + ": " + error;
      return false;
    }
    NpyArray result(header.dtype, header.shape);
    if (!result.data()) {
      error = path + ": out of memory reading " + std::to_string(header.dataBytes) + " bytes";
      return false;
    }
    n = readUpTo(fd, result.data(), header.dataBytes);
    if (n < 0)
      return error = readError, false;
    if (!checkNpyDataSize(header, uint64_t(n), error)) { // shrank while read
      error = path + ": " + error;
      return false;
    }
    array = std::move(result);
    return true;
  }

  std::string data;
  char chunk[1 << 16];
  while (data.size() < header.dataBytes) {
    n = readUpTo(fd, chunk, std::min(sizeof chunk, header.dataBytes - data.size()));
    if (n < 0)
      return error = readError, false;
    if (n == 0)
      break;
    data.append(chunk, size_t(n));
  }
  char extra;
  n = readUpTo(fd, &extra, 1);
  if (n < 0)
    return error = readError, false;
  if (data.size() < header.dataBytes) {
    checkNpyDataSize(header, data.size(), error);
    error = path + ": " + error;
    return false;
  }
  if (n > 0) {
    error = path + ": malformed .npy file: more bytes after the data of shape " +
            shapeText(header.shape);
    return false;
  }
  NpyArray result(header.dtype, header.shape);
  if (!result.data()) {
    error = path + ": out of memory reading " + std::to_string(header.dataBytes) + " bytes";
    return false;
  }
  if (!data.empty())
    std::memcpy(result.data(), data.data(), data.size());
  array = std::move(result);
  return true;
}

} // namespace

bool readNpy(const std::string &path, NpyArray &array, std::string &error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  bool ok = readOpen(fd, path, array, error);
  close(fd);
  return ok;
}

} // namespace attnc::runtime
