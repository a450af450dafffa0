#!/usr/bin/env bash
# Records the launch recorder's capture mode (issue 26) by hand, without the tool: each case
# runs under CUDA_LAUNCH_BLOCKING=1 with the recorder as sitecustomize, DEBUG_IMA_CAPTURE naming
# its kernel; OUTDIR/CASE/ gets the output and the capture-PID.json files.
# usage: tests/gpu/capture_raw.sh OUTDIR
set -u
OUT=${1:?usage: capture_raw.sh OUTDIR}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
P=$ROOT/tests/gpu/programs
REC=$(mktemp -d); cp "$ROOT/xtask/src/ladder/recorder.py" "$REC/sitecustomize.py"
one() { # name kernel script args...
  local name=$1 kernel=$2; shift 2
  mkdir -p "$OUT/$name"
  ( cd "$P" && PYTHONPATH="$REC" DEBUG_IMA_LAUNCHES="$OUT/$name/launches.log" DEBUG_IMA_CAPTURE="$kernel" \
    DEBUG_IMA_CAPTURE_DIR="$OUT/$name" CUDA_LAUNCH_BLOCKING=1 timeout 120 python3 "$@" ) > "$OUT/$name/out.log" 2>&1
  echo "[exit $?]" >> "$OUT/$name/out.log"
}
one eager gather_kv_kernel vllm_shaped.py eager
one graph gather_kv_kernel vllm_shaped.py graph
one worker gather_kv_kernel vllm_shaped.py worker
one late scatter_rows_kernel late_fault.py 5 300
one rope rope_rows_kernel triton_from_module.py rope
one strided strided_copy_kernel triton_from_module.py strided
rm -rf "$REC"
