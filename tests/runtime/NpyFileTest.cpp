//===- NpyFileTest.cpp - readNpy checks sizes before it reads -------------===//
//
// Issue 19 §2.5: the reader used to read the whole file before looking at
// its size (a 6 GB file whose header says 192 bytes took 92 s and 8.4 GB;
// /dev/zero grew without bound). Now the header and the file size are
// checked first and only the promised bytes are read; streams are read up
// to the promise and must then end.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

using namespace attnc::runtime;

namespace {

std::string tempPath(const std::string &name) {
  return testing::TempDir() + "/npyfile-" + std::to_string(getpid()) + "-" + name;
}

std::string image48() {
  float x[48] = {};
  for (int i = 0; i < 48; ++i)
    x[i] = float(i);
  return encodeNpy(ATTN_F32, {48}, x);
}

TEST(NpyFile, AHugeFileWithASmallHeaderIsRefusedBeforeReadingIt) {
  // 192 bytes of data promised, 6 GB present (sparse: costs no disk).
  std::string path = tempPath("huge.npy");
  std::string good = image48();
  { FILE *f = std::fopen(path.c_str(), "wb"); std::fwrite(good.data(), 1, good.size(), f); std::fclose(f); }
  ASSERT_EQ(truncate(path.c_str(), off_t(6) << 30), 0);
  NpyArray a;
  std::string error;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(readNpy(path, a, error));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(error, path + ": malformed .npy file: " +
                       std::to_string((uint64_t(6) << 30) - good.size()) +
                       " bytes after the data of shape (48,)");
  std::remove(path.c_str());
}

TEST(NpyFile, AShortFileIsRefusedWithTheSizes) {
  std::string path = tempPath("short.npy");
  std::string good = image48();
  { FILE *f = std::fopen(path.c_str(), "wb"); std::fwrite(good.data(), 1, good.size() - 100, f); std::fclose(f); }
  NpyArray a;
  std::string error;
  EXPECT_FALSE(readNpy(path, a, error));
  EXPECT_EQ(error, path + ": truncated .npy data: shape (48,) of f32 needs 192 bytes but only "
                          "92 follow the header");
  std::remove(path.c_str());
}

TEST(NpyFile, DevZeroAndDirectoriesAreRefusedAtOnce) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(readNpy("/dev/zero", a, error));
  EXPECT_EQ(error, "/dev/zero: not a .npy file (it does not start with \\x93NUMPY)");
  EXPECT_FALSE(readNpy("/tmp", a, error));
  EXPECT_EQ(error, "/tmp: is a directory");
}

/// readNpy on the read end of a pipe the given bytes are written into.
bool readFromPipe(const std::string &bytes, NpyArray &a, std::string &error, std::string &path) {
  int fds[2];
  if (pipe(fds) != 0)
    return false;
  signal(SIGPIPE, SIG_IGN); // the reader may stop early
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = write(fds[1], bytes.data() + done, bytes.size() - done);
      if (n <= 0)
        break;
      done += size_t(n);
    }
    close(fds[1]);
  });
  path = "/proc/self/fd/" + std::to_string(fds[0]);
  bool ok = readNpy(path, a, error);
  close(fds[0]);
  writer.join();
  return ok;
}

TEST(NpyFile, StreamsAreReadUpToTheHeaderAndMustThenEnd) {
  std::string good = image48(), path;
  NpyArray a;
  std::string error;
  ASSERT_TRUE(readFromPipe(good, a, error, path)) << error;
  ASSERT_EQ(a.shape(), std::vector<int64_t>{48});
  EXPECT_EQ(a.as<float>()[47], 47.0f);
  // A megabyte after the data: refused after reading one byte of it.
  EXPECT_FALSE(readFromPipe(good + std::string(1 << 20, 'x'), a, error, path));
  EXPECT_EQ(error, path + ": malformed .npy file: more bytes after the data of shape (48,)");
  EXPECT_FALSE(readFromPipe(good.substr(0, good.size() - 8), a, error, path));
  EXPECT_EQ(error, path + ": truncated .npy data: shape (48,) of f32 needs 192 bytes but only "
                          "184 follow the header");
}

TEST(NpyFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  std::string dir = tempPath("writes");
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  std::string path = dir + "/out.npy";
  std::string old = image48();
  { FILE *f = std::fopen(path.c_str(), "wb"); std::fwrite(old.data(), 1, old.size(), f); std::fclose(f); }
  // Files may not grow past 4 KiB (EFBIG instead of SIGXFSZ): the write of
  // a 1 MiB array fails part way, as on a full disk.
  std::vector<float> big(1 << 18, 1.0f);
  struct rlimit saved;
  getrlimit(RLIMIT_FSIZE, &saved);
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  auto previous = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  bool ok = writeNpy(path, ATTN_F32, {int64_t(big.size())}, big.data(), error);
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, previous);
  EXPECT_FALSE(ok);
  EXPECT_EQ(error, path + ": write error: File too large");
  NpyArray a;
  ASSERT_TRUE(readNpy(path, a, error)) << error;
  EXPECT_EQ(a.shape(), std::vector<int64_t>{48});
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    closedir(d);
  }
  EXPECT_EQ(names, std::vector<std::string>{"out.npy"});
  // Without the limit the same write replaces the file.
  ASSERT_TRUE(writeNpy(path, ATTN_F32, {int64_t(big.size())}, big.data(), error)) << error;
  ASSERT_TRUE(readNpy(path, a, error)) << error;
  EXPECT_EQ(a.shape(), std::vector<int64_t>{int64_t(big.size())});
  std::remove(path.c_str());
  rmdir(dir.c_str());
}

} // namespace
