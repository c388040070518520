//===- Diagnostics.h - clang-style located errors -----------------*- C++ -*-===//
//
// The DiagnosticEngine prints `FILE:LINE:COL: error: message`, the source line
// and a caret under the offending token, like clang. It owns the text of the
// input file and of any extra buffers (`-D FIELD=VALUE` overrides) so that
// tokens can point into them, and it stops reporting after a fixed number of
// errors so that hostile inputs produce bounded output.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/Frontend/AST.h"

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace attnc {

class DiagnosticEngine {
public:
  DiagnosticEngine(std::string fileName, std::string source, std::ostream &out);

  /// Reports an error at `loc` (line 0: no line and caret).
  void error(SourceLoc loc, const std::string &message);
  /// Attaches a note to the last error (dropped when that error was dropped).
  void note(SourceLoc loc, const std::string &message);
  /// An error about the command line: `<command line>: error: message`.
  void commandLineError(const std::string &message);

  unsigned errorCount() const { return errorCount_; }
  /// True once the error limit is reached: callers stop working.
  bool tooManyErrors() const;

  const std::string &fileName() const { return buffers_[0]->name; }
  const std::string &source() const { return buffers_[0]->text; }

  /// Between beginGroup() and endGroup(), diagnostics are held back and then
  /// printed sorted by location (Sema resolves fields in dependency order,
  /// users read errors in source order). Notes stay with their error.
  void beginGroup();
  void endGroup();

  /// Registers another text (e.g. `<command line>`); returns its buffer id
  /// for SourceLoc::buffer. Buffers never move, so views into them stay valid.
  uint32_t addBuffer(std::string name, std::string text);
  std::string_view bufferText(uint32_t buffer) const;

private:
  struct Buffer {
    std::string name;
    std::string text;
    // The last line looked up, so successive lookups scan forward only.
    uint32_t cachedLine = 1;
    size_t cachedOffset = 0;
  };

  struct Pending {
    SourceLoc loc;
    std::string message;
    std::vector<std::pair<SourceLoc, std::string>> notes;
  };

  void show(const Pending &diagnostic);
  void emit(const char *kind, SourceLoc loc, const std::string &message);
  void printSourceLine(Buffer &buffer, SourceLoc loc);
  size_t lineStart(Buffer &buffer, uint32_t line);

  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::ostream &out_;
  unsigned errorCount_ = 0;
  unsigned shownCount_ = 0;
  bool grouping_ = false;
  std::vector<Pending> pending_;
  bool lastErrorShown_ = false;
  bool limitReported_ = false;
};

/// Quotes a user-written name for a message, shortening very long ones.
std::string quote(std::string_view name);

} // namespace attnc
