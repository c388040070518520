#!/usr/bin/env bash
# Configures and builds attnc in build/ (Release, Ninja, ccache when present).
# Quick when nothing changed. Usage: scripts/build.sh [extra cmake -D flags]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${ATTNC_BUILD_DIR:-build}"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
fi
cmake --build "$BUILD_DIR" -j "${ATTNC_JOBS:-2}"
