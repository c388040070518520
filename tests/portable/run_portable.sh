#!/usr/bin/env bash
# One portability case of tests/portable (docs/targets.md): compiles
# portable.attn for a target, links portable_app.c, runs the app natively or
# under qemu with another CPU, and checks its exit status. A tool that is
# missing (qemu, the aarch64 cross compiler) makes the case exit 77, which
# ctest reports as "skipped" with the reason printed here.
#   run_portable.sh ATTNC SRC_DIR WORK_DIR CASE
# CASE: portable-native | portable-haswell | portable-nehalem |
#       host-on-nehalem | runtime-on-nehalem | aarch64
set -euo pipefail
attnc=$1 src=$2 work=$3 case=$4
mkdir -p "$work/$case"
cd "$work/$case"

skip() { echo "SKIPPED: $*"; exit 77; }
need() { command -v "$1" >/dev/null || skip "'$1' is not installed ($2; scripts/install-deps.sh installs it)"; }

build() { # target, C compiler
  "$attnc" "$src/portable.attn" --target="$1" -o portable.o
  "$2" -std=c99 -O1 -I. "$src/portable_app.c" portable.o -o app -lpthread -ldl -lm
}

expect() { # expected exit status, command...
  local want=$1 status=0
  shift
  "$@" >out.txt 2>&1 || status=$?
  cat out.txt
  if [[ $status != "$want" ]]; then
    echo "FAIL: '$*' exited $status, expected $want"
    exit 1
  fi
}

case $case in
  portable-native)
    build portable cc
    expect 0 ./app ;;
  portable-haswell|portable-nehalem)
    need qemu-x86_64 "Debian's qemu-user"
    cpu=Haswell; [[ $case == portable-nehalem ]] && cpu=Nehalem
    build portable cc
    expect 0 qemu-x86_64 -cpu "$cpu" ./app ;;
  host-on-nehalem)
    need qemu-x86_64 "Debian's qemu-user"
    build host cc
    expect 0 ./app
    # The host's AVX-512 variant must refuse cleanly on an SSE4.2 CPU.
    expect 3 qemu-x86_64 -cpu Nehalem ./app
    grep -q "returned -100" out.txt || { echo "FAIL: expected error -100"; exit 1; } ;;
  runtime-on-nehalem)
    # Through libattnrt the refusal is a message naming what the CPU lacks.
    need qemu-x86_64 "Debian's qemu-user"
    # ASan's shadow memory does not fit under qemu-user: the instrumented
    # attnc-run is killed there. The release build runs this case.
    [[ ${ATTNC_SANITIZED:-0} != 1 ]] || skip "attnc-run is built with ASan, which qemu-user cannot run"
    "$attnc" "$src/portable.attn" -o libhost.so
    "${PYTHON:-/usr/bin/python3}" - <<'PY'
import numpy as np
rng = np.random.default_rng(1)
for name, shape in (("q", (2, 4, 13, 16)), ("k", (2, 2, 13, 16)), ("v", (2, 2, 13, 16))):
    np.save(name + ".npy", rng.uniform(-1, 1, shape).astype("<f4"))
PY
    run=("$(dirname "$attnc")/attnc-run" libhost.so --in q=q.npy --in k=k.npy --in v=v.npy --out out=out.npy)
    expect 0 "${run[@]}"
    rm out.npy
    expect 1 qemu-x86_64 -cpu Nehalem "${run[@]}"
    grep -q "kernel 'gqa_alibi' cannot run on this CPU: it lacks avx, avx2, fma, f16c, " out.txt ||
      { echo "FAIL: expected the missing-features message"; exit 1; }
    [[ ! -e out.npy ]] || { echo "FAIL: a refused run wrote its output"; exit 1; } ;;
  aarch64)
    need qemu-aarch64 "Debian's qemu-user"
    need aarch64-linux-gnu-gcc "Debian's gcc-aarch64-linux-gnu"
    [[ -d /usr/aarch64-linux-gnu/lib ]] || skip "no aarch64 C library (Debian's libc6-dev-arm64-cross)"
    build arm-64-linux aarch64-linux-gnu-gcc
    expect 0 qemu-aarch64 -L /usr/aarch64-linux-gnu ./app ;;
  *)
    echo "unknown case '$case'"; exit 2 ;;
esac
echo "PASS: $case"
