#!/usr/bin/env bash
# The full manual ladder, as an expert scripts it by hand, for the time-ratio benchmark of
# tests/gpu/suite.sh (RATIO=1): the same rungs as `debug-ima --full`, one after another, with
# nothing in between: plain build, baseline, rebuild with line info and cuobjdump, launch-
# blocking, coredump and cuda-gdb on each dump, wait-on-exception and cuda-gdb attach, memcheck
# (with padding, XML saved), initcheck. Logs go to DIR.
#
# usage: tests/gpu/manual_ladder.sh DIR BUILD_CMD|- DEBUG_FLAG|- BINARY|CMD...
set -u
DIR=$1; BUILD=$2; DBG=$3; shift 3
mkdir -p "$DIR/cores"
T=${RUNG_TIMEOUT:-300}
SKIP=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
if [ "$BUILD" != - ]; then
  $BUILD > "$DIR/build.log" 2>&1
fi
timeout -s KILL "$T" env PYTHONUNBUFFERED=1 "$@" > "$DIR/baseline.log" 2>&1
if [ "$BUILD" != - ]; then
  NVCC_PREPEND_FLAGS="$DBG -g" CCACHE_DISABLE=1 $BUILD > "$DIR/rebuild.log" 2>&1
  cuobjdump -elf "$1" > "$DIR/cuobjdump.log" 2>&1
fi
timeout -s KILL "$T" env PYTHONUNBUFFERED=1 CUDA_LAUNCH_BLOCKING=1 "$@" > "$DIR/launch-blocking.log" 2>&1
timeout -s KILL "$T" env PYTHONUNBUFFERED=1 CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0 \
  CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_GENERATION_FLAGS=$SKIP "CUDA_COREDUMP_FILE=$DIR/cores/core_%h.%p.%t" "$@" > "$DIR/coredump.log" 2>&1
i=0
for c in "$DIR"/cores/core_*; do
  [ -e "$c" ] || continue
  i=$((i + 1))
  timeout -s KILL "$T" cuda-gdb -batch -nx -ex "set pagination off" -ex "target cudacore $c" -ex "info cuda kernels" -ex bt > "$DIR/cudagdb-$i.log" 2>&1
done
rm -rf "$DIR/cores"
setsid env PYTHONUNBUFFERED=1 CUDA_DEVICE_WAITS_ON_EXCEPTION=1 "$@" > "$DIR/waits.log" 2>&1 &
pg=$!
pid=""
for _ in $(seq 1 $((T * 10))); do
  pid=$(grep -o 'application (PID [0-9]*)' "$DIR/waits.log" 2>/dev/null | head -1 | grep -o '[0-9]*')
  [ -n "$pid" ] && break
  kill -0 "$pg" 2>/dev/null || break
  sleep 0.1
done
if [ -n "$pid" ]; then
  timeout -s KILL "$T" cuda-gdb -batch -nx -p "$pid" -ex "set pagination off" -ex "info cuda kernels" -ex bt > "$DIR/attach.log" 2>&1
fi
kill -KILL -- -"$pg" 2>/dev/null; wait "$pg" 2>/dev/null
PY=(PYTORCH_NO_CUDA_MEMORY_CACHING=1 PYTHONUNBUFFERED=1)
timeout -s KILL "$T" env "${PY[@]}" compute-sanitizer --tool memcheck --padding 64 --print-limit 1000 --target-processes all --xml --save "$DIR/memcheck.xml" "$@" > "$DIR/memcheck.log" 2>&1
timeout -s KILL "$T" env "${PY[@]}" compute-sanitizer --tool initcheck --print-limit 1000 --target-processes all --xml --save "$DIR/initcheck.xml" "$@" > "$DIR/initcheck.log" 2>&1
exit 0
