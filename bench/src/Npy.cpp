//===- Npy.cpp - Writing NumPy .npy files ---------------------------------===//
//
// Format 1.0: magic, version, a little-endian uint16 header length, and a
// Python dict literal padded with spaces so the data starts 64-byte aligned.
//
//===----------------------------------------------------------------------===//
#include "bench/src/Npy.h"

#include <cstdio>

namespace attnc_bench {

bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  int64_t count = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    dict += std::to_string(shape[d]);
    dict += shape.size() == 1 ? ",)" : (d + 1 == shape.size() ? ")" : ", ");
    count *= shape[d];
  }
  if (shape.empty())
    dict += ")";
  dict += ", }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  const char magic[] = "\x93NUMPY\x01\x00";
  uint16_t len = uint16_t(dict.size());
  bool ok = std::fwrite(magic, 1, 8, f) == 8 &&
            std::fwrite(&len, 2, 1, f) == 1 && // x86 is little-endian
            std::fwrite(dict.data(), 1, dict.size(), f) == dict.size() &&
            std::fwrite(data, sizeof(float), count, f) == size_t(count);
  return std::fclose(f) == 0 && ok;
}

} // namespace attnc_bench
