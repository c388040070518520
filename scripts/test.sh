#!/usr/bin/env bash
# Every test, from a fresh machine: install what is missing, build, run lit
# (every pipeline stage) and ctest (numerics, runtime, edge cases, examples);
# then the sanitizer build (clang, ASan + UBSan + LeakSanitizer, kernels with
# Halide's asan feature) runs lit and ctest again, and its libFuzzer targets
# run for a bounded time each (docs/robustness.md).
#   ATTNC_SANITIZE_CI=0     skip the sanitizer build (and the fuzzers)
#   ATTNC_FUZZ_SECONDS=N    seconds per fuzz target (default 20; 0 skips fuzzing)
#   ATTNC_ASAN_BUILD_DIR    the sanitizer build directory (default build-asan)
set -euo pipefail
cd "$(dirname "$0")/.."
LIT=(/usr/bin/python3 /usr/lib/llvm-14/build/utils/lit/lit.py)
step_start=$SECONDS
step() { # prints how long the previous step took, then the next title
  echo "   ($((SECONDS - step_start)) s)"
  step_start=$SECONDS
  echo "== $* =="
}

echo "== dependencies =="
scripts/install-deps.sh
step "build"
scripts/build.sh
BUILD_DIR="${ATTNC_BUILD_DIR:-build}"
step "lit"
"${LIT[@]}" -sv "$BUILD_DIR/tests/lit"
step "ctest"
(cd "$BUILD_DIR" && ctest --output-on-failure -j 2 -E '^lit$')

if [[ "${ATTNC_SANITIZE_CI:-1}" != 0 ]]; then
  ASAN_DIR="${ATTNC_ASAN_BUILD_DIR:-build-asan}"
  step "sanitizer build ($ASAN_DIR)"
  if [[ ! -f "$ASAN_DIR/build.ninja" ]]; then
    launcher=()
    if command -v ccache >/dev/null; then
      launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    fi
    # -O1: ASan's recommended level, and half the compile time of -O3.
    cmake -S . -B "$ASAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_C_FLAGS_RELEASE=-O1 -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
      -DATTNC_SANITIZE=ON -DATTNC_FUZZ=ON -DATTNC_BUILD_BENCH=OFF "${launcher[@]}"
  fi
  cmake --build "$ASAN_DIR" -j "${ATTNC_JOBS:-2}"
  step "sanitizer lit"
  "${LIT[@]}" -sv "$ASAN_DIR/tests/lit"
  step "sanitizer ctest"
  # The whole suite but `backend` (its 100 s go to Halide's own, uninstrumented
  # JIT compiler; the back-end code it drives runs instrumented in every attnc
  # call) and install.find_package (an uninstrumented app cannot link the
  # instrumented package). See docs/robustness.md.
  (cd "$ASAN_DIR" && ctest --output-on-failure -j 2 -E '^(lit|backend|install\.find_package)$')
  if [[ "${ATTNC_FUZZ_SECONDS:-20}" != 0 ]]; then
    step "fuzz (${ATTNC_FUZZ_SECONDS:-20} s per target)"
    FUZZ_SECONDS="${ATTNC_FUZZ_SECONDS:-20}" tests/fuzz/run_fuzzers.sh "$ASAN_DIR"
  fi
fi
step "done"
