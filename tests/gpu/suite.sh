#!/usr/bin/env bash
# The GPU suite: runs `xtask debug-ima --yes` on every program of tests/gpu/expected.tsv on a
# machine with an NVIDIA GPU, and writes one line per case to RESULTS (verdict, the rungs,
# their times, leftover GPU processes). With OVERHEAD=1 it also times `--full` on the CUDA
# C++ cases against the same rungs run by a plain shell script (tests/gpu/record.sh).
#
# usage: tests/gpu/suite.sh XTASK_BINARY OUTDIR
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUTDIR=$2
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
P=tests/gpu/programs
BUILD=target/gpu-suite
mkdir -p "$BUILD"
RESULTS=$OUTDIR/results.tsv
printf 'case\tkernel\tfile\tline\terror\tfound_by\trungs\ttotal_s\texit\tleftover\n' > "$RESULTS"
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader > "$OUTDIR/nvidia-smi-query.txt" 2>&1

args_for() { # case -> xtask arguments
  local c=$1 src=${1%_G}
  case $c in
    torch_assert) echo "--recipe tests/gpu/python.yaml --set script=$P/torch_assert.py" ;;
    triton_eager|triton_graph|triton_worker)
      echo "--recipe tests/gpu/python.yaml --set script=$P/vllm_shaped.py --set args=${c#triton_}" ;;
    *_G) echo "--recipe cuda --device-debug --set build=nvcc\ -arch=sm_90\ -o\ $BUILD/$c\ $P/$src.cu --set run=$BUILD/$c --set binaries=$BUILD/$c" ;;
    *) echo "--recipe cuda --set build=nvcc\ -arch=sm_90\ -o\ $BUILD/$c\ $P/$src.cu --set run=$BUILD/$c --set binaries=$BUILD/$c" ;;
  esac
}

run_case() { # case extra-args...
  local c=$1; shift
  local args; args=$(args_for "$c")
  local t0; t0=$(date +%s.%N)
  eval "\"$XTASK\" debug-ima $args --yes --bundle-dir \"$OUTDIR/bundles/$c\" $*" > "$OUTDIR/$c.out" 2> "$OUTDIR/$c.err"
  local rc=$?
  local total; total=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
  local left; left=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ';')
  local b; b=$(ls -d "$OUTDIR/bundles/$c"/*/ | tail -1)
  python3 - "$b/findings.json" "$b/manifest.yaml" "$c" "$total" "$rc" "${left:-none}" >> "$RESULTS" <<'PY'
import json, sys, re
f, m, case, total, rc, left = sys.argv[1:]
v = json.load(open(f))["verdict"]
text = open(m).read()
rungs = re.findall(r"- rung: (\S+)\n\s+dir: .*\n\s+status: (\S+)\n\s+duration_s: ([0-9.]+)", text)
r = ",".join(f"{n}:{s}:{float(d):.1f}s" for n, s, d in rungs)
if v:
    print("\t".join([case, v["kernel"], str(v["file"]), str(v["line"]), v["error"], ",".join(v["rungs"]), r, total, rc, left]))
else:
    print("\t".join([case, "-", "-", "-", "-", "-", r, total, rc, left]))
PY
}

for c in $(grep -v '^#' tests/gpu/expected.tsv | cut -f1); do
  echo "== $c"
  run_case "$c"
  find "$OUTDIR/bundles/$c" -name 'core_*' -size +1M -delete   # dumps are large; logs stay
done

if [ "${OVERHEAD:-0}" = 1 ]; then
  cases="oob_write oob_read misaligned device_assert templated inlined graph_fault clean"
  RESULTS=$OUTDIR/results-full.tsv
  printf 'case\tkernel\tfile\tline\terror\tfound_by\trungs\ttotal_s\texit\tleftover\n' > "$RESULTS"
  t0=$(date +%s.%N)
  for c in $cases; do rm -f "$BUILD/$c"; run_case "$c" --full; done
  t_tool=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
  t0=$(date +%s.%N)
  PLAIN_LADDER=1 tests/gpu/record.sh "$OUTDIR/plain" $cases > "$OUTDIR/plain.out" 2>&1
  t_plain=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
  printf 'tool_full_s\t%s\nplain_script_s\t%s\n' "$t_tool" "$t_plain" > "$OUTDIR/overhead.tsv"
fi
echo "results in $RESULTS"
