#!/usr/bin/env bash
# Issue 25 on a machine with an NVIDIA GPU and no Slurm: a real one-host cluster (two node
# names, tests/gpu/slurm_up.sh from the carried .slurm-debs/) and the ladder through srun on
# the one GPU, as docs/slurm.md says a user runs it (`salloc ... debug-ima --launcher slurm`):
#   A   tests/gpu/programs/rank_fault.cu, 2 tasks (node1, node2): rank 1 faults, rank 0 ends
#       cleanly; the default climb.
#   A2  the same with `--rungs coredump,attach`: cuda-gdb reaches the waiting rank 1 through
#       `srun --overlap -w node2`.
#   B   tests/gpu/programs/rank_hang.cu, 3 tasks: ranks 0 and 2 spin in wait_for_peer, rank 1
#       in stuck_tile; `--hang-after 10`: every rank's GPU dump through its pipe, the odd one.
# Then what is left: the queue, the processes, the GPU's compute apps. Writes under OUTDIR:
# each climb's stdout/stderr, `analyze --json` of each bundle, the after-checks, the cluster's
# logs, and bundles.tar.gz (no dumps). The cluster is stopped when this ends.
#
# usage: tests/gpu/slurm_suite.sh XTASK_BINARY OUTDIR
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"; OUTDIR=$(cd "$2" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
S=${SLURM_DIR:-/tmp/slurm-gpu}
bash "$HERE/slurm_up.sh" "$S" > "$OUTDIR/slurm-up.log" 2>&1 || { tail -30 "$OUTDIR/slurm-up.log"; exit 1; }
eval "$(cat "$S/env")"
WORK=$(mktemp -d /tmp/slurmgpu.XXXXXX)
finish() {
  squeue -h -o '%i %j %T' > "$OUTDIR/squeue-after.txt" 2>&1
  ps -eo pid,args | grep -E 'rank_(fault|hang)|cuda-gdb|srun|compute-sanitizer' | grep -v grep > "$OUTDIR/ps-after.txt"
  nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader > "$OUTDIR/gpu-after.txt" 2>&1
  bash "$HERE/slurm_down.sh" "$S" > "$OUTDIR/slurm-down.log" 2>&1
  cp "$S"/*.log "$OUTDIR/" 2>/dev/null
  find "$WORK" \( -name 'core*' -o -name '*.nvcudmp' -o -name 'cpu-core' \) -type f -delete
  tar czf "$OUTDIR/bundles.tar.gz" -C "$WORK" . 2>/dev/null
}
trap finish EXIT
cp "$HERE/programs/rank_fault.cu" "$HERE/programs/rank_hang.cu" "$HERE/programs/check.h" "$WORK/"
cd "$WORK" || exit 2
export PATH=/usr/local/cuda/bin:$PATH
climb() { # name tasks program extra...
  local name=$1 n=$2 prog=$3; shift 3
  local t0=$SECONDS
  timeout 200 salloc -N2 -n"$n" -J "dbg-$name" "$XTASK" debug-ima --launcher slurm --recipe cuda \
    --set "build=nvcc -arch=sm_90 -lineinfo -g -o $prog $prog.cu" --set "run=./$prog" --set "binaries=$prog" \
    --yes --bundle-dir "$WORK/$name" "$@" > "$OUTDIR/$name.out" 2> "$OUTDIR/$name.err" < /dev/null
  echo "$name: exit $? in $((SECONDS - t0)) s" >> "$OUTDIR/summary.txt"
  local b; b=$(ls -d "$WORK/$name"/*/ 2>/dev/null | tail -1)
  [ -n "$b" ] && "$XTASK" analyze --json "$b" > "$OUTDIR/$name-analyze.json" 2>&1
}
# CLIMBS picks some (`A2 B`); A2 builds the program first, as A's baseline would (`--rungs`
# runs no baseline, which is what builds a missing binary).
for c in ${CLIMBS:-A A2 B}; do
  case $c in
    A) climb A 2 rank_fault ;;
    A2) nvcc -arch=sm_90 -lineinfo -g -o rank_fault rank_fault.cu && climb A2 2 rank_fault --rungs coredump,attach ;;
    B*) climb "$c" 3 rank_hang --hang-after 10 ;;
  esac
done
cat "$OUTDIR/summary.txt"
