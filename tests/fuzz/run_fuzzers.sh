#!/bin/sh
# Runs every libFuzzer target of a fuzzing build (ATTNC_FUZZ=ON, clang, ASan +
# UBSan; scripts/test.sh makes one in build-asan) for FUZZ_SECONDS each
# (default 30) on its seed corpus. FUZZERS="npy_fuzzer ..." picks a subset;
# FUZZ_JOBS targets run at once (default: the CPU count; each is one process
# on one core, so two cores fuzz five targets in three rounds, not five).
# Exits non-zero on any crash, sanitizer report, leak or timeout, after
# printing where the reproducer is and how to turn it into a regression test.
# usage: tests/fuzz/run_fuzzers.sh BUILD_DIR [WORK_DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: run_fuzzers.sh BUILD_DIR [WORK_DIR]}" && pwd)
WORK=${2:-$BUILD/fuzz-work}
SECONDS_EACH=${FUZZ_SECONDS:-30}
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
FUZZERS=${FUZZERS:-frontend_fuzzer npy_fuzzer elf_fuzzer argcheck_fuzzer mlir_fuzzer}
mkdir -p "$WORK"

# attn IR seeds: every split of the dialect and pass tests, fresh each run.
split_mlir() {
  mkdir -p "$1"
  for f in "$ROOT"/tests/lit/Dialect/*/*.mlir "$ROOT"/tests/lit/Transforms/*.mlir; do
    [ -f "$f" ] || continue
    awk -v out="$1/$(basename "$f" .mlir)" '
      /^\/\/ -----/ { n++; next }
      /^[ \t]*\/\// { next }
      { print > (out "-" n ".mlir") }' n=0 "$f"
  done
}

# One target: its log and verdict go to files, printed in FUZZERS' order
# once its round has ended (targets of a round run side by side).
fuzz_one() {
  name=$1
  bin="$BUILD/bin/$name"
  short=${name%_fuzzer}
  rm -f "$WORK/$short.verdict" "$WORK/$short.failed"
  corpus="$WORK/$short-corpus"
  crashes="$WORK/$short-crashes"
  mkdir -p "$corpus" "$crashes"
  seeds="$ROOT/tests/fuzz/corpus/$short"
  extra=""
  case $short in
    frontend) extra="-dict=$ROOT/tests/fuzz/attn.dict -max_len=65536" ;;
    npy) extra="-max_len=4096" ;;
    elf) extra="-max_len=32768" ;;
    argcheck) extra="-max_len=256" ;;
    # MLIR 14's parser leaks the ops of some regions it fails to parse
    # (upstream, in libMLIR): leaks are not findings for this target.
    mlir) extra="-dict=$ROOT/tests/fuzz/mlir.dict -max_len=8192"
          split_mlir "$WORK/mlir-seeds"; seeds="$seeds $WORK/mlir-seeds" ;;
  esac
  [ -d "$ROOT/tests/fuzz/regressions/$name" ] && seeds="$seeds $ROOT/tests/fuzz/regressions/$name"
  log="$WORK/$short.log"
  leaks=1
  [ "$short" = mlir ] && leaks=0
  # shellcheck disable=SC2086
  if ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=$leaks" "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$crashes/" $extra \
      "$corpus" $seeds >"$log" 2>&1; then
    {
      grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$log" || true
      echo "$name: no crash in ${SECONDS_EACH}s"
    } >"$WORK/$short.verdict"
  else
    {
      tail -n 60 "$log"
      echo "$name: FAILED; reproducer(s) in $crashes:"
      ls "$crashes"
      echo "replay: $bin <file>; keep it as a regression test: cp <file> $ROOT/tests/fuzz/regressions/$name/"
    } >"$WORK/$short.verdict"
    touch "$WORK/$short.failed"
  fi
}

for name in $FUZZERS; do
  if [ ! -x "$BUILD/bin/$name" ]; then
    echo "run_fuzzers: $BUILD/bin/$name is missing (configure with -DATTNC_FUZZ=ON)" >&2
    exit 2
  fi
done

status=0
set -- $FUZZERS
while [ $# -gt 0 ]; do
  round="" n=0
  while [ $# -gt 0 ] && [ "$n" -lt "$JOBS" ]; do
    round="$round $1" n=$((n + 1))
    shift
  done
  for name in $round; do
    echo "== $name: ${SECONDS_EACH}s =="
    fuzz_one "$name" &
  done
  wait
  for name in $round; do
    short=${name%_fuzzer}
    if [ ! -e "$WORK/$short.verdict" ]; then
      status=1
      echo "$name: FAILED; its run ended without a report (log: $WORK/$short.log)" >&2
    elif [ -e "$WORK/$short.failed" ]; then
      status=1
      cat "$WORK/$short.verdict" >&2
    else
      cat "$WORK/$short.verdict"
    fi
  done
done
exit $status
