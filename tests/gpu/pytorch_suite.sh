#!/usr/bin/env bash
# The PyTorch cases of the GPU suite through the built-in `pytorch` recipe:
# `xtask debug-ima --recipe pytorch --set script=... --yes` on each, one line per case in
# OUTDIR/results.txt (verdict line, stop reason, rungs), GPU processes left afterwards.
#
# usage: tests/gpu/pytorch_suite.sh XTASK_BINARY OUTDIR [dist]
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=$2
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
P=tests/gpu/programs
run() { # name xtask-args...
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$XTASK" debug-ima --recipe pytorch "$@" --yes --bundle-dir "$OUT/bundles/$name" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local rc=$?
  local t; t=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
  {
    echo "== $name: exit $rc in ${t} s"
    grep -E '^(verdict|no verdict|  where|stopped|rungs)' "$OUT/$name.out"
    echo "left on the GPU: $(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ' ')"
    echo "python processes: $(ps -eo pid,ppid,stat,comm | awk '$4 ~ /python/' | tr '\n' ';')"
  } >> "$OUT/results.txt"
}
if [ "${3:-}" = dist ]; then
  run dist_fault --set "launcher=-m torch.distributed.run --nproc-per-node 2" --set script=$P/dist_fault.py
else
  run torch_assert --set script=$P/torch_assert.py
  run triton_eager --set script=$P/vllm_shaped.py --set args=eager
  run triton_graph --set script=$P/vllm_shaped.py --set args=graph
  run triton_worker --set script=$P/vllm_shaped.py --set args=worker
fi
find "$OUT" -name 'core_*' -size +1M -delete
cat "$OUT/results.txt"
