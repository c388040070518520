#!/bin/sh
# Builds the frontend fuzzer straight from the sources (no CMake) with
# libFuzzer + ASan + UBSan and runs it for FUZZ_SECONDS (default 60) on the
# seed corpus. Exits non-zero on any crash, sanitizer report or leak.
# usage: tests/fuzz/run_fuzzers.sh [WORK_DIR]
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-${TMPDIR:-/tmp}/attnc-fuzz}
SECONDS_TO_RUN=${FUZZ_SECONDS:-60}
mkdir -p "$WORK/corpus"
cp "$ROOT"/tests/fuzz/corpus/* "$WORK/corpus/"

clang++-14 -std=c++17 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$ROOT" \
  "$ROOT"/compiler/Frontend/AST.cpp \
  "$ROOT"/compiler/Frontend/ASTDump.cpp \
  "$ROOT"/compiler/Frontend/Diagnostics.cpp \
  "$ROOT"/compiler/Frontend/Frontend.cpp \
  "$ROOT"/compiler/Frontend/Lexer.cpp \
  "$ROOT"/compiler/Frontend/Parser.cpp \
  "$ROOT"/compiler/Frontend/Sema.cpp \
  "$ROOT"/compiler/Frontend/SemaExpr.cpp \
  "$ROOT"/compiler/Frontend/Signature.cpp \
  "$ROOT"/compiler/Frontend/Suggest.cpp \
  "$ROOT"/compiler/Frontend/Token.cpp \
  "$ROOT"/tests/fuzz/frontend_fuzzer.cpp \
  -o "$WORK/frontend_fuzzer"

cd "$WORK"
./frontend_fuzzer -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -dict="$ROOT/tests/fuzz/attn.dict" -print_final_stats=1 corpus
echo "frontend_fuzzer: no crash in ${SECONDS_TO_RUN}s"
