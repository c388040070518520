//===- Diagnostics.cpp - clang-style located errors -----------------------===//
//
// Prints located errors with the source line and a caret. Source lines are
// shown safely: control bytes and invalid UTF-8 print as '?', and very long
// lines print as a window around the caret, so that binary or huge inputs
// still give readable, bounded messages.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Diagnostics.h"

#include "compiler/Frontend/Limits.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace attnc {

std::string quote(std::string_view name) {
  constexpr size_t kMaxShown = 64;
  if (name.size() <= kMaxShown)
    return "'" + std::string(name) + "'";
  return "'" + std::string(name.substr(0, kMaxShown)) + "...'";
}

DiagnosticEngine::DiagnosticEngine(std::string fileName, std::string source,
                                   std::ostream &out)
    : out_(out) {
  addBuffer(std::move(fileName), std::move(source));
}

uint32_t DiagnosticEngine::addBuffer(std::string name, std::string text) {
  auto buffer = std::make_unique<Buffer>();
  buffer->name = std::move(name);
  buffer->text = std::move(text);
  buffers_.push_back(std::move(buffer));
  return uint32_t(buffers_.size() - 1);
}

std::string_view DiagnosticEngine::bufferText(uint32_t buffer) const {
  if (buffer >= buffers_.size())
    return {};
  return buffers_[buffer]->text;
}

bool DiagnosticEngine::tooManyErrors() const {
  return errorCount_ >= limits::kMaxErrors;
}

void DiagnosticEngine::error(SourceLoc loc, const std::string &message) {
  ++errorCount_;
  if (grouping_) {
    pending_.push_back({loc, message, {}});
    return;
  }
  show({loc, message, {}});
}

void DiagnosticEngine::note(SourceLoc loc, const std::string &message) {
  if (grouping_) {
    if (!pending_.empty())
      pending_.back().notes.push_back({loc, message});
    return;
  }
  if (lastErrorShown_)
    emit("note", loc, message);
}

void DiagnosticEngine::show(const Pending &diagnostic) {
  if (++shownCount_ > limits::kMaxErrors) {
    lastErrorShown_ = false;
    if (!limitReported_) {
      limitReported_ = true;
      out_ << fileName() << ": error: too many errors emitted, stopping now\n";
    }
    return;
  }
  lastErrorShown_ = true;
  emit("error", diagnostic.loc, diagnostic.message);
  for (const auto &note : diagnostic.notes)
    emit("note", note.first, note.second);
  // Callers stop at the limit (tooManyErrors), so say so now.
  if (shownCount_ == limits::kMaxErrors && !limitReported_) {
    limitReported_ = true;
    out_ << fileName() << ": error: too many errors emitted, stopping now\n";
  }
}

void DiagnosticEngine::beginGroup() { grouping_ = true; }

void DiagnosticEngine::endGroup() {
  grouping_ = false;
  std::stable_sort(pending_.begin(), pending_.end(), [](const Pending &a, const Pending &b) {
    auto key = [](SourceLoc l) { return std::make_tuple(l.buffer, l.line, l.col); };
    return key(a.loc) < key(b.loc);
  });
  // A -D value is checked once per selected kernel: say each thing once.
  const Pending *previous = nullptr;
  for (const Pending &diagnostic : pending_) {
    bool repeat = previous && previous->message == diagnostic.message &&
                  previous->loc.buffer == diagnostic.loc.buffer &&
                  previous->loc.line == diagnostic.loc.line &&
                  previous->loc.col == diagnostic.loc.col;
    if (!repeat)
      show(diagnostic);
    previous = &diagnostic;
  }
  pending_.clear();
}

void DiagnosticEngine::commandLineError(const std::string &message) {
  ++errorCount_;
  ++shownCount_;
  lastErrorShown_ = true;
  out_ << "<command line>: error: " << message << "\n";
}

void DiagnosticEngine::emit(const char *kind, SourceLoc loc,
                            const std::string &message) {
  Buffer &buffer = *buffers_[loc.buffer < buffers_.size() ? loc.buffer : 0];
  out_ << buffer.name << ":";
  if (loc.line)
    out_ << loc.line << ":" << loc.col << ":";
  out_ << " " << kind << ": " << message << "\n";
  if (loc.line)
    printSourceLine(buffer, loc);
}

size_t DiagnosticEngine::lineStart(Buffer &buffer, uint32_t line) {
  const std::string &text = buffer.text;
  if (line < buffer.cachedLine) {
    buffer.cachedLine = 1;
    buffer.cachedOffset = 0;
  }
  size_t offset = buffer.cachedOffset;
  uint32_t current = buffer.cachedLine;
  // Skip whole blocks by counting their line ends (vectorized), then search.
  constexpr size_t kBlock = 4096;
  while (current < line && offset + kBlock <= text.size()) {
    size_t ends = size_t(std::count(text.data() + offset, text.data() + offset + kBlock, '\n'));
    if (current + ends >= line)
      break;
    current += uint32_t(ends);
    offset += kBlock;
  }
  while (current < line) {
    const void *nl = offset < text.size()
                         ? std::memchr(text.data() + offset, '\n', text.size() - offset)
                         : nullptr;
    if (!nl)
      return std::string::npos;
    offset = size_t(static_cast<const char *>(nl) - text.data()) + 1;
    ++current;
  }
  buffer.cachedLine = current;
  buffer.cachedOffset = offset;
  return offset;
}

/// Length of the valid UTF-8 sequence starting at `s` (at most `n` bytes), 0 if invalid.
static size_t utf8Length(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (c >= 0xF5 || len == 0 || len > n)
    return 0;
  for (size_t k = 1; k < len; ++k)
    if ((s[k] & 0xC0) != 0x80)
      return 0;
  return len;
}

void DiagnosticEngine::printSourceLine(Buffer &buffer, SourceLoc loc) {
  size_t start = lineStart(buffer, loc.line);
  if (start == std::string::npos || start > buffer.text.size())
    return;
  const std::string &text = buffer.text;
  const void *nl = std::memchr(text.data() + start, '\n', text.size() - start);
  size_t end = nl ? size_t(static_cast<const char *>(nl) - text.data()) : text.size();
  if (end > start && text[end - 1] == '\r')
    --end;
  size_t caret = start + (loc.col ? loc.col - 1 : 0);
  if (caret > end)
    caret = end;

  // Show a bounded window of very long lines around the caret.
  constexpr size_t kHalfWindow = 100;
  size_t from = start, to = end;
  bool cutLeft = false, cutRight = false;
  if (caret - from > kHalfWindow) {
    from = caret - kHalfWindow;
    cutLeft = true;
  }
  if (to - caret > kHalfWindow) {
    to = caret + kHalfWindow;
    cutRight = true;
  }
  // Do not start or end inside a UTF-8 sequence.
  while (cutLeft && from < caret && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80)
    ++from;

  std::string shown, marker;
  if (cutLeft) {
    shown += "...";
    marker += "   ";
  }
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  size_t pos = from;
  while (pos < to) {
    unsigned char c = bytes[pos];
    size_t len = 1;
    if (c == '\t') {
      shown += '\t';
    } else if (c < 0x20 || c == 0x7F) {
      shown += '?';
    } else if (c < 0x80) {
      shown += char(c);
    } else if ((len = utf8Length(bytes + pos, to - pos)) != 0) {
      shown.append(text, pos, len);
    } else {
      len = 1;
      shown += '?';
    }
    if (pos < caret)
      marker += c == '\t' ? '\t' : ' ';
    pos += len;
  }
  if (cutRight)
    shown += "...";
  out_ << shown << "\n" << marker << "^\n";
}

} // namespace attnc
