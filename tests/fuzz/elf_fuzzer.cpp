//===- elf_fuzzer.cpp - libFuzzer entry over the loader's ELF check -------===//
//
// Feeds arbitrary bytes, as a file, to checkSharedLibrary, the check that
// attn_library_open runs before dlopen so that damaged libraries give a
// message instead of SIGBUS/SIGSEGV inside the dynamic loader. Seeds are a
// small kernel library and its damaged forms (truncated to 4096 bytes, to
// half, a random second half). The check itself must never crash, read out
// of bounds, allocate without bound or hang, and every refusal names the
// file. Nothing is dlopen'ed: an accepted file may still hold damaged code.
//
//===----------------------------------------------------------------------===//
#include "runtime/ElfCheck.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

static void require(bool condition, const char *what) {
  if (!condition) {
    std::fprintf(stderr, "elf_fuzzer: invariant violated: %s\n", what);
    std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("elf_fuzzer", MFD_CLOEXEC);
  require(fd >= 0, "memfd_create works");
  require(write(fd, data, size) == ssize_t(size), "the bytes are written");
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  std::string error;
  bool ok = attnc::runtime::checkSharedLibrary(path, error);
  close(fd);
  if (ok)
    require(size >= 64 && data[0] == 0x7f && data[1] == 'E', "accepted files are ELF");
  else
    require(error.rfind("cannot load '" + path + "': ", 0) == 0, "refusals name the file");
  return 0;
}
