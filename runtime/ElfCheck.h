//===- ElfCheck.h - Refuse damaged shared libraries before dlopen -*- C++ -*-===//
//
// dlopen trusts the file: a library truncated after it was written (a full
// disk, an interrupted copy) has loadable segments that extend past the end
// of the file, and touching them kills the process with SIGBUS inside the
// dynamic loader; garbage in its dynamic section or relocations does the
// same with SIGSEGV. checkSharedLibrary reads the ELF header, the program
// headers, the dynamic section, the symbol hash tables and the relocation
// tables with plain reads and checks every offset, address and count the
// loader will use against the file, so such a file gets a message instead.
//
// It cannot tell damaged machine code from good code: the run-time cache
// also keeps a digest of each entry (runtime/jit/CacheEntry.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc::runtime {

/// True when `path` is an ELF shared library for this machine whose
/// loader-visible structure is consistent with the file; otherwise false
/// with a message that starts with the path.
bool checkSharedLibrary(const std::string &path, std::string &error);

} // namespace attnc::runtime
