//===- ReplayMain.cpp - Run a fuzz target over saved inputs without libFuzzer ===//
//
// In builds without libFuzzer (gcc, or ATTNC_FUZZ off) each fuzz target links
// this main instead, so the seed corpus and every saved crash reproducer in
// tests/fuzz/regressions still run as ordinary ctest tests. Arguments are
// files or directories (read one level deep); flags starting with '-' are
// libFuzzer options and are ignored, so ctest uses one command line for both.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

namespace fs = std::filesystem;

static bool runFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A heap copy of the exact size, as libFuzzer gives, so ASan sees overreads.
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(copy.empty() ? nullptr : copy.data(), copy.size());
  return true;
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  size_t count = 0;
  bool ok = true;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if (!arg.empty() && arg[0] == '-')
      continue;
    fs::path path(arg);
    if (fs::is_directory(path)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry &entry : fs::directory_iterator(path))
        if (entry.is_regular_file())
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const fs::path &file : files)
        ok &= runFile(file), ++count;
    } else {
      ok &= runFile(path), ++count;
    }
  }
  std::printf("replay: ran %zu inputs\n", count);
  return ok ? 0 : 1;
}
