//===- OutputFiles.h - attnc-run never loses data it was given -*- C++ -*-===//
//
// Issue 19 §2.4: `--out out=q.npy` with q.npy an input replaced the input,
// two `--out` naming one path lost one output, a failing later output left
// an earlier file already overwritten, and a failed write truncated the old
// file. So: paths that name the same file are refused before anything is
// read, and outputs are written to temporary files that are renamed into
// place only after every one of them was written.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnc::run {

/// One file on the command line: what it is (for messages) and its path.
struct NamedFile {
  std::string role; // "the library", "input 'q'", "output 'out'"
  std::string path;
};

/// False (with a message) when an output names the same file as another
/// output, an input or the library: the same device and inode when the
/// file exists, else the same normalized absolute path.
bool checkOutputsAreDistinct(const std::vector<NamedFile> &readFiles,
                             const std::vector<NamedFile> &outputs, std::string &error);

/// Outputs written but not yet published; the destructor removes the
/// temporary files of a batch that was not committed.
class OutputBatch {
public:
  OutputBatch() = default;
  ~OutputBatch();
  OutputBatch(const OutputBatch &) = delete;
  OutputBatch &operator=(const OutputBatch &) = delete;

  void add(std::string temporary, std::string path);
  /// Renames every temporary file into place.
  bool commit(std::string &error);

private:
  std::vector<std::pair<std::string, std::string>> files_; // temporary, path
};

} // namespace attnc::run
