#!/usr/bin/env bash
# Records the facts issue 26 (the reproducer) rests on, on a machine with an NVIDIA GPU,
# nvcc, cuda-gdb and PyTorch with Triton:
#   triton.log   what Triton's JITFunction.run receives per launch (programs/probe_triton.py)
#   cold.log     the time of `import torch` and of a first CUDA tensor, twice (the budget of a
#                reproducer that runs on its own)
#   cb_*.log     a C++ fault's GPU dump with and without `skip_constbank_memory` (size, time)
#                and cuda-gdb reading the kernel's parameters from its constant bank
#                ($_cuda_const_bank) and `info cuda kernels`; the same attached live at the
#                exception (CUDA_DEVICE_WAITS_ON_EXCEPTION=1), with a read of global memory
#                through the first pointer parameter
#   elf.log      `cuobjdump -elf` of the kernel: its parameters' offsets and sizes
# usage: tests/gpu/record_capture.sh OUTDIR
set -u
OUT=${1:?usage: record_capture.sh OUTDIR}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/tmp/ima-capture}
rm -rf "$WORK"; mkdir -p "$WORK"
cp "$ROOT"/tests/gpu/programs/* "$WORK/"
cd "$WORK" || exit 1
PYTHON=${PYTHON:-python3}
{ date -u +%FT%TZ; nvidia-smi -L; nvcc --version | tail -2; cuda-gdb --version | head -1; } > "$OUT/env.log" 2>&1

timeout 120 "$PYTHON" probe_triton.py > "$OUT/triton.log" 2>&1; echo "[exit $?]" >> "$OUT/triton.log"
for i in 1 2; do
  /usr/bin/time -f "import torch: %e s" "$PYTHON" -c 'import torch' 2>&1
  /usr/bin/time -f "first tensor: %e s" "$PYTHON" -c 'import torch; torch.zeros(1, device="cuda")' 2>&1
done > "$OUT/cold.log"

nvcc -arch=sm_90 -lineinfo -g -o oob_write oob_write.cu > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
cuobjdump -elf oob_write > "$OUT/elf.log" 2>&1
SKIP5=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
SKIP4=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory
GDBCMDS=(-ex "info cuda kernels" -ex 'print $_cuda_const_bank(0, 0x210)' -ex 'x/3gx $_cuda_const_bank(0, 0x210)'
  -ex 'x/8gx $_cuda_const_bank(0, 0x200)' -ex 'info line *$pc' -ex 'x/2i $pc' -ex 'info cuda lanes')
for flags in SKIP5 SKIP4; do
  rm -f core_*
  s=$(date +%s.%N)
  CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 CUDA_COREDUMP_GENERATION_FLAGS=${!flags} CUDA_COREDUMP_FILE="$WORK/core_%p" \
    CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0 timeout 60 ./oob_write > "$OUT/cb_$flags.log" 2>&1
  echo "[exit $?, $(awk "BEGIN{print $(date +%s.%N) - $s}") s]" >> "$OUT/cb_$flags.log"
  core=$(ls core_* 2>/dev/null | head -1)
  ls -l core_* >> "$OUT/cb_$flags.log" 2>&1
  [ -n "$core" ] && timeout 120 cuda-gdb -batch -nx -ex "target cudacore $core" "${GDBCMDS[@]}" >> "$OUT/cb_$flags.log" 2>&1
  echo "[cuda-gdb exit $?]" >> "$OUT/cb_$flags.log"
done
# Live, at the exception.
rm -f wait.log
CUDA_DEVICE_WAITS_ON_EXCEPTION=1 ./oob_write > wait.log 2>&1 &
pid=$!
for _ in $(seq 1 200); do grep -q "waiting for debugger" wait.log 2>/dev/null && break; sleep 0.1; done
cat wait.log > "$OUT/cb_attach.log"
timeout 120 cuda-gdb -batch -nx -iex "set auto-solib-add off" -p "$pid" "${GDBCMDS[@]}" \
  -ex 'set $p = *(unsigned long long *)$_cuda_const_bank(0, 0x210)' -ex 'print/x $p' \
  -ex 'x/4wx (@global unsigned int *)($p + 0x200000000)' -ex 'x/4wx $p' -ex 'info cuda devices' >> "$OUT/cb_attach.log" 2>&1
echo "[cuda-gdb exit $?]" >> "$OUT/cb_attach.log"
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
nvidia-smi --query-compute-apps=pid --format=csv,noheader > "$OUT/left.log" 2>&1
