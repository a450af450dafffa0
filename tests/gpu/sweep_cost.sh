#!/usr/bin/env bash
# The sweep's cost on a clean program (issue 23's done-when: under 2x the memcheck sweep of
# before, memcheck and initcheck): `debug-ima --recipe cuda` with the default climb and
# `--retries 0` on tests/gpu/programs/clean_layers.cu (`ARGS`, default `1024 4`: N and layers),
# REPEAT (2) times; prints each rung's
# seconds from the manifest and the sums (memcheck+initcheck against the whole sweep). Since
# the sweep's runs go side by side (they start together), the sweep's time is the longest of
# its runs, and each repeat also runs `--rungs baseline,memcheck,initcheck` (one at a time,
# as `--rungs` always is): the memcheck sweep of before, on the same machine at the same time,
# which the ratio divides by. Writes OUTDIR/sweep.md and OUTDIR/sweep-bundles.tar.gz.
#
# usage: tests/gpu/sweep_cost.sh XTASK_BINARY OUTDIR
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"; OUTDIR=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/sweep.XXXXXX)}
cp "$HERE/programs/clean_layers.cu" "$HERE/programs/check.h" "$WORK/"
cd "$WORK" || exit 2
MD=$OUTDIR/sweep.md
{ echo "# The sweep on a clean program (tests/gpu/sweep_cost.sh)"; echo
  echo "$(date -u +%FT%TZ); $(nvidia-smi -L | head -1); $("$XTASK" --version); clean_layers ${ARGS:-1024 4}"; echo
  echo "| run | baseline | memcheck | initcheck | racecheck | synccheck | memcheck+initcheck alone | sweep (longest run) | ratio | stopped |"
  echo "|---|---|---|---|---|---|---|---|---|---|"; } > "$MD"
for i in $(seq 1 "${REPEAT:-2}"); do
  for how in alone default; do
    rungs=()
    [ "$how" = alone ] && rungs=(--rungs baseline,memcheck,initcheck)
    "$XTASK" debug-ima --recipe cuda --set "build=nvcc -arch=sm_90 -o clean_layers clean_layers.cu" \
      --set "run=./clean_layers ${ARGS:-1024 4}" --set binaries=clean_layers --yes --retries 0 "${rungs[@]}" \
      --bundle-dir "$WORK/$how$i" > "$WORK/tool-$how-$i.out" 2> "$WORK/tool-$how-$i.err" < /dev/null
    rm -f clean_layers
  done
  python3 - "$(ls -d "$WORK/alone$i"/*/ | tail -1)manifest.yaml" "$(ls -d "$WORK/default$i"/*/ | tail -1)manifest.yaml" "$i" >> "$MD" <<'PY'
import re, sys
def rungs(path):
    text = open(path).read()
    d = {n: float(s) for n, s in re.findall(r"- rung: (\S+)\n\s+dir: .*\n\s+status: \S+\n\s+duration_s: ([0-9.]+)", text)}
    return d, text
alone, _ = rungs(sys.argv[1])
d, text = rungs(sys.argv[2])
g = lambda k: d.get(k, 0.0)
old = alone.get("memcheck", 0.0) + alone.get("initcheck", 0.0)
new = max(g(k) for k in ("memcheck", "initcheck", "racecheck", "synccheck"))
stopped = (re.search(r"^stopped: (.*)$", text, re.M) or [None, "-"])[1].strip("'\"")[:120]
cells = [f"{g(k):.1f}" for k in ("baseline", "memcheck", "initcheck", "racecheck", "synccheck")]
print(f"| {sys.argv[3]} | " + " | ".join(cells) + f" | {old:.1f} | {new:.1f} | {new / old if old else 0:.2f} | {stopped} |")
PY
done
find "$WORK" -name 'core*' -delete
tar czf "$OUTDIR/sweep-bundles.tar.gz" -C "$WORK" . 2>/dev/null
cat "$MD"
