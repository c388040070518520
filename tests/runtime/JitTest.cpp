//===- JitTest.cpp - Run-time compilation through the cache ---------------===//
//
// attn_library_compile through the compiler plugin libattnc_jit: the
// first request compiles into a fresh cache directory, the second is served
// from it without compiling (same file, same inode and mtime, and the
// library says so), other options get other entries, a damaged entry is
// rebuilt, and bad options or bad source come back as messages.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.hpp"
#include "tests/runtime/Reference.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

using attn_test::Problem;

const char *kSource = "kernel jit_mha {\n  heads = 2\n  head_dim = 8\n}\n";

std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

size_t countSuffix(const std::vector<std::string> &names, const std::string &suffix) {
  size_t n = 0;
  for (const std::string &name : names)
    n += name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  return n;
}

double runMha(const attn::Library &lib) {
  Problem p(2, 2, 2, 3, 17, 8, 8);
  lib.kernel("jit_mha").run({{p.q.data(), p.qShape()},
                             {p.k.data(), p.kShape()},
                             {p.v.data(), p.vShape()},
                             {p.out.data(), p.outShape()}});
  return p.maxError(false);
}

/// Each test gets an empty cache directory of its own in the build tree.
class Jit : public testing::Test {
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
    std::system(("rm -rf '" + cache + "'").c_str());
  }
  std::string cache;
};

std::string compileError(const std::string &source, const std::string &options,
                         attn_status *status = nullptr) {
  try {
    attn::Library::compile(source, options);
  } catch (const attn::Error &e) {
    if (status)
      *status = e.status();
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_F(Jit, SecondRequestIsServedFromTheCache) {
  struct stat first {}, second {};
  {
    attn::Library lib = attn::Library::compile(kSource);
    EXPECT_FALSE(lib.fromCache());
    EXPECT_EQ(lib.path().rfind(cache + "/attnc-", 0), 0u) << lib.path();
    ASSERT_EQ(stat(lib.path().c_str(), &first), 0);
    EXPECT_LE(runMha(lib), 1e-4);
  }
  attn::Library again = attn::Library::compile(kSource);
  EXPECT_TRUE(again.fromCache());
  ASSERT_EQ(stat(again.path().c_str(), &second), 0);
  // The very same file, not rewritten.
  EXPECT_EQ(first.st_ino, second.st_ino);
  EXPECT_EQ(first.st_mtim.tv_sec, second.st_mtim.tv_sec);
  EXPECT_EQ(first.st_mtim.tv_nsec, second.st_mtim.tv_nsec);
  EXPECT_LE(runMha(again), 1e-4);
  // One library and its size-and-digest record; no temporary file and no
  // lock file left behind.
  std::vector<std::string> names = listDirectory(cache);
  EXPECT_EQ(names.size(), 2u);
  EXPECT_EQ(countSuffix(names, ".so"), 1u);
  EXPECT_EQ(countSuffix(names, ".sum"), 1u);
}

TEST_F(Jit, TheKeyCoversSourceOptionsAndTarget) {
  std::string a = attn::Library::compile(kSource).path();
  std::string b = attn::Library::compile(kSource, "-D seq_q=3").path();
  std::string c = attn::Library::compile(kSource, "--schedule=simple").path();
  std::string d = attn::Library::compile(std::string(kSource) + "# a comment\n").path();
  std::string host = attn::Library::compile(kSource, "--target=host").path();
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  EXPECT_NE(b, c);
  // "host" is resolved before hashing: the same key as no --target.
  EXPECT_EQ(a, host);
  attn::Library fixed = attn::Library::compile(kSource, "-D seq_q=3");
  EXPECT_TRUE(fixed.fromCache());
  EXPECT_EQ(fixed.kernel("jit_mha").argument(0).shapeText, "f32[B, H=2, Lq=3, D=8]");
  EXPECT_EQ(countSuffix(listDirectory(cache), ".so"), 4u);
}

TEST_F(Jit, DamagedEntryIsRebuilt) {
  std::string path = attn::Library::compile(kSource).path();
  { std::ofstream(path, std::ios::trunc) << "not a library"; }
  attn::Library lib = attn::Library::compile(kSource);
  EXPECT_FALSE(lib.fromCache());
  EXPECT_EQ(lib.path(), path);
  EXPECT_LE(runMha(lib), 1e-4);
}

TEST_F(Jit, CompileFileNamesTheFileInDiagnostics) {
  std::string file = cache + ".attn";
  { std::ofstream(file) << "kernel broken {\n  heads = 2\n  head_dmi = 8\n}\n"; }
  attn_status status = ATTN_OK;
  std::string message;
  try {
    attn::Library::compileFile(file);
  } catch (const attn::Error &e) {
    status = e.status();
    message = e.what();
  }
  std::remove(file.c_str());
  EXPECT_EQ(status, ATTN_ERROR_COMPILE);
  EXPECT_EQ(message.rfind("cannot compile '" + file + "':\n" + file + ":", 0), 0u) << message;
  EXPECT_NE(message.find(file + ":3:3: error: unknown field 'head_dmi'; did you mean "
                                "'head_dim'?\n  head_dmi = 8\n  ^"),
            std::string::npos)
      << message;
  // Nothing is cached for a failed compile.
  EXPECT_EQ(countSuffix(listDirectory(cache), ".so"), 0u);
}

TEST_F(Jit, BadOptionsAndSourceAreMessages) {
  attn_status status = ATTN_OK;
  EXPECT_EQ(compileError(kSource, "--frobnicate", &status),
            "invalid compile options: unknown option '--frobnicate'");
  EXPECT_EQ(status, ATTN_ERROR_INVALID);
  EXPECT_EQ(compileError(kSource, "-o x.so"),
            "invalid compile options: -o cannot be used in run-time compilation (the runtime "
            "chooses the output and the source is given as text); accepted: --kernel, "
            "--target, --schedule, -D FIELD=VALUE");
  EXPECT_EQ(compileError(kSource, "--target='x86-64"),
            "invalid compile options: unterminated single quote in the options "
            "'--target='x86-64'");
  EXPECT_EQ(compileError(kSource, "--target=z80-8-cpm"),
            "invalid compile options: invalid target 'z80-8-cpm': expected a Halide target "
            "string such as 'host', 'x86-64-linux-avx2' or 'arm-64-linux', 'portable', or a "
            "comma-separated list of them");
  // The cache holds libraries this process loads: other machines are refused
  // before anything is compiled (this test runs on x86-64 hosts).
  EXPECT_EQ(compileError(kSource, "--target=arm-64-linux", &status),
            "invalid compile options: run-time compilation builds for this machine; "
            "--target=arm-64-linux is for another architecture or OS");
  EXPECT_EQ(status, ATTN_ERROR_INVALID);
  std::string message = compileError("kernel k { heads = 2 }\n", "", &status);
  EXPECT_EQ(status, ATTN_ERROR_COMPILE);
  EXPECT_EQ(message.rfind("cannot compile '<source>':\n<source>:1:", 0), 0u) << message;
  EXPECT_NE(message.find("head_dim"), std::string::npos) << message;
  EXPECT_EQ(compileError(kSource, "--kernel=nope", &status).rfind("cannot compile", 0), 0u);
  EXPECT_EQ(status, ATTN_ERROR_COMPILE);
  // The C API checks its pointers.
  attn_library *lib = nullptr;
  char err[256];
  EXPECT_EQ(attn_library_compile(nullptr, 0, nullptr, &lib, err, sizeof err),
            ATTN_ERROR_INVALID);
  EXPECT_STREQ(err, "attn_library_compile: NULL source or result");
  EXPECT_EQ(attn_library_compile_file("/no/such/file.attn", nullptr, &lib, err, sizeof err),
            ATTN_ERROR_IO);
  EXPECT_STREQ(err, "cannot open '/no/such/file.attn': No such file or directory");
  EXPECT_EQ(lib, nullptr);
}

TEST_F(Jit, ACompilerCrashIsAnErrorAndTheProcessGoesOn) {
  // ATTNC_DEBUG_CRASH makes the compiler crash (docs/robustness.md; lit
  // Driver/crash-report.attn). The compile runs in a child process, so the
  // crash is attnc's message and this process compiles and runs the next one.
  attn_status status = ATTN_OK;
  setenv("ATTNC_DEBUG_CRASH", "1", 1);
  std::string message = compileError("kernel k { head_dim = 1 }\n", "", &status);
  unsetenv("ATTNC_DEBUG_CRASH");
  EXPECT_EQ(status, ATTN_ERROR_COMPILE);
  EXPECT_EQ(message, "cannot compile '<source>':\nattnc: internal error: the compiler crashed "
                     "(a segmentation fault); this is a bug of attnc: please report it with "
                     "the .attn file");
  EXPECT_EQ(countSuffix(listDirectory(cache), ".so"), 0u);
  EXPECT_LE(runMha(attn::Library::compile(kSource)), 1e-5);
}

TEST_F(Jit, TemporaryFilesOfDeadCompilesAreRemoved) {
  std::string path = attn::Library::compile(kSource).path();
  // attnc-KEY.so -> the temporary name a killed compile of KEY leaves.
  std::string key = path.substr(cache.size() + 7, path.size() - cache.size() - 10);
  std::string orphan = cache + "/.attnc-" + key + "-Ab12Cd.so";
  { std::ofstream(orphan) << "half a library"; }
  std::remove(path.c_str());
  attn::Library lib = attn::Library::compile(kSource);
  EXPECT_FALSE(lib.fromCache());
  EXPECT_LE(runMha(lib), 1e-4);
  std::vector<std::string> names = listDirectory(cache);
  EXPECT_EQ(names, (std::vector<std::string>{"attnc-" + key + ".so", "attnc-" + key + ".sum"}));
}

TEST(JitCacheDirectory, FollowsTheEnvironment) {
  auto dir = [] {
    char buffer[512];
    size_t n = attn_cache_directory(buffer, sizeof buffer);
    EXPECT_EQ(n, std::string(buffer).size());
    return std::string(buffer);
  };
  const char *home = std::getenv("HOME");
  std::string savedHome = home ? home : "";
  setenv("ATTNC_CACHE_DIR", "/tmp/a", 1);
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  setenv("HOME", "/tmp/home", 1);
  EXPECT_EQ(dir(), "/tmp/a");
  unsetenv("ATTNC_CACHE_DIR");
  EXPECT_EQ(dir(), "/tmp/xdg/attnc");
  unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(dir(), "/tmp/home/.cache/attnc");
  setenv("HOME", savedHome.c_str(), 1);
  char small[4];
  EXPECT_EQ(attn_cache_directory(small, sizeof small), savedHome.size() + 13);
  EXPECT_EQ(std::string(small), savedHome.substr(0, 3));
}
