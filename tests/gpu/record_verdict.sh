#!/usr/bin/env bash
# Records, on a machine with an NVIDIA GPU, what the rungs of a complete verdict print for the
# programs of its patterns (tests/gpu/programs): the plain rungs as record.sh runs them, and
# the merged run (launch-blocking with the coredump variables; for a native target the CPU
# core its abort writes, read by cuda-gdb in a run of its own; for Python `skip_abort`, so the
# launch-blocking traceback is printed), memcheck with `--padding`, initcheck, and for Python
# an attach with `-iex "set auto-solib-add off"`. The logs become parser fixtures.
#
# usage: tests/gpu/record_verdict.sh DEST [CASE...]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${1:?usage: record_verdict.sh DEST [CASE...]}
shift
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
WORK=${WORK:-/tmp/ima-record-verdict}
rm -rf "$WORK"; mkdir -p "$WORK/bin" "$WORK/cores"
cp "$HERE"/programs/* "$WORK/"
cd "$WORK"
T=${RUNG_TIMEOUT:-180}
SKIP=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
{
  date -u +%Y-%m-%dT%H:%M:%SZ; uname -a; nvidia-smi; nvcc --version; cuda-gdb --version | head -2
  compute-sanitizer --version; echo "core_pattern: $(cat /proc/sys/kernel/core_pattern)"; ulimit -a
} > "$DEST/env.log" 2>&1

# shellcheck source=tests/gpu/lib.sh
source "$HERE/lib.sh"
gdb_core() { # log core extra-commands...
  local log=$1 core=$2; shift 2
  local t0; t0=$(now)
  timeout -s KILL "$T" cuda-gdb -batch -nx -ex "set pagination off" -ex "target cudacore $core" \
    -ex "info cuda kernels" -ex "bt" -ex 'x/i $errorpc' "$@" > "$CASE_DIR/$log" 2>&1
  meta "$log" "$?" "$(awk "BEGIN{print $(now) - $t0}")" "cuda-gdb target cudacore $(basename "$core") $*"
}
attach() { # log gdb-pre-args -- cmd...
  local log=$1; shift
  local pre=()
  while [ "$1" != "--" ]; do pre+=("$1"); shift; done; shift
  local t0; t0=$(now)
  setsid env CUDA_DEVICE_WAITS_ON_EXCEPTION=1 PYTHONUNBUFFERED=1 "$@" > "$CASE_DIR/waits-$log" 2>&1 &
  local pg=$! pid="" waited=0
  while [ $waited -lt 1200 ]; do
    pid=$(grep -o 'application (PID [0-9]*)' "$CASE_DIR/waits-$log" 2>/dev/null | head -1 | grep -o '[0-9]*')
    [ -n "$pid" ] && break
    kill -0 "$pg" 2>/dev/null || break
    sleep 0.1; waited=$((waited + 1))
  done
  meta "waits-$log" "${pid:-none}" "$(awk "BEGIN{print $(now) - $t0}")" "CUDA_DEVICE_WAITS_ON_EXCEPTION=1 $*"
  if [ -n "$pid" ]; then
    t0=$(now)
    timeout -s KILL "$T" cuda-gdb -batch -nx "${pre[@]}" -p "$pid" -ex "set pagination off" -ex "info cuda kernels" -ex "bt" > "$CASE_DIR/$log" 2>&1
    meta "$log" "$?" "$(awk "BEGIN{print $(now) - $t0}")" "cuda-gdb ${pre[*]} -batch -p $pid"
  fi
  kill -KILL -- -"$pg" 2>/dev/null; wait "$pg" 2>/dev/null; sleep 0.5
}

record_case() { # name python(0/1) cmd...
  local name=$1 py=$2; shift 2
  CASE_DIR=$DEST/$name; mkdir -p "$CASE_DIR"; : > "$CASE_DIR/meta.tsv"
  local pyenv=() ext=()
  if [ "$py" = 1 ]; then pyenv=(PYTORCH_NO_CUDA_MEMORY_CACHING=1); ext=(--target-processes all); fi
  echo "== $name"
  if [ "${ONLY_MERGED:-0}" != 1 ]; then
  run_rung baseline baseline.log PYTHONUNBUFFERED=1 -- "$@"
  run_rung launch-blocking launch-blocking.log PYTHONUNBUFFERED=1 CUDA_LAUNCH_BLOCKING=1 -- "$@"
  fi
  local cores=$WORK/cores/$name; rm -rf "$cores"; mkdir -p "$cores"
  # The merged run: launch-blocking and the coredump variables in one run.
  local flags=$SKIP
  [ "$py" = 1 ] && flags=$SKIP,skip_abort
  local t0; t0=$(now)
  # core_pattern is `core` on the recording machine: the CPU core lands in the target's folder.
  rm -f "$WORK/core"
  ( ulimit -c unlimited && timeout -s KILL "$T" env PYTHONUNBUFFERED=1 CUDA_LAUNCH_BLOCKING=1 \
      CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$flags \
      "CUDA_COREDUMP_FILE=$cores/core_%h.%p.%t" "$@" ) > "$CASE_DIR/merged.log" 2>&1
  meta merged "$?" "$(awk "BEGIN{print $(now) - $t0}")" "ulimit -c unlimited; CUDA_LAUNCH_BLOCKING=1 coredump flags=$flags $*"
  ls -l "$cores" "$WORK/core" > "$CASE_DIR/merged-files.txt" 2>&1
  local i=0
  for c in "$cores"/core_*; do
    [ -e "$c" ] || continue
    i=$((i + 1)); gdb_core "cudagdb-merged-$i.log" "$c"
  done
  for c in "$WORK/core"; do
    [ -e "$c" ] || continue
    t0=$(now)
    local exe=$1; [ "$py" = 1 ] && exe=$(command -v python3)
    timeout -s KILL "$T" cuda-gdb -batch -nx "$exe" "$c" -ex "set pagination off" -ex "thread apply all bt" > "$CASE_DIR/cpucore-gdb.log" 2>&1
    meta cpucore-gdb "$?" "$(awk "BEGIN{print $(now) - $t0}")" "cuda-gdb $exe $(basename "$c") thread apply all bt"
  done
  rm -rf "$cores" "$WORK/core"
  [ "${ONLY_MERGED:-0}" = 1 ] && return
  attach attach.log -- "$@"
  [ "$py" = 1 ] && attach attach-nosolib.log -iex "set auto-solib-add off" -- "$@"
  run_rung memcheck memcheck.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool memcheck --print-limit 200 "${ext[@]}" --xml --save "$CASE_DIR/memcheck.xml" "$@"
  run_rung memcheck-text memcheck-text.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool memcheck --print-limit 200 "${ext[@]}" "$@"
  run_rung memcheck-padding memcheck-padding.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool memcheck --padding 64 --print-limit 200 "${ext[@]}" "$@"
  run_rung memcheck-padding-xml memcheck-padding-xml.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool memcheck --padding 64 --print-limit 200 "${ext[@]}" --xml --save "$CASE_DIR/memcheck-padding.xml" "$@"
  run_rung initcheck initcheck.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool initcheck --print-limit 200 "${ext[@]}" "$@"
  run_rung initcheck-xml initcheck-xml.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool initcheck --print-limit 200 "${ext[@]}" --xml --save "$CASE_DIR/initcheck.xml" "$@"
  nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader > "$CASE_DIR/leftover.txt" 2>&1
}

CASES=("$@")
want() { [ ${#CASES[@]} -eq 0 ] && return 0; local c; for c in "${CASES[@]}"; do [ "$c" = "$1" ] && return 0; done; return 1; }
b() { nvcc -arch=sm_90 -lineinfo -g "$@" >> "$WORK/build.log" 2>&1 || { echo "build failed: $*"; cat "$WORK/build.log"; }; }
b -o bin/shared_atomic shared_atomic.cu
b -o bin/stencil_neighbour stencil_neighbour.cu
b -DFIXED -o bin/stencil_fixed stencil_neighbour.cu
b -o bin/unchecked_launch unchecked_launch.cu
b -o bin/oob_read oob_read.cu
cp "$WORK/build.log" "$DEST/build.log"
want shared_atomic && record_case shared_atomic 0 ./bin/shared_atomic
want stencil_neighbour && record_case stencil_neighbour 0 ./bin/stencil_neighbour
want stencil_neighbour_big && record_case stencil_neighbour_big 0 ./bin/stencil_neighbour 1048576
want stencil_fixed && record_case stencil_fixed 0 ./bin/stencil_fixed
want unchecked_launch && record_case unchecked_launch 0 ./bin/unchecked_launch
want oob_read_g && record_case oob_read_g 0 ./bin/oob_read
want aten_async && record_case aten_async 1 python3 aten_async.py
want torch_assert_merged && record_case torch_assert_merged 1 python3 torch_assert.py
echo "recorded into $DEST"
