//===- InputFile.h - Reading a source file within the limits ----*- C++ -*-===//
//
// attnc's input is untrusted: it may be a huge file, a device that never
// ends (/dev/zero), a directory, or the very file an output would replace.
// The size is checked before anything is read, reads are bounded by
// limits::kMaxSourceBytes and checked to the end, and the file's identity
// (device and inode) is kept so outputs that name it can be refused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace attnc {

/// Which file an input was, by device and inode (names can differ: links,
/// `./x` and `x`).
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool known = false;
};

/// Reads the whole of `path` ("-" = standard input) into `text`. Refuses
/// directories, devices and sockets (pipes are read), files above the limit
/// (by size before reading, and by a bounded read for pipes), and reports
/// read errors. False with a message (no "attnc: error:" prefix).
bool readSourceFile(const std::string &path, std::string &text, FileIdentity &identity,
                    std::string &error);

/// The first of `outputs` that is the same file as `input`, or "".
std::string outputNamingInput(const FileIdentity &input, const std::vector<std::string> &outputs);

} // namespace attnc
