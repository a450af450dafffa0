#!/usr/bin/env bash
# Issue 25's odd rank out, on one GPU without Slurm: tests/gpu/programs/hang_odd_rank.py (four
# ranks, one in a long kernel, three waiting on the host) under the hang rung, the way a user
# runs it. Writes OUTDIR/odd-rank.tar.gz (the bundle, the tool's output).
#
# usage: tests/gpu/odd_rank.sh XTASK_BINARY OUTDIR
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"; OUT=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/odd.XXXXXX)
cp "$HERE/programs/hang_odd_rank.py" "$W/"
cd "$W" || exit 2
timeout -k 10 240 "$XTASK" debug-ima --recipe pytorch --set script=hang_odd_rank.py --hang-after 25 --timeout 200 \
  --yes --bundle-dir "$W/bundles" > tool.out 2> tool.err < /dev/null
echo "exit $?" >> tool.out
b=$(ls -d "$W"/bundles/*/ | tail -1)
"$XTASK" analyze "$b" > analyze.txt 2>&1
"$XTASK" analyze --json "$b" > analyze.json 2>&1
find "$W" -name 'core*' -size +50M -delete
ps -eo pid,args | grep -c "[h]ang_odd_rank" > left.txt
tar czf "$OUT/odd-rank.tar.gz" -C "$W" .
grep -E "verdict|odd one|process:" analyze.txt | head -20
cat left.txt
