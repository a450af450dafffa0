#!/usr/bin/env bash
# The reproducer (issue 26) on a machine with an NVIDIA GPU: each faulting Triton program of
# the suite through `debug-ima --recipe pytorch --repro --yes`, then the reproducer it wrote
# run on its own (plain `python3 repro.py`, timed) from a folder outside the bundle. One block
# per case in OUTDIR/results.txt: the verdict line, the repro rung's note, result.json's
# status, the standalone run's exit and time, and what was left on the GPU.
#
# usage: tests/gpu/repro_suite.sh XTASK_BINARY OUTDIR [CASE...]
#        (cases: eager graph worker late rope strided floatidx aten atenidx cost, and the C++ ones
#        oob_write oob_read templated inlined misaligned device_assert graph_fault cublas_fault
#        through the cuda recipe; default the Python ones and cost;
#        floatidx is expected not to reproduce and must say why; aten and atenidx are ATen
#        operators' kernels, whose operator call is captured; cost runs
#        launch_loop.py for 5 s each: plain, with the recorder, with the recorder capturing
#        another kernel, under launch-blocking, and under launch-blocking capturing its kernel,
#        the capture run's own cost; launches a second in OUTDIR/cost.txt)
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=${2:?usage: repro_suite.sh XTASK_BINARY OUTDIR [CASE...]}
shift 2
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/../.." || exit 1
P=$(pwd)/tests/gpu/programs
CASES=${*:-eager graph worker late rope strided floatidx aten atenidx cost}
cost() {
  local rec; rec=$(mktemp -d); cp "$(pwd)/xtask/src/ladder/recorder.py" "$rec/sitecustomize.py"
  for round in 1 2; do
    for mode in plain recorder other blocking capture; do
      local env=()
      case $mode in
        recorder) env=(PYTHONPATH="$rec" DEBUG_IMA_LAUNCHES="$rec/l.log") ;;
        other) env=(PYTHONPATH="$rec" DEBUG_IMA_LAUNCHES="$rec/l.log" DEBUG_IMA_CAPTURE=not_this_one DEBUG_IMA_CAPTURE_DIR="$rec") ;;
        blocking) env=(CUDA_LAUNCH_BLOCKING=1) ;;
        capture) env=(CUDA_LAUNCH_BLOCKING=1 PYTHONPATH="$rec" DEBUG_IMA_LAUNCHES="$rec/l.log" DEBUG_IMA_CAPTURE=add_one DEBUG_IMA_CAPTURE_DIR="$rec") ;;
      esac
      echo "round $round $mode: $(env "${env[@]}" timeout 60 python3 "$P/launch_loop.py" 5 2>&1 | tail -1)"
    done
  done > "$OUT/cost.txt"
  rm -rf "$rec"
}
script_of() {
  case $1 in
    eager|graph|worker) echo "$P/vllm_shaped.py $1" ;;
    late) echo "$P/late_fault.py 5 300" ;;
    rope|strided) echo "$P/triton_from_module.py $1" ;;
    floatidx) echo "$P/triton_float_index.py" ;;
    aten) echo "$P/aten_async.py" ;;
    atenidx) echo "$P/aten_index.py" ;;
  esac
}
NATIVE="oob_write oob_read templated inlined misaligned device_assert graph_fault cublas_fault"
BUILD=$(mktemp -d)
for c in $CASES; do
  if [ "$c" = cost ]; then cost; continue; fi
  t0=$(date +%s.%N)
  if [[ " $NATIVE " == *" $c "* ]]; then
    extra=""; [ "$c" = cublas_fault ] && extra="-lcublas"
    timeout 500 "$XTASK" debug-ima --recipe cuda --set "build=nvcc -arch=sm_90 -o $BUILD/$c $P/$c.cu $extra" \
      --set "run=$BUILD/$c" --set "binaries=$BUILD/$c" --repro --yes \
      --bundle-dir "$OUT/bundles/$c" > "$OUT/$c.out" 2> "$OUT/$c.err"
    rc=$?
  else
    set -- $(script_of "$c")
    timeout 500 "$XTASK" debug-ima --recipe pytorch --set script="$1" --set args="${2:-} ${3:-}" --repro --yes \
      --bundle-dir "$OUT/bundles/$c" > "$OUT/$c.out" 2> "$OUT/$c.err"
    rc=$?
  fi
  t=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
  b=$(ls -d "$OUT"/bundles/"$c"/*/ 2>/dev/null | head -1)
  {
    echo "== $c: exit $rc in ${t} s"
    grep -E '^(verdict|no verdict|  where|  launched|stopped|rungs)' "$OUT/$c.out"
    grep -E 'reproducer' "$OUT/$c.out" "$OUT/$c.err" | head -3
    [ -f "$b/repro/result.json" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('result:', d['status'], d.get('seconds'), d.get('seen')); [print('  note:', n) for n in d['notes']]" "$b/repro/result.json"
    if [ -x "$b/repro/repro" ]; then
      s0=$(date +%s.%N)
      ( cd "$b/repro" && timeout 120 ./repro > alone.log 2>&1 ); rrc=$?
      echo "alone: exit $rrc in $(awk "BEGIN{print $(date +%s.%N) - $s0}") s: $(tail -1 "$b/repro/alone.log")"
    fi
    if [ -f "$b/repro/repro.py" ]; then
      mkdir -p "$OUT/alone/$c" && cp "$b/repro/repro.py" "$OUT/alone/$c/"
      s0=$(date +%s.%N)
      ( cd "$OUT/alone/$c" && timeout 120 python3 repro.py > run.log 2>&1 ); rrc=$?
      echo "alone: exit $rrc in $(awk "BEGIN{print $(date +%s.%N) - $s0}") s: $(grep -E 'Error|error' "$OUT/alone/$c/run.log" | tail -1)"
    fi
    echo "left on the GPU: $(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ' ')"
  } >> "$OUT/results.txt"
done
find "$OUT" -name 'core_*' -delete; find "$OUT" -name '*.o' -delete; rm -rf "$BUILD"
cat "$OUT/results.txt"; cat "$OUT/cost.txt" 2>/dev/null
