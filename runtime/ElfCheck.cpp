//===- ElfCheck.cpp - Refuse damaged shared libraries before dlopen -------===//
//
// Everything is read with pread into owned buffers after its range has been
// checked against the file size (never mmap: a file truncated while mapped
// raises SIGBUS, the very failure this avoids). Arithmetic on the file's
// numbers is overflow-checked. Only 64-bit little-endian files for this
// machine are accepted, which is all attnc produces for the runtime.
//
//===----------------------------------------------------------------------===//
#include "runtime/ElfCheck.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace attnc::runtime {

namespace {

#if defined(__x86_64__)
constexpr int kMachine = EM_X86_64;
// The relocation types a shared library may carry; glibc asserts (aborting
// the process) on some others.
bool knownRelocation(uint32_t type) {
  switch (type) {
  case R_X86_64_NONE: case R_X86_64_64: case R_X86_64_PC32: case R_X86_64_COPY:
  case R_X86_64_GLOB_DAT: case R_X86_64_JUMP_SLOT: case R_X86_64_RELATIVE:
  case R_X86_64_DTPMOD64: case R_X86_64_DTPOFF64: case R_X86_64_TPOFF64:
  case R_X86_64_IRELATIVE: case R_X86_64_TLSDESC:
    return true;
  default:
    return false;
  }
}
constexpr uint32_t kRelative = R_X86_64_RELATIVE;
#elif defined(__aarch64__)
constexpr int kMachine = EM_AARCH64;
bool knownRelocation(uint32_t) { return true; }
constexpr uint32_t kRelative = R_AARCH64_RELATIVE;
#else
#error "ElfCheck: unknown host machine"
#endif

// Far above any real library; bounds the work on garbage counts.
constexpr uint64_t kMaxProgramHeaders = 4096;
constexpr uint64_t kMaxDynamicEntries = 1 << 16;
constexpr uint64_t kMaxRelocations = uint64_t(1) << 24;
constexpr uint64_t kMaxHashBuckets = uint64_t(1) << 24;

class Checker {
public:
  Checker(int fd, uint64_t size, std::string &why) : fd_(fd), size_(size), why_(why) {}

  bool run() {
    Elf64_Ehdr eh{};
    if (size_ < 4 || !read(0, &eh, std::min<uint64_t>(sizeof eh, size_)) ||
        std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
      return fail("not an ELF file");
    if (size_ < sizeof eh)
      return fail("truncated: the file is shorter than an ELF header");
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_machine != kMachine)
      return fail("built for another machine (not a 64-bit little-endian library for this CPU)");
    if (eh.e_type != ET_DYN)
      return fail("not a shared library (ELF type " + std::to_string(eh.e_type) + ")");
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
        eh.e_phnum > kMaxProgramHeaders)
      return fail("damaged ELF header (program header table size)");
    if (!inFile(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)))
      return fail("truncated: the program header table is past the end of the file");
    phdrs_.resize(eh.e_phnum);
    if (!read(eh.e_phoff, phdrs_.data(), phdrs_.size() * sizeof(Elf64_Phdr)))
      return false;
    return checkSegments() && checkDynamic();
  }

private:
  bool fail(const std::string &message) {
    why_ = message;
    return false;
  }
  bool inFile(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }
  bool read(uint64_t offset, void *out, uint64_t length) {
    if (!inFile(offset, length))
      return fail("truncated: bytes " + std::to_string(offset) + ".." +
                  std::to_string(offset + length) + " are past the end of the file");
    auto *p = static_cast<char *>(out);
    while (length) {
      ssize_t n = pread(fd_, p, length, off_t(offset));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return fail(std::string("read error: ") + (n < 0 ? std::strerror(errno) : "short read"));
      p += n;
      offset += uint64_t(n);
      length -= uint64_t(n);
    }
    return true;
  }

  /// Every segment's bytes are in the file; loadable ones are well formed.
  bool checkSegments() {
    bool anyLoad = false;
    for (size_t i = 0; i < phdrs_.size(); ++i) {
      const Elf64_Phdr &ph = phdrs_[i];
      if (ph.p_type == PT_NULL || ph.p_type == PT_GNU_STACK)
        continue;
      if (!inFile(ph.p_offset, ph.p_filesz))
        return fail("truncated: segment " + std::to_string(i) + " (file bytes " +
                    std::to_string(ph.p_offset) + ".." +
                    std::to_string(ph.p_offset + ph.p_filesz) +
                    ") extends past the end of the file");
      if (ph.p_type != PT_LOAD)
        continue;
      anyLoad = true;
      if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
        return fail("damaged program header " + std::to_string(i) + " (segment sizes)");
      if (ph.p_align > 1 && ((ph.p_align & (ph.p_align - 1)) != 0 ||
                             ph.p_offset % ph.p_align != ph.p_vaddr % ph.p_align))
        return fail("damaged program header " + std::to_string(i) + " (alignment)");
    }
    return anyLoad || fail("damaged: no loadable segment");
  }

  /// The file offset of `length` bytes at virtual address `address`, when
  /// they lie in the file-backed part of one loadable segment.
  bool fileOffset(uint64_t address, uint64_t length, uint64_t &offset,
                  bool executable = false) const {
    for (const Elf64_Phdr &ph : phdrs_) {
      if (ph.p_type != PT_LOAD || address < ph.p_vaddr)
        continue;
      uint64_t delta = address - ph.p_vaddr;
      if (delta > ph.p_filesz || length > ph.p_filesz - delta)
        continue;
      if (executable && !(ph.p_flags & PF_X))
        continue;
      offset = ph.p_offset + delta;
      return true;
    }
    return false;
  }
  /// True when `length` bytes at `address` are inside a loaded segment.
  bool mapped(uint64_t address, uint64_t length) const {
    for (const Elf64_Phdr &ph : phdrs_)
      if (ph.p_type == PT_LOAD && address >= ph.p_vaddr &&
          address - ph.p_vaddr <= ph.p_memsz && length <= ph.p_memsz - (address - ph.p_vaddr))
        return true;
    return false;
  }

  bool checkDynamic() {
    const Elf64_Phdr *dyn = nullptr;
    for (const Elf64_Phdr &ph : phdrs_)
      if (ph.p_type == PT_DYNAMIC)
        dyn = &ph;
    if (!dyn)
      return fail("damaged: no dynamic section");
    uint64_t dynOffset;
    if (dyn->p_filesz < sizeof(Elf64_Dyn) || !fileOffset(dyn->p_vaddr, dyn->p_filesz, dynOffset))
      return fail("damaged: the dynamic section is outside the loaded segments");
    uint64_t count = std::min<uint64_t>(dyn->p_filesz / sizeof(Elf64_Dyn), kMaxDynamicEntries);
    std::vector<Elf64_Dyn> entries(count);
    if (!read(dynOffset, entries.data(), count * sizeof(Elf64_Dyn)))
      return false;

    // The values the loader uses, by tag.
    uint64_t value[DT_NUM] = {};
    bool has[DT_NUM] = {};
    uint64_t relaCount = 0;
    uint64_t gnuHash = 0, verSym = 0, verNeed = 0, verNeedNum = 0, verDef = 0, verDefNum = 0;
    bool hasGnuHash = false, terminated = false;
    std::vector<uint64_t> names; // string table offsets: DT_NEEDED, DT_SONAME, ...
    for (const Elf64_Dyn &d : entries) {
      int64_t tag = d.d_tag;
      uint64_t v = d.d_un.d_val;
      if (tag == DT_NULL) {
        terminated = true;
        break;
      }
      if (tag == DT_NEEDED || tag == DT_SONAME || tag == DT_RPATH || tag == DT_RUNPATH)
        names.push_back(v);
      if (tag >= 0 && tag < DT_NUM) {
        value[tag] = v;
        has[tag] = true;
      } else if (tag == DT_GNU_HASH) {
        gnuHash = v;
        hasGnuHash = true;
      } else if (tag == DT_VERSYM) {
        verSym = v;
      } else if (tag == DT_VERNEED) {
        verNeed = v;
      } else if (tag == DT_VERNEEDNUM) {
        verNeedNum = v;
      } else if (tag == DT_VERDEF) {
        verDef = v;
      } else if (tag == DT_VERDEFNUM) {
        verDefNum = v;
      } else if (tag == DT_RELACOUNT) {
        relaCount = v;
      }
    }
    if (!terminated)
      return fail("damaged: the dynamic section has no end marker");

    uint64_t offset;
    auto table = [&](bool present, uint64_t address, uint64_t length, const char *what) {
      if (present && !fileOffset(address, length, offset))
        return fail(std::string("damaged: the ") + what + " is outside the file");
      return true;
    };
    // Strings: every name the loader reads must end inside the table.
    if (!has[DT_STRTAB] || !has[DT_SYMTAB])
      return fail("damaged: no symbol or string table");
    if (!table(true, value[DT_STRTAB], value[DT_STRSZ], "string table"))
      return false;
    std::vector<char> strings(value[DT_STRSZ]);
    if (!read(offset, strings.data(), strings.size()))
      return false;
    for (uint64_t name : names)
      if (name >= strings.size() || !std::memchr(strings.data() + name, '\0', strings.size() - name))
        return fail("damaged: a library name is outside the string table");

    if (has[DT_SYMENT] && value[DT_SYMENT] != sizeof(Elf64_Sym))
      return fail("damaged: unexpected symbol entry size");
    uint64_t symbols = 0;
    bool exact = true;
    if (!countSymbols(has[DT_HASH], value[DT_HASH], hasGnuHash, gnuHash, symbols, exact))
      return false;
    if (!exact) {
      // As many as fit in the file-backed part of the symbol table's
      // segment, and before the string table when it follows (the usual
      // layout); relocations are then bounded by that.
      uint64_t room = 0;
      for (const Elf64_Phdr &ph : phdrs_)
        if (ph.p_type == PT_LOAD && value[DT_SYMTAB] >= ph.p_vaddr &&
            value[DT_SYMTAB] - ph.p_vaddr < ph.p_filesz)
          room = (ph.p_filesz - (value[DT_SYMTAB] - ph.p_vaddr)) / sizeof(Elf64_Sym);
      if (value[DT_STRTAB] > value[DT_SYMTAB])
        room = std::min(room, (value[DT_STRTAB] - value[DT_SYMTAB]) / sizeof(Elf64_Sym));
      symbols = std::max(symbols, room);
    }
    if (symbols > (uint64_t(1) << 32) || verNeedNum > kMaxHashBuckets || verDefNum > kMaxHashBuckets)
      return fail("damaged: absurd symbol or version counts");
    if (!table(true, value[DT_SYMTAB], symbols * sizeof(Elf64_Sym), "symbol table"))
      return false;
    // Each symbol, when the count is exact (an estimate may take in bytes
    // that are not symbols).
    std::vector<Elf64_Sym> symbolTable(exact ? symbols : 0);
    if (!read(offset, symbolTable.data(), symbolTable.size() * sizeof(Elf64_Sym)))
      return false;
    for (const Elf64_Sym &sym : symbolTable) {
      if (sym.st_name >= strings.size())
        return fail("damaged: a symbol name is outside the string table");
      bool located = sym.st_shndx != SHN_UNDEF && sym.st_shndx != SHN_ABS &&
                     ELF64_ST_TYPE(sym.st_info) != STT_TLS;
      if (located && !mapped(sym.st_value, sym.st_size))
        return fail("damaged: a symbol is outside the loaded segments");
    }
    if ((has[DT_RELAENT] && value[DT_RELAENT] != sizeof(Elf64_Rela)) ||
        (has[DT_JMPREL] && has[DT_PLTREL] && value[DT_PLTREL] != DT_RELA))
      return fail("damaged: unexpected relocation entry format");
    if (!table(verSym != 0, verSym, symbols * sizeof(uint16_t), "symbol version table") ||
        !table(verNeed != 0, verNeed, verNeedNum * sizeof(Elf64_Verneed), "version needs") ||
        !table(verDef != 0, verDef, verDefNum * sizeof(Elf64_Verdef), "version definitions"))
      return false;

    // Arrays of code addresses the loader calls, and the code itself.
    for (auto [tag, sizeTag] : {std::pair{DT_INIT_ARRAY, DT_INIT_ARRAYSZ},
                                {DT_FINI_ARRAY, DT_FINI_ARRAYSZ},
                                {DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ}})
      if (has[tag] && !mapped(value[tag], value[sizeTag]))
        return fail("damaged: an initializer table is outside the loaded segments");
    for (int tag : {DT_INIT, DT_FINI})
      if (has[tag] && !fileOffset(value[tag], 1, offset, /*executable=*/true))
        return fail("damaged: an initializer is outside the code");

    return checkRelocations(has[DT_RELA], value[DT_RELA], value[DT_RELASZ], symbols,
                            relaCount) &&
           checkRelocations(has[DT_JMPREL], value[DT_JMPREL], value[DT_PLTRELSZ], symbols, 0) &&
           (!has[DT_REL] || fail("damaged: REL relocations in a RELA library"));
  }

  /// The number of dynamic symbols, from the SysV or the GNU hash table.
  bool countSymbols(bool hasHash, uint64_t hash, bool hasGnuHash, uint64_t gnuHash,
                    uint64_t &symbols, bool &exact) {
    exact = true;
    uint64_t offset;
    if (hasHash) {
      uint32_t header[2];
      if (!fileOffset(hash, sizeof header, offset) || !read(offset, header, sizeof header))
        return fail("damaged: the symbol hash table is outside the file");
      if (header[0] > kMaxHashBuckets ||
          !fileOffset(hash, (2 + uint64_t(header[0]) + header[1]) * 4, offset))
        return fail("damaged: the symbol hash table is outside the file");
      symbols = header[1];
      return true;
    }
    if (!hasGnuHash)
      return fail("damaged: no symbol hash table");
    uint32_t header[4]; // nbuckets, symoffset, bloom words, bloom shift
    if (!fileOffset(gnuHash, sizeof header, offset) || !read(offset, header, sizeof header) ||
        header[0] == 0 || header[0] > kMaxHashBuckets || header[2] > kMaxHashBuckets)
      return fail("damaged: the GNU hash table is outside the file");
    uint64_t bucketsAt = gnuHash + 16 + uint64_t(header[2]) * 8;
    std::vector<uint32_t> buckets(header[0]);
    if (!fileOffset(bucketsAt, buckets.size() * 4, offset) ||
        !read(offset, buckets.data(), buckets.size() * 4))
      return fail("damaged: the GNU hash table is outside the file");
    uint64_t last = 0;
    for (uint32_t b : buckets)
      last = std::max<uint64_t>(last, b);
    symbols = std::max<uint64_t>(last, header[1]);
    if (last < header[1]) {
      // No hashed symbols: symoffset need not count the others (ld.bfd
      // writes 1), so bound the table by what follows it instead.
      exact = false;
      return true;
    }
    // Walk the chain of the last bucket to its end bit, a block at a time.
    uint64_t chainsAt = bucketsAt + buckets.size() * 4;
    std::vector<uint32_t> block(4096);
    for (uint64_t i = last; i - header[1] <= kMaxRelocations;) {
      uint64_t at = chainsAt + (i - header[1]) * 4;
      uint64_t n = block.size();
      while (n && !fileOffset(at, n * 4, offset))
        n /= 2;
      if (!n || !read(offset, block.data(), n * 4))
        return fail("damaged: the GNU hash table is outside the file");
      for (uint64_t k = 0; k < n; ++k, ++i)
        if (block[k] & 1) {
          symbols = i + 1;
          return true;
        }
    }
    return fail("damaged: the GNU hash table has no end");
  }

  /// Every relocation writes inside a loaded segment and names a symbol
  /// that exists.
  bool checkRelocations(bool present, uint64_t address, uint64_t length, uint64_t symbols,
                        uint64_t relativeCount) {
    if (!present || length == 0)
      return relativeCount == 0 || fail("damaged: relocation counts disagree");
    uint64_t offset;
    if (length % sizeof(Elf64_Rela) != 0 || length / sizeof(Elf64_Rela) > kMaxRelocations ||
        !fileOffset(address, length, offset))
      return fail("damaged: a relocation table is outside the file");
    std::vector<Elf64_Rela> relocations(length / sizeof(Elf64_Rela));
    if (!read(offset, relocations.data(), length))
      return false;
    // The loader assumes the first DT_RELACOUNT entries are relative.
    if (relativeCount > relocations.size())
      return fail("damaged: relocation counts disagree");
    for (uint64_t i = 0; i < relativeCount; ++i)
      if (ELF64_R_TYPE(relocations[i].r_info) != kRelative)
        return fail("damaged: relocation counts disagree");
    for (const Elf64_Rela &r : relocations) {
      if (!knownRelocation(ELF64_R_TYPE(r.r_info)))
        return fail("damaged: unknown relocation type " +
                    std::to_string(ELF64_R_TYPE(r.r_info)));
      if (!mapped(r.r_offset, 8))
        return fail("damaged: a relocation writes outside the loaded segments");
      if (ELF64_R_SYM(r.r_info) >= std::max<uint64_t>(symbols, 1))
        return fail("damaged: a relocation names a symbol that does not exist");
    }
    return true;
  }

  int fd_;
  uint64_t size_;
  std::string &why_;
  std::vector<Elf64_Phdr> phdrs_;
};

} // namespace

bool checkSharedLibrary(const std::string &path, std::string &error) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot load '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st;
  std::string why;
  bool ok = false;
  if (fstat(fd, &st) != 0)
    why = std::strerror(errno);
  else if (S_ISDIR(st.st_mode))
    why = "it is a directory";
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else
    ok = Checker(fd, uint64_t(st.st_size), why).run();
  close(fd);
  if (!ok)
    error = "cannot load '" + path + "': " + why;
  return ok;
}

} // namespace attnc::runtime
