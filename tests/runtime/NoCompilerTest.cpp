//===- NoCompilerTest.cpp - Running prebuilt kernels loads no compiler ----===//
//
// libattnrt loads, inspects and runs kernel libraries without LLVM, MLIR or
// libHalide in the process (docs/tools.md §4): they come only with the compiler
// plugin, on the first attn_library_compile. Checked on the process's own
// memory map after a real library was opened and a kernel checked.
//
//===----------------------------------------------------------------------===//
#include "attn/runtime.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace {

std::string compilerLibrariesMapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line, found;
  while (std::getline(maps, line))
    for (const char *name : {"libLLVM", "libMLIR", "libHalide14", "libattnc_jit"})
      if (line.find(name) != std::string::npos)
        found += line + "\n";
  return found;
}

TEST(NoCompiler, OpeningAndInspectingAKernelLibraryMapsNoCompiler) {
  attn::Library lib = attn::Library::open(ATTN_E2E_LIB);
  ASSERT_FALSE(lib.kernels().empty());
  EXPECT_FALSE(lib.kernels()[0].arguments().empty());
  attn_set_num_threads(2);
  EXPECT_EQ(compilerLibrariesMapped(), "");
}

} // namespace
