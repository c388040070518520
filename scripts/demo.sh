#!/usr/bin/env bash
# The main job, from a fresh machine: install what is missing, build, compile
# examples/i_am_good/i_am_good.attn with attnc, link it into a C app, run it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD_DIR="${ATTNC_BUILD_DIR:-build}"
work="$BUILD_DIR/demo"
mkdir -p "$work"
"$BUILD_DIR/bin/attnc" examples/i_am_good/i_am_good.attn -o "$work/i_am_good.o"
cc -O2 -I "$work" examples/i_am_good/main.c "$work/i_am_good.o" -o "$work/i_am_good" -lpthread -ldl -lm
"$work/i_am_good"
