#!/usr/bin/env bash
# Installs, with apt, the Debian bookworm packages attnc needs that are not
# installed yet; does nothing (and needs no network) when all are present.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds the benchmark's baselines)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache git pkg-config python3 python3-numpy
  # The Python package's tests (tests/python): pytest, and torch for attnc.torch.
  python3-pytest python3-torch
  llvm-14-dev llvm-14-tools libmlir-14-dev mlir-14-tools libhalide14-0-dev
  clang-14 libclang-rt-14-dev libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev
  # Halide 14's CMake package needs PNG, ZLIB and JPEG found; these are only
  # Recommends of libhalide14-0-dev, which --no-install-recommends skips.
  libpng-dev zlib1g-dev libjpeg-dev
  # tests/portable: kernels run as other CPUs (qemu-x86_64 -cpu ...) and as aarch64.
  qemu-user gcc-aarch64-linux-gnu libc6-dev-arm64-cross
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-matplotlib)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "attnc: installing missing packages: ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
