//===- CacheEntry.h - Size and digest records of cache entries -*- C++ -*-===//
//
// Each cache entry `attnc-KEY.so` has a record `attnc-KEY.sum` with its size
// and SHA-256, written when it is compiled. An entry is used only when the
// file still matches its record: a truncated, overwritten or half-copied
// library would otherwise be handed to dlopen, which can crash the process
// on a damaged ELF file, and would do so on every later run.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace attnc::jit {

/// The record path of the entry at `libraryPath` (`.so` -> `.sum`).
std::string recordPath(const std::string &libraryPath);

/// The text of the record of the file at `path`; false (with a message)
/// when it cannot be read.
bool describeFile(const std::string &path, std::string &record, std::string &error);

/// True when the entry exists and matches its record.
bool entryIsIntact(const std::string &libraryPath);

} // namespace attnc::jit
