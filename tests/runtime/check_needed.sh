#!/bin/sh
# Fails when the shared library $1 depends (DT_NEEDED) on anything but the
# shared Halide runtime and the C/C++ system libraries: the loader part of
# the runtime must not pull in LLVM, MLIR, libHalide or their dependencies
# (docs/tools.md §4). Prints the NEEDED list either way.
set -eu
lib=${1:?usage: check_needed.sh LIBRARY}
needed=$(readelf -dW "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$lib needs:" $needed
status=0
for n in $needed; do
  case $n in
    libattnc_halide_runtime.so|libstdc++.so.*|libgcc_s.so.*|libc.so.*|libm.so.*|\
    libpthread.so.*|libdl.so.*|ld-linux*.so.*) ;;
    # The sanitizer build's runtimes (gcc links them into shared libraries).
    libasan.so.*|libubsan.so.*) ;;
    *) echo "error: $lib must not need $n" >&2; status=1 ;;
  esac
done
exit $status
