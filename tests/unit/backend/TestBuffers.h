//===- TestBuffers.h - Inputs for the back end's JIT tests -------*- C++ -*-===//
//
// The random inputs and Halide buffer views the back-end tests share: data
// is kept in the contract's logical row-major order, and view() reverses the
// shape because Halide's dimension 0 is the innermost.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <Halide.h>

#include <random>
#include <vector>

namespace attnc::test {

/// `n` floats drawn uniformly from [-scale, scale).
inline std::vector<float> uniform(size_t n, std::mt19937 &rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// A Halide buffer over `data` with the logical row-major `shape`.
template <typename T>
Halide::Buffer<T> view(std::vector<T> &data, const std::vector<int> &shape) {
  std::vector<int> sizes(shape.rbegin(), shape.rend());
  return Halide::Buffer<T>(data.data(), sizes);
}

} // namespace attnc::test
