#!/usr/bin/env bash
# Records the raw outputs of the tools for the bug kinds of issue 23, on a machine with an
# NVIDIA GPU, nvcc (with cuBLAS), cuda-gdb and compute-sanitizer: races (racecheck, in its
# default analysis report and as hazards, text and XML), barrier errors (synccheck), a
# __trap(), a fault inside cuBLAS, two bugs in one program (memcheck; the coredump read by
# cuda-gdb with the ladder's commands). Each case gets OUT/<case>/: build.log, plain.log
# (+ plain.exit), and per tool <tool>.log, <tool>.exit, <tool>.xml. Coredumps are not kept.
#
# usage: tests/gpu/record_kinds.sh OUTDIR [CASE...]
set -u
OUT=${1:?usage: record_kinds.sh OUTDIR [CASE...]}
shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/ima-kinds}
rm -rf "$WORK"; mkdir -p "$WORK"
cp "$HERE"/programs/*.cu "$HERE"/programs/*.h "$WORK/"
cd "$WORK" || exit 2
T=${RUNG_TIMEOUT:-60}
SKIP=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
{ date -u +%Y-%m-%dT%H:%M:%SZ; nvidia-smi -L; nvcc --version | tail -2; cuda-gdb --version | head -1
  compute-sanitizer --version | head -2; } > "$OUT/env.log" 2>&1

# tool NAME CASE_DIR -- CMD...: runs CMD with its output in NAME.log, its exit in NAME.exit.
tool() {
  local name=$1 d=$2; shift 3
  local t0; t0=$(date +%s.%N)
  timeout -s KILL "$T" "$@" > "$d/$name.log" 2>&1
  echo "$? $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}")" > "$d/$name.exit"
}

sanitize() { # CASE_DIR BIN TOOL NAME [OPTIONS...]
  local d=$1 bin=$2 t=$3 name=$4; shift 4
  # The text report on stdout and the XML saved, from one run (as the ladder's sweep runs it).
  tool "$name" "$d" -- compute-sanitizer --tool "$t" --print-limit 100 "$@" --xml --save "$d/$name.xml" "./$bin"
}

coredump() { # CASE_DIR BIN
  local d=$1 bin=$2
  rm -rf "$WORK/cores"; mkdir -p "$WORK/cores"
  tool coredump "$d" -- env CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0 \
    CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$SKIP "CUDA_COREDUMP_FILE=$WORK/cores/core_%h.%p.%t" "./$bin"
  local i=0 c
  for c in "$WORK"/cores/core_*; do
    [ -e "$c" ] || continue
    i=$((i + 1))
    tool "cudagdb-$i" "$d" -- cuda-gdb -batch -nx -ex "set pagination off" -ex "target cudacore $c" \
      -ex "info cuda kernels" -ex bt -ex 'x/i $errorpc'
    tool "cudagdb-$i-short" "$d" -- cuda-gdb -batch -nx -ex "set pagination off" -ex "target cudacore $c"
  done
}

CASES=${*:-race_shared race_reduce barrier trap cublas_fault two_bugs}
for c in $CASES; do
  d=$OUT/$c; mkdir -p "$d"
  extra=""; [ "$c" = cublas_fault ] && extra=-lcublas
  # shellcheck disable=SC2086
  nvcc -arch=sm_90 -lineinfo -g -o "$c" "$c.cu" $extra > "$d/build.log" 2>&1 || { echo "$c: build failed"; continue; }
  tool plain "$d" -- "./$c"
  case $c in
    race_*)
      sanitize "$d" "$c" racecheck racecheck
      sanitize "$d" "$c" racecheck racecheck-hazard --racecheck-report hazard
      sanitize "$d" "$c" memcheck memcheck --padding 64 ;;
    barrier)
      sanitize "$d" "$c" synccheck synccheck
      sanitize "$d" "$c" racecheck racecheck ;;
    trap|cublas_fault|two_bugs)
      coredump "$d" "$c"
      sanitize "$d" "$c" memcheck memcheck --padding 64 ;;
  esac
  echo "$c: $(cat "$d/plain.exit")"
done
rm -rf "$WORK/cores"
