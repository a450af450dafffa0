#!/usr/bin/env bash
# The hang suite (issue 14): runs `xtask debug-ima --yes --hang-after SECS` on the hang
# programs of tests/gpu/programs/ on a machine with an NVIDIA GPU, and writes one line per
# case to OUTDIR/hang.tsv: the verdict line, the seconds the run took against hang_after + 30,
# the exit code, and the processes of the program left afterwards (none is the goal).
#
# usage: tests/gpu/hang_suite.sh XTASK_BINARY OUTDIR [CASE...]   (py-spy on PATH for Python)
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUTDIR=$2
shift 2
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
P=tests/gpu/programs
BUILD=target/gpu-hang
mkdir -p "$BUILD"
HANG=${HANG:-5}
TSV=$OUTDIR/hang.tsv
[ -f "$TSV" ] || printf 'case\tverdict\tseconds\tbudget_s\texit\tleft\n' > "$TSV"
nvcc -arch=sm_90 -lineinfo -g -o "$BUILD/hang_flag" "$P/hang_flag.cu" > "$OUTDIR/build.log" 2>&1

args_for() {
  case $1 in
    hang_flag) echo "--recipe cuda --set build=true --set run=$BUILD/hang_flag --set binaries=$BUILD/hang_flag" ;;
    hang_triton|hang_two_procs|hang_nccl) echo "--recipe tests/gpu/python.yaml --set script=$P/$1.py" ;;
  esac
}

want() { [ $# -eq 0 ] || [[ " $* " == *" $CASE "* ]]; }
for CASE in hang_flag hang_triton hang_two_procs hang_nccl; do
  want "$@" || continue
  # shellcheck disable=SC2046
  t0=$(date +%s.%N)
  "$XTASK" debug-ima --yes --hang-after "$HANG" --bundle-dir "$OUTDIR/bundles-$CASE" $(args_for "$CASE") \
    > "$OUTDIR/$CASE.out" 2> "$OUTDIR/$CASE.err"
  rc=$?
  secs=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
  sleep 1
  # The programs' own command lines only (this script's caller may name them too).
  pat="gpu-hang/hang_flag|programs/hang_triton.py|programs/hang_two_procs.py|programs/hang_nccl.py|multiprocessing.spawn"
  left=$(pgrep -fa "$pat" | grep -v -e pgrep | tr '\n' ';')
  verdict=$(grep -m1 '^verdict:' "$OUTDIR/$CASE.out" || echo "(no verdict)")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$CASE" "$verdict" "$secs" "$((HANG + 30))" "$rc" "${left:-none}" >> "$TSV"
  pkill -9 -f "$pat" 2>/dev/null
done
cat "$TSV"
