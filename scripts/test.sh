#!/usr/bin/env bash
# Every test, from a fresh machine: install what is missing, build, run lit
# (every pipeline stage) and ctest (numerics, runtime, examples), then the
# fuzzers for a bounded time. Set ATTNC_FUZZ_SECONDS=0 to skip fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD_DIR="${ATTNC_BUILD_DIR:-build}"
echo "== lit =="
/usr/bin/python3 /usr/lib/llvm-14/build/utils/lit/lit.py -sv "$BUILD_DIR/tests/lit"
echo "== ctest =="
(cd "$BUILD_DIR" && ctest --output-on-failure -j 2 -E '^lit$')
if [[ -x tests/fuzz/run_fuzzers.sh && "${ATTNC_FUZZ_SECONDS:-60}" != 0 ]]; then
  echo "== fuzz =="
  FUZZ_SECONDS="${ATTNC_FUZZ_SECONDS:-60}" tests/fuzz/run_fuzzers.sh "$(cd "$BUILD_DIR" && pwd)/fuzz" 2>&1 | tail -n 25
fi
