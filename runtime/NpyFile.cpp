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
#include <cstdio>
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

namespace attnc::runtime {

bool writeNpyTemporary(const std::string &path, attn_dtype dtype,
                       const std::vector<int64_t> &shape, const void *data,
                       std::string &temporary, std::string &error) {
  size_t bytes = 0;
  if (!npyByteSize(dtype, shape, bytes, error)) {
    error = path + ": " + error;
    return false;
  }
  std::string image = encodeNpy(dtype, shape, data);
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string pattern = dir + (slash == std::string::npos ? "/." : ".") + base + ".XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  // mkostemp makes 0600; a plain create would give 0666 less the umask.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  size_t done = 0;
  int failure = 0;
  while (done < image.size()) {
    ssize_t n = write(fd, image.data() + done, image.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      failure = n < 0 ? errno : EIO;
      break;
    }
    done += size_t(n);
  }
  // fsync: the rename must never publish a file whose data is not on disk.
  if (!failure && fsync(fd) != 0)
    failure = errno;
  if (close(fd) != 0 && !failure)
    failure = errno;
  if (failure) {
    unlink(name.data());
    error = path + ": write error: " + std::strerror(failure);
    return false;
  }
  temporary = name.data();
  return true;
}

bool commitNpy(const std::string &temporary, const std::string &path, std::string &error) {
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = path + ": cannot replace: " + std::strerror(errno);
    unlink(temporary.c_str());
    return false;
  }
  return true;
}

bool writeNpy(const std::string &path, attn_dtype dtype,
              const std::vector<int64_t> &shape, const void *data,
              std::string &error) {
  std::string temporary;
  return writeNpyTemporary(path, dtype, shape, data, temporary, error) &&
         commitNpy(temporary, path, error);
}

} // namespace attnc::runtime
