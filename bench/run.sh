#!/usr/bin/env bash
#===- bench/run.sh - Build and run attnc's benchmark, print the table ------===#
#
# One command: builds attnc-bench (and attnc, if it builds), measures the
# machine, checks and times attnc's kernels against the naive loop, OpenBLAS
# and PyTorch (when Debian's python3-torch is installed), and writes
# bench/results/<timestamp>/{table.md,results.json,torch.json,roofline.png}.
# See docs/benchmarks.md for how to read the result.
#
#===------------------------------------------------------------------------===#
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/run.sh [BUILD_DIR] [--quick] [--keep-inputs] [attnc-bench options...]

  BUILD_DIR       CMake build folder (default: build); configured if empty
  --quick         smoke test: one configuration of each kind (under a minute)
  --keep-inputs   keep the .npy inputs under RESULTS/work (deleted by default)
  other options go to attnc-bench, e.g. --threads 1, --only mha_n2048,decode_lk32768_g8,
  --baselines-only, --naive-max-gflop 20 (see build/bin/attnc-bench --help)
USAGE
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
python="${ATTNC_PYTHON:-/usr/bin/python3}"   # Debian's, with numpy/matplotlib/torch

build="$root/build"
if [[ $# -gt 0 && $1 != -* ]]; then
  build="$(realpath -m "$1")"
  shift
fi
keep=0
bench_args=()
for arg in "$@"; do
  case "$arg" in
    --keep-inputs) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    *) bench_args+=("$arg") ;;
  esac
done

# Prints "DETECTED FORCED" when OpenBLAS detects only a pre-AVX2 core on a CPU
# with AVX2 or AVX-512, and nothing otherwise (or without $python).
openblas_core_for_cpu() {
  local detected flags best=""
  detected="$("$python" -c 'import ctypes
blas = ctypes.CDLL("libopenblas.so.0")
blas.openblas_get_corename.restype = ctypes.c_char_p
print(blas.openblas_get_corename().decode())' 2>/dev/null)" || return 0
  case "$detected" in
    Prescott|Core2|Penryn|Dunnington|Nehalem|Sandybridge|Atom|Katmai|Coppermine|Northwood|Banias|Barcelona|Opteron*|Bobcat) ;;
    *) return 0 ;;
  esac
  flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
  if [[ $flags == *" avx512bw "* && $flags == *" avx512vl "* && $flags == *" avx512dq "* ]]; then
    best=SkylakeX
    [[ $flags == *" avx512_bf16 "* ]] && best=Cooperlake
  elif [[ $flags == *" avx2 "* && $flags == *" fma "* ]]; then
    best=Haswell
  fi
  [[ -n "$best" ]] && echo "$detected $best"
  return 0
}

# OpenBLAS picks its kernels for the CPU it finds; an OPENBLAS_CORETYPE left in
# the environment (some set-ups force Haswell, i.e. AVX2 kernels, 2-3x slower on
# AVX-512 machines) would make the baseline look worse than it is.
if [[ -n "${ATTNC_BENCH_OPENBLAS_CORETYPE:-}" ]]; then
  export OPENBLAS_CORETYPE="$ATTNC_BENCH_OPENBLAS_CORETYPE"
elif [[ -n "${OPENBLAS_CORETYPE:-}" ]]; then
  echo "note: ignoring OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE so OpenBLAS detects this CPU" \
       "(set ATTNC_BENCH_OPENBLAS_CORETYPE to force a core)" >&2
  unset OPENBLAS_CORETYPE
fi

# Bookworm's OpenBLAS (0.3.21) falls back to its SSE3 "Prescott" kernels on a CPU
# it does not know (an Emerald Rapids Xeon, family 6 model 207, is one): 4-5x
# slower than its AVX-512 kernels there, which would flatter attnc by as much.
# Then force the newest core it has for the instructions this CPU has.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
  forced="$(openblas_core_for_cpu)"
  if [[ -n "$forced" ]]; then
    echo "note: OpenBLAS does not know this CPU (it picked ${forced%% *});" \
         "forcing OPENBLAS_CORETYPE=${forced##* } for its baselines" >&2
    export OPENBLAS_CORETYPE="${forced##* }"
  fi
fi

# OpenMP workers of a baseline (OpenBLAS, PyTorch) that spin after their call
# would steal the cores from the next row's attnc kernel; make them sleep.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

jobs="${ATTNC_BUILD_JOBS:-2}"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
fi
echo "== building attnc-bench in $build" >&2
cmake --build "$build" --target attnc-bench -j "$jobs"

attnc_args=()
echo "== building attnc" >&2
if cmake --build "$build" --target attnc -j "$jobs" >"$build/attnc-build.log" 2>&1 \
   && [[ -x "$build/bin/attnc" ]]; then
  attnc_args=(--attnc "$build/bin/attnc" --kernels "$here/kernels.attn")
else
  echo "note: attnc did not build (see $build/attnc-build.log);" \
       "measuring the machine and the baselines only" >&2
fi

out="$here/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
"$build/bin/attnc-bench" --out "$out" "${attnc_args[@]}" "${bench_args[@]}"

if [[ -x "$python" ]]; then
  "$python" "$here/torch_baseline.py" "$out" ||
    echo "warning: the PyTorch baseline failed; its column stays empty" >&2
  if [[ ${#attnc_args[@]} -gt 0 ]]; then
    "$python" "$here/python_overhead.py" "$out" "$build/bin/attnc" "$build" >/dev/null ||
      echo "warning: the Python call-overhead row failed" >&2
    "$python" "$here/backward.py" "$out" "$build" ||
      echo "warning: the training (backward) rows failed" >&2
  fi
  "$python" "$here/report.py" "$out" >/dev/null
else
  echo "warning: $python not found: no PyTorch baseline, table or roofline" >&2
fi
[[ $keep == 1 ]] || rm -rf "$out/work"

echo >&2
[[ -f "$out/table.md" ]] && cat "$out/table.md"
echo >&2
echo "results: $out" >&2
