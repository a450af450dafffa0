#!/usr/bin/env bash
# Records what every rung of the ladder prints for each program of the GPU suite, on a
# machine with an NVIDIA GPU, nvcc, cuda-gdb and compute-sanitizer. The logs become the
# parser fixtures under tests/fixtures/ (coredumps are not kept: they are large).
#
# usage: tests/gpu/record.sh DEST [CASE...]      (default: every case)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${1:?usage: record.sh DEST [CASE...]}
shift
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
WORK=${WORK:-/tmp/ima-record}
rm -rf "$WORK"; mkdir -p "$WORK/bin" "$WORK/cores"
cp "$HERE"/programs/* "$WORK/"
cd "$WORK"
T=${RUNG_TIMEOUT:-180}
SKIP=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory

{
  date -u +%Y-%m-%dT%H:%M:%SZ; uname -a; nvidia-smi; nvcc --version; cuda-gdb --version | head -2
  compute-sanitizer --version; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} > "$DEST/env.log" 2>&1

build() { # name extra-flags...
  local name=$1; shift
  local src=${name%_G}.cu
  nvcc -arch=sm_90 "$@" -o "bin/$name" "$src" >"$WORK/build_$name.log" 2>&1 || { echo "build $name failed"; cat "$WORK/build_$name.log"; }
}
# PLAIN_LADDER=1: what `debug-ima --full` does, as a plain script (for the overhead
# benchmark): the builds happen inside each case, memcheck runs once with the XML report.
if [ "${PLAIN_LADDER:-0}" != 1 ]; then
  for p in oob_write oob_read misaligned device_assert templated inlined graph_fault clean; do build "$p" -lineinfo; done
  build oob_write_G -G
  build inlined_G -G
fi

# shellcheck source=tests/gpu/lib.sh
source "$HERE/lib.sh"

gdb_core() { # core-file extra-commands...
  local core=$1 i=$2; shift 2
  local t0; t0=$(now)
  timeout -s KILL "$T" cuda-gdb -batch -ex "set pagination off" -ex "target cudacore $core" \
    -ex "info cuda kernels" -ex "bt" "$@" > "$CASE_DIR/cudagdb-core-$i.log" 2>&1
  meta "cudagdb-core-$i" "$?" "$(awk "BEGIN{print $(now) - $t0}")" "cuda-gdb target cudacore $(basename "$core") $*"
}

attach_rung() { # python? cmd...
  local t0; t0=$(now)
  setsid env CUDA_DEVICE_WAITS_ON_EXCEPTION=1 "$@" > "$CASE_DIR/waits.log" 2>&1 &
  local pg=$! pid="" waited=0
  while [ $waited -lt 1200 ]; do
    pid=$(grep -o 'application (PID [0-9]*)' "$CASE_DIR/waits.log" 2>/dev/null | head -1 | grep -o '[0-9]*')
    [ -n "$pid" ] && break
    kill -0 "$pg" 2>/dev/null || break
    sleep 0.1; waited=$((waited + 1))
  done
  meta waits "${pid:-none}" "$(awk "BEGIN{print $(now) - $t0}")" "CUDA_DEVICE_WAITS_ON_EXCEPTION=1 $*"
  if [ -n "$pid" ]; then
    t0=$(now)
    timeout -s KILL "$T" cuda-gdb -batch -p "$pid" -ex "set pagination off" -ex "info cuda kernels" -ex "bt" "${GDB_EXTRA[@]}" > "$CASE_DIR/attach.log" 2>&1
    meta attach "$?" "$(awk "BEGIN{print $(now) - $t0}")" "cuda-gdb -batch -p $pid"
  fi
  kill -KILL -- -"$pg" 2>/dev/null
  wait "$pg" 2>/dev/null
  sleep 0.5
  nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader > "$CASE_DIR/leftover.txt" 2>&1
}

record_case() { # name python(0/1) cmd...
  local name=$1 py=$2; shift 2
  CASE_DIR=$DEST/$name; mkdir -p "$CASE_DIR"; : > "$CASE_DIR/meta.tsv"
  local extra=() pyenv=()
  if [ "$py" = 1 ]; then extra=(--target-processes all); pyenv=(PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONUNBUFFERED=1); fi
  echo "== $name"
  if [ "${PLAIN_LADDER:-0}" = 1 ] && [ "$py" = 0 ]; then
    run_rung build build.log -- nvcc -arch=sm_90 -o "bin/$name" "${name%_G}.cu"
  fi
  run_rung baseline baseline.log PYTHONUNBUFFERED=1 -- "$@"
  if [ "${PLAIN_LADDER:-0}" = 1 ] && [ "$py" = 0 ]; then
    run_rung rebuild rebuild.log NVCC_PREPEND_FLAGS=-lineinfo CCACHE_DISABLE=1 -- nvcc -arch=sm_90 -o "bin/$name" "${name%_G}.cu"
    run_rung cuobjdump cuobjdump.log -- cuobjdump -elf "bin/$name"
  fi
  run_rung launch-blocking launch-blocking.log PYTHONUNBUFFERED=1 CUDA_LAUNCH_BLOCKING=1 -- "$@"
  local cores=$WORK/cores/$name; mkdir -p "$cores"
  run_rung coredump coredump.log PYTHONUNBUFFERED=1 CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_SHOW_PROGRESS=1 \
    CUDA_COREDUMP_GENERATION_FLAGS=$SKIP "CUDA_COREDUMP_FILE=$cores/core_%h.%p.%t" -- "$@"
  local i=0
  for c in "$cores"/core_*; do
    [ -e "$c" ] || continue
    i=$((i + 1)); echo "$(basename "$c") $(stat -c %s "$c")" >> "$CASE_DIR/coredumps.txt"
    gdb_core "$c" "$i" "${GDB_EXTRA[@]}"
  done
  rm -rf "$cores"
  attach_rung "$@"
  if [ "${PLAIN_LADDER:-0}" = 1 ]; then
    run_rung memcheck memcheck.log "${pyenv[@]}" -- compute-sanitizer --tool memcheck --print-limit 1000 --target-processes all --xml --save "$CASE_DIR/memcheck.xml" "$@"
    return
  fi
  run_rung memcheck memcheck.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool memcheck --print-limit 200 "${extra[@]}" "$@"
  [ "${PLAIN_LADDER:-0}" = 1 ] && return
  run_rung memcheck-xml memcheck-xml.log "${pyenv[@]}" PYTHONUNBUFFERED=1 -- compute-sanitizer --tool memcheck --print-limit 200 "${extra[@]}" --xml --save "$CASE_DIR/memcheck.xml" "$@"
}

CASES=("$@")
want() { [ ${#CASES[@]} -eq 0 ] && return 0; local c; for c in "${CASES[@]}"; do [ "$c" = "$1" ] && return 0; done; return 1; }

GDB_EXTRA=()
for p in oob_write oob_read misaligned device_assert templated inlined graph_fault clean; do
  want "$p" && record_case "$p" 0 "./bin/$p"
done
GDB_EXTRA=(-ex "info locals" -ex "info args")
for p in oob_write_G inlined_G; do
  want "$p" && record_case "$p" 0 "./bin/$p"
done
GDB_EXTRA=()
want torch_assert && record_case torch_assert 1 python3 torch_assert.py
for m in eager graph worker; do
  want "triton_$m" && record_case "triton_$m" 1 python3 vllm_shaped.py "$m"
done
echo "recorded into $DEST"
