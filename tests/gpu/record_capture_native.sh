#!/usr/bin/env bash
# Facts for a CUDA C++ reproducer (issue 26): where CUPTI is, whether an injection library
# (xtask/src/ladder/capture_native.c, CUDA_INJECTION64_PATH) sees the launches of static-cudart
# programs of the suite under CUDA_LAUNCH_BLOCKING=1, and what it records. OUTDIR gets
# build.log, and per program its output and native-capture-PID.json.
# usage: tests/gpu/record_capture_native.sh OUTDIR
set -u
OUT=${1:?usage: record_capture_native.sh OUTDIR}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CUDA=$(dirname "$(dirname "$(command -v nvcc)")")
WORK=$(mktemp -d)
{
  echo "cuda: $CUDA"; ls -d "$CUDA"/extras/CUPTI/include "$CUDA"/extras/CUPTI/lib64 "$CUDA"/targets/*/include/cupti.h 2>&1
  find "$CUDA"/ -name 'libcupti.so*' 2>/dev/null | head -3; find "$CUDA"/ -name cupti.h 2>/dev/null | head -3
} > "$OUT/where.log" 2>&1
INC=$(dirname "$(find "$CUDA"/ -name cupti.h 2>/dev/null | head -1)")
LIB=$(dirname "$(find "$CUDA"/ -name 'libcupti.so' 2>/dev/null | head -1)")
gcc -shared -fPIC -O1 -I"$CUDA/include" -I"$INC" "$ROOT/xtask/src/ladder/capture_native.c" -o "$WORK/libcapture.so" \
  -L"$LIB" -Wl,-rpath,"$LIB" -L"$CUDA/lib64/stubs" -L"$CUDA/targets/x86_64-linux/lib/stubs" -lcupti -lcuda > "$OUT/build.log" 2>&1; echo "[gcc exit $?]" >> "$OUT/build.log"
for p in oob_write stencil_neighbour; do
  nvcc -arch=sm_90 -lineinfo -g -o "$WORK/$p" "$ROOT/tests/gpu/programs/$p.cu" >> "$OUT/build.log" 2>&1
done
one() { # name kernel-substring
  mkdir -p "$OUT/$1"
  ( cd "$WORK" && CUDA_INJECTION64_PATH="$WORK/libcapture.so" CUDA_LAUNCH_BLOCKING=1 DEBUG_IMA_CAPTURE="$2" \
    DEBUG_IMA_CAPTURE_DIR="$OUT/$1" timeout 60 "./$1" ) > "$OUT/$1/out.log" 2>&1
  echo "[exit $?]" >> "$OUT/$1/out.log"
}
one oob_write scale_write
one stencil_neighbour smooth
mkdir -p "$OUT/trace"
( cd "$WORK" && CUDA_INJECTION64_PATH="$WORK/libcapture.so" CUDA_LAUNCH_BLOCKING=1 DEBUG_IMA_CAPTURE=scale_write \
  DEBUG_IMA_CAPTURE_TRACE=1 DEBUG_IMA_CAPTURE_DIR="$OUT/trace" timeout 60 ./oob_write ) > "$OUT/trace/out.log" 2>&1
rm -rf "$WORK"
