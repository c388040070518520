//===- DamagedFiles.h - Ways a library file gets damaged on disk -*- C++ -*-===//
//
// The damages of issue 19 that crashed the process inside dlopen: a file
// cut short (a full disk, an interrupted copy) and one whose second half is
// overwritten. Each makes a damaged copy of a good library for the loader
// and cache tests.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace attn_test {

inline std::vector<char> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void writeBytes(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

struct Damage {
  const char *name;
  std::vector<char> (*apply)(std::vector<char>);
};

/// Truncated to 4096 bytes, to half its size, and a random second half.
inline const std::vector<Damage> &damages() {
  static const std::vector<Damage> list = {
      {"truncated to 4096 bytes",
       [](std::vector<char> b) {
         b.resize(std::min<size_t>(b.size(), 4096));
         return b;
       }},
      {"truncated to half its size",
       [](std::vector<char> b) {
         b.resize(b.size() / 2);
         return b;
       }},
      {"random second half",
       [](std::vector<char> b) {
         std::mt19937 random(12345);
         for (size_t i = b.size() / 2; i < b.size(); ++i)
           b[i] = char(random() & 0xff);
         return b;
       }},
  };
  return list;
}

} // namespace attn_test
