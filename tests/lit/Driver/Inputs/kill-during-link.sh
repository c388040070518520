#!/bin/sh
# kill-during-link.sh DIR ATTNC: runs ATTNC on DIR/m.attn with the fake C
# compiler DIR/slowcc, sends SIGTERM once that compiler runs, and prints how
# many temporary files existed then and after attnc died, and its status.
dir=$1
attnc=$2
cd "$dir" || exit 1
TMPDIR="$dir/tmp" CC="$dir/slowcc" "$attnc" m.attn -o killed.so &
pid=$!
i=0
while [ ! -e cc.pid ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
echo "temp files while linking: $(ls tmp | wc -l)"
kill -TERM $pid
wait $pid
echo "attnc status: $?"
kill "$(cat cc.pid)" 2>/dev/null
echo "temp files after SIGTERM: $(ls tmp | wc -l)"
