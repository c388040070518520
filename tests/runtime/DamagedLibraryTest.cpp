//===- DamagedLibraryTest.cpp - Damaged kernel libraries are refused ------===//
//
// A kernel library made by attnc, truncated or with its second half
// overwritten, used to kill the process with SIGBUS/SIGSEGV inside dlopen.
// attn_library_open now checks the file's ELF structure first and returns
// ATTN_ERROR_LOAD with a message naming the file; the process lives on and
// the good library still loads and runs afterwards.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.hpp"
#include "tests/runtime/DamagedFiles.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

namespace {

using attn_test::damages;

std::string scratch(const std::string &name) {
  return testing::TempDir() + "/damaged-" + std::to_string(getpid()) + "-" + name + ".so";
}

TEST(DamagedLibrary, IsRefusedWithAMessageInsteadOfACrash) {
  std::vector<char> good = attn_test::readBytes(ATTN_E2E_LIB);
  ASSERT_GT(good.size(), 8192u);
  int n = 0;
  for (const attn_test::Damage &damage : damages()) {
    SCOPED_TRACE(damage.name);
    std::string path = scratch(std::to_string(n++));
    attn_test::writeBytes(path, damage.apply(good));
    attn_library *lib = nullptr;
    char err[512];
    EXPECT_EQ(attn_library_open(path.c_str(), &lib, err, sizeof err), ATTN_ERROR_LOAD);
    EXPECT_EQ(lib, nullptr);
    EXPECT_EQ(std::string(err).rfind("cannot load '" + path + "': ", 0), 0u) << err;
    std::remove(path.c_str());
  }
  // Nothing was half-loaded: the intact library opens and lists its kernels.
  attn::Library lib = attn::Library::open(ATTN_E2E_LIB);
  EXPECT_FALSE(lib.kernels().empty());
}

TEST(DamagedLibrary, TruncationIsNamedAsSuch) {
  std::vector<char> good = attn_test::readBytes(ATTN_E2E_LIB);
  std::string path = scratch("half");
  attn_test::writeBytes(path, damages()[1].apply(good));
  attn_library *lib = nullptr;
  char err[512];
  attn_library_open(path.c_str(), &lib, err, sizeof err);
  EXPECT_NE(std::string(err).find("truncated"), std::string::npos) << err;
  std::remove(path.c_str());
}

TEST(DamagedLibrary, ADirectoryIsNamedAsSuch) {
  attn_library *lib = nullptr;
  char err[512];
  std::string dir = testing::TempDir();
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  EXPECT_EQ(attn_library_open(dir.c_str(), &lib, err, sizeof err), ATTN_ERROR_LOAD);
  EXPECT_EQ(std::string(err), "cannot load '" + dir + "': it is a directory");
}

} // namespace
