#!/usr/bin/env bash
# The sweep's cost on a clean program (issue 23's done-when: under 2x the memcheck sweep of
# before, memcheck and initcheck): `debug-ima --recipe cuda` with the default climb and
# `--retries 0` on tests/gpu/programs/clean_layers.cu (`ARGS`, default `1024 4`: N and layers),
# REPEAT (2) times; prints each rung's
# seconds from the manifest and the sums (memcheck+initcheck against the whole sweep). Writes
# OUTDIR/sweep.md and OUTDIR/sweep-bundles.tar.gz.
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
  echo "| run | baseline | memcheck | initcheck | racecheck | synccheck | memcheck+initcheck | sweep | ratio | stopped |"
  echo "|---|---|---|---|---|---|---|---|---|---|"; } > "$MD"
for i in $(seq 1 "${REPEAT:-2}"); do
  "$XTASK" debug-ima --recipe cuda --set "build=nvcc -arch=sm_90 -o clean_layers clean_layers.cu" \
    --set "run=./clean_layers ${ARGS:-1024 4}" --set binaries=clean_layers --yes --retries 0 --bundle-dir "$WORK/b$i" \
    > "$WORK/tool-$i.out" 2> "$WORK/tool-$i.err" < /dev/null
  rm -f clean_layers
  m=$(ls -d "$WORK/b$i"/*/ | tail -1)manifest.yaml
  python3 - "$m" "$i" >> "$MD" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
d = {n: float(s) for n, s in re.findall(r"- rung: (\S+)\n\s+dir: .*\n\s+status: \S+\n\s+duration_s: ([0-9.]+)", text)}
g = lambda k: d.get(k, 0.0)
old, new = g("memcheck") + g("initcheck"), sum(g(k) for k in ("memcheck", "initcheck", "racecheck", "synccheck"))
stopped = (re.search(r"^stopped: (.*)$", text, re.M) or [None, "-"])[1].strip("'\"")[:120]
cells = [f"{g(k):.1f}" for k in ("baseline", "memcheck", "initcheck", "racecheck", "synccheck")]
print(f"| {sys.argv[2]} | " + " | ".join(cells) + f" | {old:.1f} | {new:.1f} | {new / old if old else 0:.2f} | {stopped} |")
PY
done
find "$WORK" -name 'core*' -delete
tar czf "$OUTDIR/sweep-bundles.tar.gz" -C "$WORK" . 2>/dev/null
cat "$MD"
