#!/usr/bin/env bash
# The reproducer (issue 26) on a machine with an NVIDIA GPU: each faulting Triton program of
# the suite through `debug-ima --recipe pytorch --repro --yes`, then the reproducer it wrote
# run on its own (plain `python3 repro.py`, timed) from a folder outside the bundle. One block
# per case in OUTDIR/results.txt: the verdict line, the repro rung's note, result.json's
# status, the standalone run's exit and time, and what was left on the GPU.
#
# usage: tests/gpu/repro_suite.sh XTASK_BINARY OUTDIR [CASE...]
#        (cases: eager graph worker late rope strided; default all)
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=${2:?usage: repro_suite.sh XTASK_BINARY OUTDIR [CASE...]}
shift 2
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/../.." || exit 1
P=$(pwd)/tests/gpu/programs
CASES=${*:-eager graph worker late rope strided}
script_of() {
  case $1 in
    eager|graph|worker) echo "$P/vllm_shaped.py $1" ;;
    late) echo "$P/late_fault.py 5 300" ;;
    rope|strided) echo "$P/triton_from_module.py $1" ;;
  esac
}
for c in $CASES; do
  set -- $(script_of "$c")
  t0=$(date +%s.%N)
  timeout 500 "$XTASK" debug-ima --recipe pytorch --set script="$1" --set args="${2:-} ${3:-}" --repro --yes \
    --bundle-dir "$OUT/bundles/$c" > "$OUT/$c.out" 2> "$OUT/$c.err"
  rc=$?
  t=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
  b=$(ls -d "$OUT"/bundles/"$c"/*/ 2>/dev/null | head -1)
  {
    echo "== $c: exit $rc in ${t} s"
    grep -E '^(verdict|no verdict|  where|  launched|stopped|rungs)' "$OUT/$c.out"
    grep -E 'reproducer' "$OUT/$c.out" "$OUT/$c.err" | head -3
    [ -f "$b/repro/result.json" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('result:', d['status'], d.get('seconds'), d.get('seen')); [print('  note:', n) for n in d['notes']]" "$b/repro/result.json"
    if [ -f "$b/repro/repro.py" ]; then
      mkdir -p "$OUT/alone/$c" && cp "$b/repro/repro.py" "$OUT/alone/$c/"
      s0=$(date +%s.%N)
      ( cd "$OUT/alone/$c" && timeout 120 python3 repro.py > run.log 2>&1 ); rrc=$?
      echo "alone: exit $rrc in $(awk "BEGIN{print $(date +%s.%N) - $s0}") s: $(grep -E 'Error|error' "$OUT/alone/$c/run.log" | tail -1)"
    fi
    echo "left on the GPU: $(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ' ')"
  } >> "$OUT/results.txt"
done
find "$OUT" -name 'core_*' -size +1M -delete
cat "$OUT/results.txt"
