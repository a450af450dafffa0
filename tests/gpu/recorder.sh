#!/usr/bin/env bash
# The launch recorder (issue 23 items 4 and 6, issue 21's Triton figures) on a machine with an
# NVIDIA GPU, PyTorch and Triton. Writes OUTDIR/recorder.md and OUTDIR/recorder.tar.gz (the
# bundles and logs, without dumps or cores): only a few files come back from a GPU call.
#
# Parts (PARTS="V C", the default, or a subset):
#   V  `debug-ima` with the default climb on the Triton programs (vllm_shaped.py eager, graph,
#      worker; EXTRA_PY: more `name=script:args` cases): the verdict's kernel, line, launch
#      and capture sites, and the recorder's own log of each run.
#   C  the recorder's cost, plain and with the recorder armed (its folder first on PYTHONPATH,
#      DEBUG_IMA_LAUNCHES set), 3 runs each alternating: launch_loop.py for LOOP_S (5) seconds
#      (launches a second) and late_fault.py for COST_S (15) seconds (steps done in the same
#      time, which the program prints before its last step).
#
# usage: [PARTS=...] tests/gpu/recorder.sh XTASK_BINARY OUTDIR
set -u
LC_NUMERIC=C
[ $# -ge 2 ] || { echo "usage: tests/gpu/recorder.sh XTASK_BINARY OUTDIR" >&2; exit 2; }
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"
OUTDIR=$(cd "$2" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
P=$ROOT/tests/gpu/programs
WORK=${WORK:-$(mktemp -d /tmp/recorder.XXXXXX)}
mkdir -p "$WORK"
PARTS=${PARTS:-V C}
COST_S=${COST_S:-15}
EXTRA_PY=${EXTRA_PY:-}
MD=$OUTDIR/recorder.md
: > "$MD"
md() { printf '%s\n' "$*" >> "$MD"; }
pack() { tar -czf "$OUTDIR/recorder.tar.gz" -C "$WORK" --exclude='core_*' --exclude='core.*' --exclude='*.nvcudmp' . 2>/dev/null; }
now() { date +%s.%N; }

verdict_row() { # name bundle seconds rc
  python3 - "$@" <<'PY'
import json, sys
name, b, secs, rc = sys.argv[1:]
try:
    v = json.load(open(f"{b}/findings.json")).get("verdict") or {}
except Exception as e:
    v = {"kernel": f"no findings.json: {e}"}
def site(h):
    if not h:
        return "-"
    return f"{h.get('file', '?')}:{h.get('line', '?')} ({h.get('from', '?')})"
print(f"| {name} | {v.get('kernel', '-')} | {v.get('file', '-')}:{v.get('line', '-')} | {v.get('error', '-')} "
      f"| {site(v.get('launch_site'))} | {site(v.get('captured_at'))} | {float(secs):.1f} | {rc} |")
PY
}

part_v() {
  md "## V. The default climb on Triton programs, with the recorder"
  md ""
  md "| case | kernel | line | class | launched | captured | s | exit |"
  md "|---|---|---|---|---|---|---|---|"
  local cases="eager=$P/vllm_shaped.py:eager graph=$P/vllm_shaped.py:graph worker=$P/vllm_shaped.py:worker $EXTRA_PY"
  for c in $cases; do
    local name=${c%%=*} rest=${c#*=}
    local script=${rest%%:*} args=${rest#*:}
    [ "$args" = "$rest" ] && args=""
    local bd=$WORK/bundles/$name
    local t0; t0=$(now)
    "$XTASK" debug-ima --recipe tests/gpu/python.yaml --set script="$script" --set args="$args" --yes \
      --bundle-dir "$bd" > "$WORK/$name.out" 2> "$WORK/$name.err"
    local rc=$?
    local s; s=$(awk "BEGIN{print $(now) - $t0}")
    local b; b=$(ls -d "$bd"/*/ 2>/dev/null | tail -1)
    "$XTASK" analyze "$b" > "$WORK/$name.analysis.txt" 2>&1
    verdict_row "$name" "$b" "$s" "$rc" >> "$MD"
    { echo "== $name: launches.log of each rung"; for l in "$b"/rungs/*/launches.log; do echo "-- $l"; cat "$l"; done; } >> "$WORK/launch-logs.txt" 2>&1
    echo "== $name leftovers: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | tr '\n' ' ')" >> "$WORK/leftovers.txt"
    pack
  done
  md ""
}

steps_of() { grep -o '[0-9]* steps; last step' "$1" | grep -o '^[0-9]*'; }
rate_of() { grep -o '[0-9]* launches/s' "$1" | grep -o '^[0-9]*'; }

part_c() {
  local rec=$WORK/rec
  mkdir -p "$rec/recorder" "$rec/rungs/01-baseline"
  cp "$ROOT/xtask/src/ladder/recorder.py" "$rec/recorder/sitecustomize.py"
  armed() { PYTHONPATH="$rec/recorder${PYTHONPATH:+:$PYTHONPATH}" DEBUG_IMA_LAUNCHES="$rec/rungs/01-baseline/launches.log" "$@"; }
  md "## C. The recorder's cost"
  md ""
  md "launch_loop.py (one trivial Triton kernel from one line, ${LOOP_S:-5} s), launches a second;"
  md "late_fault.py ($COST_S s of launches), steps done. Runs alternate plain and recorded."
  md ""
  md "| run | loop plain | loop recorded | late plain | late recorded |"
  md "|---|---|---|---|---|"
  for i in 1 2 3; do
    timeout 120 python3 "$P/launch_loop.py" "${LOOP_S:-5}" > "$WORK/loop-plain-$i.log" 2>&1
    armed timeout 120 python3 "$P/launch_loop.py" "${LOOP_S:-5}" > "$WORK/loop-rec-$i.log" 2>&1
    timeout 120 python3 "$P/late_fault.py" "$COST_S" > "$WORK/cost-plain-$i.log" 2>&1
    armed timeout 120 python3 "$P/late_fault.py" "$COST_S" > "$WORK/cost-rec-$i.log" 2>&1
    md "| $i | $(rate_of "$WORK/loop-plain-$i.log") | $(rate_of "$WORK/loop-rec-$i.log") | $(steps_of "$WORK/cost-plain-$i.log") | $(steps_of "$WORK/cost-rec-$i.log") |"
    pack
  done
  cp "$rec/rungs/01-baseline/launches.log" "$WORK/cost-launches.log" 2>/dev/null
  md ""
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$WORK/gpu.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" > "$WORK/versions.txt" 2>&1
for p in $PARTS; do
  case $p in
    V) part_v ;;
    C) part_c ;;
    *) md "unknown part $p" ;;
  esac
done
cp "$MD" "$WORK/"
pack
cat "$MD"
