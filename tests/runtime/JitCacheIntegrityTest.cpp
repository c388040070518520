//===- JitCacheIntegrityTest.cpp - Damaged entries, locks, no directory ---===//
//
// The cache's promises of issue 19: an entry damaged after it was written
// (truncated, or its second half overwritten) is noticed through its size
// and digest record and compiled again, never handed to dlopen; a failed
// compile leaves no lock file; a lock held by a stopped process ends in a
// bounded wait with a message naming the lock file; with no cache variable
// set, compiling is refused with a message saying what to set.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.hpp"
#include "tests/runtime/DamagedFiles.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char *kSource = "kernel cache_mha {\n  heads = 2\n  head_dim = 8\n}\n";

std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.')
        names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class JitCache : public testing::Test {
protected:
  void SetUp() override {
    cache = std::string(ATTN_JIT_CACHE_ROOT) + "/" +
            testing::UnitTest::GetInstance()->current_test_info()->name() + "." +
            std::to_string(getpid());
    ASSERT_EQ(std::system(("rm -rf '" + cache + "'").c_str()), 0);
    setenv("ATTNC_CACHE_DIR", cache.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("ATTNC_CACHE_DIR");
    unsetenv("ATTNC_LOCK_TIMEOUT");
    std::system(("rm -rf '" + cache + "'").c_str());
  }
  std::string cache;
};

TEST_F(JitCache, DamagedEntriesAreRecompiledNotLoaded) {
  std::string path = attn::Library::compile(kSource).path();
  std::vector<char> good = attn_test::readBytes(path);
  for (const attn_test::Damage &damage : attn_test::damages()) {
    SCOPED_TRACE(damage.name);
    attn_test::writeBytes(path, damage.apply(good));
    attn::Library lib = attn::Library::compile(kSource);
    EXPECT_FALSE(lib.fromCache());
    EXPECT_EQ(lib.path(), path);
    // A whole library again, not the damaged bytes: a recompile in the same
    // process may differ by a few bytes (Halide numbers its internal names
    // per process), never by the half or more that the damages remove.
    size_t size = attn_test::readBytes(path).size();
    EXPECT_GT(size, good.size() * 99 / 100);
    EXPECT_LT(size, good.size() * 101 / 100);
    EXPECT_EQ(lib.kernels().size(), 1u);
  }
  // The repaired entry is used again.
  EXPECT_TRUE(attn::Library::compile(kSource).fromCache());
}

TEST_F(JitCache, AnEntryWithoutItsRecordIsRecompiled) {
  std::string path = attn::Library::compile(kSource).path();
  std::string record = path.substr(0, path.size() - 3) + ".sum";
  ASSERT_EQ(std::remove(record.c_str()), 0);
  EXPECT_FALSE(attn::Library::compile(kSource).fromCache());
  EXPECT_TRUE(attn::Library::compile(kSource).fromCache());
}

TEST_F(JitCache, FailedCompilesLeaveNoLockFile) {
  for (int i = 0; i < 2; ++i)
    EXPECT_THROW(attn::Library::compile("kernel k { heads = 2 }\n"), attn::Error);
  EXPECT_EQ(listDirectory(cache), std::vector<std::string>{});
}

TEST_F(JitCache, AStoppedLockHolderEndsInABoundedReportedWait) {
  std::string path = attn::Library::compile(kSource).path();
  std::string stem = path.substr(0, path.size() - 3);
  std::remove(path.c_str());
  // Another holder of the key's lock that never finishes (a stopped
  // process): an open file description of our own holding the flock.
  std::string lockPath = stem + ".lock";
  int fd = open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  setenv("ATTNC_LOCK_TIMEOUT", "1", 1);
  auto start = std::chrono::steady_clock::now();
  attn_library *lib = nullptr;
  char err[1024];
  EXPECT_EQ(attn_library_compile(kSource, std::strlen(kSource), nullptr, &lib, err, sizeof err),
            ATTN_ERROR_IO);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 1.0);
  EXPECT_LT(seconds, 10.0);
  EXPECT_EQ(std::string(err).rfind("timed out after 1 s waiting for the cache lock '" +
                                       lockPath + "'", 0),
            0u)
      << err;
  EXPECT_NE(std::string(err).find("ATTNC_LOCK_TIMEOUT"), std::string::npos);
  // Once the holder is gone the key compiles again.
  close(fd);
  attn::Library again = attn::Library::compile(kSource);
  EXPECT_FALSE(again.fromCache());
}

TEST_F(JitCache, NoCacheVariableIsRefusedWithWhatToSet) {
  const char *home = std::getenv("HOME");
  std::string savedHome = home ? home : "";
  unsetenv("ATTNC_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  char buffer[64] = "x";
  EXPECT_EQ(attn_cache_directory(buffer, sizeof buffer), 0u);
  EXPECT_STREQ(buffer, "");
  attn_library *lib = nullptr;
  char err[512];
  attn_status status =
      attn_library_compile(kSource, std::strlen(kSource), nullptr, &lib, err, sizeof err);
  if (!savedHome.empty())
    setenv("HOME", savedHome.c_str(), 1);
  EXPECT_EQ(status, ATTN_ERROR_IO);
  EXPECT_STREQ(err, "no cache directory for run-time compilation: set ATTNC_CACHE_DIR "
                    "(or XDG_CACHE_HOME or HOME)");
  EXPECT_EQ(lib, nullptr);
}

TEST_F(JitCache, CompilingADirectoryNamesItAsSuch) {
  attn_library *lib = nullptr;
  char err[512];
  EXPECT_EQ(attn_library_compile_file(ATTN_JIT_CACHE_ROOT, nullptr, &lib, err, sizeof err),
            ATTN_ERROR_IO);
  EXPECT_EQ(std::string(err),
            std::string("cannot compile '") + ATTN_JIT_CACHE_ROOT + "': it is a directory");
}

} // namespace
