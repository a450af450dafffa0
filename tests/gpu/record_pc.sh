#!/usr/bin/env bash
# Records, on a machine with an NVIDIA GPU, what cuda-gdb shows around the PC for the kinds
# whose faulting instruction is not the reported one (issue 23): a `__trap()` (no `$errorpc`;
# the PC is past the BPT.TRAP), an invalid `__syncwarp` mask (illegal instruction in CUDA's
# header), and a block hung in divergent `__syncthreads()` (a user-triggered dump). Each case
# is built with its own Makefile plus `-lineinfo` (as the ladder builds), run armed as the
# ladder's baseline arms it, and each dump read twice: with the ladder's commands (as in the
# bundle) and with the extra commands the fix reads (`x/3i $pc-32`, `info line *($pc-16)`).
# Also: the two-bugs program under plain, armed and memcheck runs, timed.
#
# usage: tests/gpu/record_pc.sh OUTDIR      (writes OUTDIR/<case>/*.log, *.exit)
set -u
OUT=${1:?usage: record_pc.sh OUTDIR}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d /tmp/ima-pc.XXXXXX)}
SKIP=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
tool() { # NAME DIR -- CMD...
  local name=$1 d=$2; shift 3
  local t0; t0=$(date +%s.%N)
  timeout -s KILL "${T:-90}" "$@" > "$d/$name.log" 2>&1
  echo "$? $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}")" > "$d/$name.exit"
}
gdb_full() { # DIR NAME CORE: the ladder's coredump commands, then the extra ones
  local d=$1 n=$2 c=$3
  tool "$n" "$d" -- cuda-gdb -batch -nx -ex "set pagination off" -ex "target cudacore $c" \
    -ex "info cuda kernels" -ex bt -ex 'x/i $errorpc'
  tool "$n-pc" "$d" -- cuda-gdb -batch -nx -ex "set pagination off" -ex "target cudacore $c" \
    -ex 'x/3i $pc-32' -ex 'x/i $pc' -ex 'info line *($pc-16)' -ex 'info line *$pc' -ex 'x/2i $errorpc-16' \
    -ex 'info line *($errorpc)' -ex 'info cuda warps' -ex 'info cuda threads'
  tool "$n-hang" "$d" -- cuda-gdb -batch -nx -ex "set pagination off" -ex "target cudacore $c" \
    -ex "info cuda kernels" -ex bt -ex "info cuda threads" -ex "info cuda warps" -ex 'x/i $pc' \
    -ex 'x/2i $pc-16' -ex 'info line *($pc-16)'
}
armed_env() { echo CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0 \
  CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$SKIP CUDA_COREDUMP_FILE=$1/core_%h.%p.%t; }
{ date -u +%FT%TZ; nvidia-smi -L; nvcc --version | tail -2; cuda-gdb --version | head -1; } > "$OUT/env.log" 2>&1
for c in paged_kv_trap syncwarp_tail_mask two_bugs_softmax_scatter syncthreads_divergent; do
  d=$OUT/$c; w=$WORK/$c; mkdir -p "$d" "$w/cores"; cp -r "$HERE/kinds/$c/." "$w/"
  (cd "$w" && NVCC_PREPEND_FLAGS="-lineinfo -g" make -B > "$d/build.log" 2>&1)
  prog=$(cd "$w" && sed -n 's/^\(PROG\|TARGET\) *:\?= *//p' Makefile | head -1)
  if [ "$c" = syncthreads_divergent ]; then
    (cd "$w" && env CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 "CUDA_COREDUMP_PIPE=$w/cores/corepipe.%h.%p" \
      $(armed_env "$w/cores") "./$prog" > "$d/armed.log" 2>&1; echo "$?" > "$d/armed.exit") &
    sleep 8
    for p in "$w"/cores/corepipe.*; do [ -p "$p" ] && timeout 5 sh -c "printf 1 > '$p'"; done
    sleep 20; kill -9 $! 2>/dev/null; wait
  else
    tool plain "$d" -- sh -c "cd $w && ./$prog"
    tool armed "$d" -- sh -c "cd $w && env $(armed_env "$w/cores") ./$prog"
  fi
  i=0
  for core in "$w"/cores/core_*; do
    [ -e "$core" ] || continue; i=$((i + 1)); gdb_full "$d" "cudagdb-$i" "$core"
  done
  [ "$c" = two_bugs_softmax_scatter ] && tool memcheck "$d" -- sh -c "cd $w && compute-sanitizer --tool memcheck --print-limit 100 ./$prog"
  [ "$c" = syncwarp_tail_mask ] && tool synccheck "$d" -- sh -c "cd $w && compute-sanitizer --tool synccheck ./$prog"
  ls -la "$w" "$w/cores" > "$d/files.log" 2>&1
done
# The trap of the older suite program (trap.cu), built as the suite builds it.
d=$OUT/trap; w=$WORK/trap; mkdir -p "$d" "$w/cores"; cp "$HERE"/programs/trap.cu "$HERE"/programs/check.h "$w/"
(cd "$w" && nvcc -arch=sm_90 -lineinfo -g -o trap trap.cu > "$d/build.log" 2>&1)
tool armed "$d" -- sh -c "cd $w && env $(armed_env "$w/cores") ./trap"
for core in "$w"/cores/core_*; do [ -e "$core" ] && gdb_full "$d" cudagdb-1 "$core"; done
ps -eo pid,etimes,args | grep -E 'token_hist|expert_off|paged_kv|moe_step|trap' | grep -v grep > "$OUT/left.log"
