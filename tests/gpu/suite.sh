#!/usr/bin/env bash
# The GPU suite: runs `xtask debug-ima --yes` on the programs of tests/gpu/expected.tsv on a
# machine with an NVIDIA GPU and writes one line per case to OUTDIR/results.tsv (verdict,
# launch site, the rungs and their times, GPU processes left). With RATIO=1 it also times, per
# case, `--full` and the full manual ladder as an expert scripts it by hand (the same rungs:
# tests/gpu/manual_ladder.sh), each from a fresh build, into OUTDIR/ratio.tsv.
#
# usage: tests/gpu/suite.sh XTASK_BINARY OUTDIR [CASE...]
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUTDIR=$2
shift 2
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
P=tests/gpu/programs
BUILD=target/gpu-suite
mkdir -p "$BUILD"
RESULTS=$OUTDIR/results.tsv
RATIO_TSV=$OUTDIR/ratio.tsv
[ -f "$RESULTS" ] || printf 'case\tmode\tkernel\tfile\tline\terror\tlaunch\tfound_by\trungs\ttotal_s\texit\tleftover\tstopped\n' > "$RESULTS"
[ -f "$RATIO_TSV" ] || printf 'case\tdefault_s\tfull_s\tmanual_s\tdefault_ratio\tfull_ratio\n' > "$RATIO_TSV"
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader > "$OUTDIR/nvidia-smi-query.txt" 2>&1

src_of() { local c=${1%_G}; case $c in stencil_fixed) echo stencil_neighbour ;; *) echo "$c" ;; esac; }
defs_of() { case $1 in stencil_fixed) echo "-DFIXED" ;; *) echo "" ;; esac; }
python_case() { case $1 in torch_assert|aten_async|no_cuda_failure|triton_*) return 0 ;; *) return 1 ;; esac; }

args_for() { # case -> xtask arguments
  local c=$1 src; src=$(src_of "$1")
  local defs; defs=$(defs_of "$c")
  case $c in
    triton_eager|triton_graph|triton_worker)
      echo "--recipe tests/gpu/python.yaml --set script=$P/vllm_shaped.py --set args=${c#triton_}" ;;
    torch_assert|aten_async|no_cuda_failure) echo "--recipe tests/gpu/python.yaml --set script=$P/$c.py" ;;
    *_G) echo "--recipe cuda --device-debug --set build=nvcc\ -arch=sm_90\ -o\ $BUILD/$c\ $P/$src.cu --set run=$BUILD/$c --set binaries=$BUILD/$c" ;;
    *) echo "--recipe cuda --set build=nvcc\ -arch=sm_90\ $defs\ -o\ $BUILD/$c\ $P/$src.cu --set run=$BUILD/$c --set binaries=$BUILD/$c" ;;
  esac
}

now() { date +%s.%N; }
LAST_S=0
run_case() { # case mode extra-args...
  local c=$1 mode=$2; shift 2
  local args; args=$(args_for "$c")
  rm -f "$BUILD/$c"
  local t0; t0=$(now)
  eval "\"$XTASK\" debug-ima $args --yes --bundle-dir \"$OUTDIR/bundles/$c-$mode\" $*" > "$OUTDIR/$c-$mode.out" 2> "$OUTDIR/$c-$mode.err"
  local rc=$?
  LAST_S=$(awk "BEGIN{print $(now) - $t0}")
  local left; left=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ';')
  local b; b=$(ls -d "$OUTDIR/bundles/$c-$mode"/*/ | tail -1)
  python3 - "$b/findings.json" "$b/manifest.yaml" "$c" "$mode" "$LAST_S" "$rc" "${left:-none}" >> "$RESULTS" <<'PY'
import json, sys, re
f, m, case, mode, total, rc, left = sys.argv[1:]
v = json.load(open(f))["verdict"]
text = open(m).read()
rungs = re.findall(r"- rung: (\S+)\n\s+dir: .*\n\s+status: (\S+)\n\s+duration_s: ([0-9.]+)", text)
r = ",".join(f"{n}:{s}:{float(d):.1f}s" for n, s, d in rungs)
stopped = re.search(r"^stopped: (.*)$", text, re.M)
stopped = (stopped.group(1) if stopped else "-").strip("'\"")[:160]
if v:
    ls = v.get("launch_site") or {}
    launch = f"{ls.get('file', '?')}:{ls.get('line', '?')}" if ls else "unknown"
    print("\t".join([case, mode, v["kernel"], str(v["file"]), str(v["line"]), v["error"], launch, ",".join(v["rungs"]), r, total, rc, left, stopped]))
else:
    print("\t".join([case, mode, "-", "-", "-", "-", "-", "-", r, total, rc, left, stopped]))
PY
  find "$OUTDIR/bundles/$c-$mode" -name 'core_*' -size +1M -delete   # dumps are large; logs stay
}

manual() { # case -> seconds of the manual ladder, scripted
  local c=$1 src; src=$(src_of "$c")
  local t0; t0=$(now)
  if python_case "$c"; then
    local script=$P/$c.py args=""
    case $c in triton_*) script=$P/vllm_shaped.py; args=${c#triton_} ;; esac
    tests/gpu/manual_ladder.sh "$OUTDIR/manual/$c" - - python3 "$script" $args > /dev/null 2>&1
  else
    local dbg=-lineinfo; case $c in *_G) dbg=-G ;; esac
    rm -f "$BUILD/$c"
    tests/gpu/manual_ladder.sh "$OUTDIR/manual/$c" "nvcc -arch=sm_90 $(defs_of "$c") -o $BUILD/$c $P/$src.cu" "$dbg" "$BUILD/$c" > /dev/null 2>&1
  fi
  awk "BEGIN{print $(now) - $t0}"
}

CASES=("$@")
[ ${#CASES[@]} -eq 0 ] && mapfile -t CASES < <(grep -v '^#' tests/gpu/expected.tsv | cut -f1)
for c in "${CASES[@]}"; do
  echo "== $c"
  run_case "$c" default
  d=$LAST_S
  if [ "${RATIO:-0}" = 1 ]; then
    run_case "$c" full --full
    f=$LAST_S
    m=$(manual "$c")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$d" "$f" "$m" "$(awk "BEGIN{printf \"%.2f\", $d / $m}")" "$(awk "BEGIN{printf \"%.2f\", $f / $m}")" >> "$RATIO_TSV"
  fi
done
echo "results in $RESULTS"
