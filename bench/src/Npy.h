//===- Npy.h - Writing NumPy .npy files --------------------------*- C++ -*-===//
//
// The harness hands the very same inputs and the reference output to the
// PyTorch baseline (bench/torch_baseline.py) as version 1.0 .npy files:
// C order, little-endian float32.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnc_bench {

/// Writes data (row-major, `shape`) to path; returns false on an I/O error.
bool writeNpy(const std::string &path, const std::vector<int64_t> &shape,
              const float *data);

} // namespace attnc_bench
