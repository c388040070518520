#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, builds the project beside
# this script against it alone, and runs its apps: the attnc_add_kernel() app
# (which must link the installed shared Halide runtime) and the run-time
# compilation app (first call compiles through the installed plugin
# libattnc_jit, second loads from the cache).
# Usage: run.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$here" -B "$tmp/app" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/app" >/dev/null
"$tmp/app/app"
# (ldd into a file: grep -q would stop reading early and fail the pipe.)
ldd "$tmp/app/app" >"$tmp/ldd-app"
grep -q "libattnc_halide_runtime.so => $tmp/prefix/" "$tmp/ldd-app" ||
  { echo "app does not use the installed shared Halide runtime" >&2; exit 1; }
# The installed loader needs no compiler; the compiler plugin sits beside it.
"$here/../runtime/check_needed.sh" "$tmp/prefix/lib/libattnrt.so" >/dev/null
[ -f "$tmp/prefix/lib/libattnc_jit.so" ] ||
  { echo "libattnc_jit.so is not installed beside libattnrt" >&2; exit 1; }
ATTNC_CACHE_DIR="$tmp/cache" "$tmp/app/jit_app" "$here/../../examples/i_am_good/i_am_good.attn"
# The library in the cache links the installed runtime, found from the prefix.
ldd "$tmp"/cache/attnc-*.so >"$tmp/ldd-cached"
grep -q "libattnc_halide_runtime.so => $tmp/prefix/" "$tmp/ldd-cached" ||
  { echo "the cached library does not use the installed shared Halide runtime" >&2; exit 1; }
# pkg-config: the same app built by hand from the relocated prefix's attnrt.pc,
# and the lit example's two --no-runtime objects linked to the shared runtime
# through attnc_halide_runtime.pc.
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc "$here/jit_app.c" -o "$tmp/jit_app_pc" $(pkg-config --cflags --libs attnrt) -lm
ATTNC_CACHE_DIR="$tmp/cache" "$tmp/jit_app_pc" "$here/../../examples/i_am_good/i_am_good.attn" >/dev/null
"$tmp/prefix/bin/attnc" "$here/../../examples/i_am_good/i_am_good.attn" --no-runtime -o "$tmp/k.o"
cat >"$tmp/k_app.c" <<'C'
#include "k.h"
int main(void) {
  const float x[9] = {1, 3, 2, 1, 1, 3, 1, 2, 1};
  float out[9];
  return i_am_good_run(x, x, x, out, 1, 3, 3) || out[1] < 2.95f || out[1] > 2.96f;
}
C
cc -I "$tmp" "$tmp/k_app.c" "$tmp/k.o" -o "$tmp/k_app" $(pkg-config --libs attnc_halide_runtime)
"$tmp/k_app"
# The Python package, installed beside the runtime it loads.
pydir=$(cd "$tmp/prefix" && ls -d lib/python3*/dist-packages 2>/dev/null | head -1)
if [[ -n "$pydir" ]] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  ATTNC_CACHE_DIR="$tmp/cache" PYTHONPATH="$tmp/prefix/$pydir" /usr/bin/python3 - "$tmp/prefix" <<'PY'
import sys, numpy as np, attnc
assert attnc.__file__.startswith(sys.argv[1]), attnc.__file__
x = np.array([[[1, 3, 2], [1, 1, 3], [1, 2, 1]]], dtype=np.float32)[:, None]
lib = attnc.compile("kernel i_am_good { head_dim = 3; score = dot }")
out = lib.i_am_good(q=x, k=x, v=x)
assert abs(out[0, 0, 0, 1] - 2.957691) < 1e-5, out
PY
else
  echo "the Python package is not installed (or numpy is missing)" >&2; exit 1
fi
echo "install test: all apps ran"
