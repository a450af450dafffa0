#!/usr/bin/env bash
# Records what a hang looks like through the user-triggered GPU coredump (issue 14), on a
# machine with an NVIDIA GPU, nvcc, cuda-gdb and PyTorch with Triton: each hang program runs
# with the user-triggered coredump variables, and after HANG seconds the script takes the
# host stacks (py-spy for Python processes when `.whl` holds its wheel; cuda-gdb attached for
# the native one, detached again), writes to the named pipe of every CUDA process of the
# target's tree, times the dump, and reads each dump with cuda-gdb. Everything is killed at
# the end. The logs become the fixtures under tests/fixtures/h200/hang_*/ (the dumps are
# not kept: the listing of the dump folder is).
#
# usage: tests/gpu/record_hang.sh DEST [CASE...]   (cases: hang_flag hang_triton hang_two_procs
#        hang_flag_attached hang_flag_1mb nccl_trace)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${1:?usage: record_hang.sh DEST [CASE...]}
shift
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
WORK=${WORK:-/tmp/ima-hang}
rm -rf "$WORK"; mkdir -p "$WORK/bin"
cp "$HERE"/programs/* "$WORK/"
cd "$WORK"
HANG=${HANG:-4}
SKIP=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
PYSPY=$(command -v py-spy || true)

{
  date -u +%Y-%m-%dT%H:%M:%SZ; uname -a; nvidia-smi; nvcc --version; cuda-gdb --version | head -2
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  echo "py-spy: ${PYSPY:-none} $([ -n "$PYSPY" ] && "$PYSPY" --version)"
} > "$DEST/env-hang.log" 2>&1

nvcc -arch=sm_90 -lineinfo -g -o bin/hang_flag hang_flag.cu > "$DEST/build-hang.log" 2>&1 \
  || { echo "build failed"; cat "$DEST/build-hang.log"; }

# Writes to a named pipe as SGLang does: O_WRONLY|O_NONBLOCK, one byte (or N bytes);
# ENXIO means that no one reads it yet.
cat > trigger.py <<'EOF'
import errno, os, sys, time
path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
t0 = time.time()
try:
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
except OSError as e:
    print(f"open {path}: {errno.errorcode.get(e.errno, e.errno)} {e.strerror}")
    sys.exit(1)
written = 0
try:
    while written < n:
        written += os.write(fd, b"1" * min(65536, n - written))
except OSError as e:
    print(f"write {path} after {written} bytes: {errno.errorcode.get(e.errno, e.errno)} {e.strerror}")
os.close(fd)
print(f"wrote {written} bytes to {path} in {time.time() - t0:.4f} s")
EOF

now() { date +%s.%N; }
since() { awk "BEGIN{printf \"%.3f\", $(now) - $1}"; }
# The pids of the tree under $1 (itself included), oldest first.
tree() {
  local all=("$1") frontier=("$1") next p
  while [ ${#frontier[@]} -gt 0 ]; do
    next=()
    for p in "${frontier[@]}"; do
      for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do all+=("$c"); next+=("$c"); done
    done
    frontier=("${next[@]}")
  done
  echo "${all[@]}"
}

record() { # case extra-env... -- cmd...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local d="$DEST/$name" dumps="$WORK/$name/dumps"
  mkdir -p "$d" "$dumps"
  local t0; t0=$(now)
  local run_dir="$WORK/$name/cwd"
  mkdir -p "$run_dir"
  ulimit -c unlimited
  (cd "$run_dir" && exec setsid env CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_SHOW_PROGRESS=1 \
    CUDA_COREDUMP_PIPE="$dumps/corepipe.%h.%p" CUDA_COREDUMP_FILE="$dumps/core.%h.%p.%t" \
    CUDA_COREDUMP_GENERATION_FLAGS=$SKIP "${envs[@]}" "$@" > "$d/stdout.log" 2> "$d/stderr.log") &
  local pid=$!
  echo "\$ CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_SHOW_PROGRESS=1 CUDA_COREDUMP_PIPE=$dumps/corepipe.%h.%p CUDA_COREDUMP_FILE=$dumps/core.%h.%p.%t CUDA_COREDUMP_GENERATION_FLAGS=$SKIP ${envs[*]} $*" > "$d/command.txt"
  sleep "$HANG"
  local pids; pids=$(tree "$pid")
  # shellcheck disable=SC2086
  ps -o pid,ppid,pgid,stat,etime,args -p "$(echo $pids | tr ' ' ,)" > "$d/ps.log" 2>&1
  ls -l "$dumps" > "$d/dumps_before.log" 2>&1
  for p in $pids; do
    if [ -n "$PYSPY" ] && grep -q python "/proc/$p/comm" 2>/dev/null; then
      local s; s=$(now)
      timeout 60 "$PYSPY" dump --native --pid "$p" > "$d/pyspy_$p.log" 2>&1
      echo "py-spy dump --native --pid $p: rc=$? in $(since "$s") s" >> "$d/timing.log"
    fi
  done
  if [ "${ATTACH:-0}" = 1 ]; then
    # The host stacks of a native target: cuda-gdb attached, then detached (no dump is
    # possible while it is attached).
    local s; s=$(now)
    timeout 120 cuda-gdb -batch -nx -p "$pid" -ex 'set pagination off' -ex 'info threads' \
      -ex 'thread apply all bt' -ex detach > "$d/attach_host.log" 2>&1
    echo "cuda-gdb -p $pid (host stacks, detach): rc=$? in $(since "$s") s" >> "$d/timing.log"
  fi
  local pipes; pipes=$(find "$dumps" -maxdepth 1 -type p -name 'corepipe.*' | sort)
  echo "pipes after $(since "$t0") s: $(echo "$pipes" | wc -w)" >> "$d/timing.log"
  for pp in $pipes; do
    local s; s=$(now)
    python3 trigger.py "$pp" "${BYTES:-1}" >> "$d/trigger.log" 2>&1
    echo "trigger $(basename "$pp"): rc=$? in $(since "$s") s" >> "$d/timing.log"
  done
  local tt; tt=$(now)
  # Wait for the target (and the dumps) up to 60 s.
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  wait "$pid" 2>/dev/null; local rc=$?
  echo "target exit $rc, $(since "$tt") s after the trigger, $(since "$t0") s in all" >> "$d/timing.log"
  sleep 1
  local left=""
  for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
  echo "left after the target's exit:${left:- none}" >> "$d/timing.log"
  # shellcheck disable=SC2086
  [ -n "$left" ] && ps -o pid,ppid,stat,args -p "$(echo $left | tr ' ' ,)" >> "$d/timing.log" 2>&1
  ls -l "$dumps" > "$d/dumps_after.log" 2>&1
  local i=0
  for core in $(find "$dumps" -maxdepth 1 -type f -name 'core.*' | sort); do
    i=$((i + 1))
    local s; s=$(now)
    # What the hang rung runs on each dump.
    timeout 300 cuda-gdb -batch -nx -ex 'set pagination off' -ex "target cudacore $core" \
      -ex 'info cuda kernels' -ex bt -ex 'info cuda threads' -ex 'info cuda warps' -ex 'x/i $pc' \
      > "$d/cudagdb_$i.log" 2>&1
    echo "cuda-gdb on $(basename "$core"): rc=$? in $(since "$s") s" >> "$d/timing.log"
  done
  # The CPU cores the aborts left (core_pattern: $(cat /proc/sys/kernel/core_pattern)).
  cat /proc/sys/kernel/core_pattern > "$d/core_pattern.txt"
  ls -l "$run_dir" > "$d/cwd_after.log" 2>&1
  local j=0
  for cpu in $(find "$run_dir" -maxdepth 1 -type f -name 'core*' | sort); do
    j=$((j + 1))
    local exe; exe=$(file "$cpu" 2>/dev/null | sed -n "s/.*execfn: '\([^']*\)'.*/\1/p")
    [ -z "$exe" ] && exe=$(command -v "$1" || echo "$1")
    local s; s=$(now)
    timeout 300 cuda-gdb -batch -nx -ex "file $exe" -ex "core-file $cpu" -ex 'set pagination off' \
      -ex 'thread apply all bt' > "$d/cpucore_$j.log" 2>&1
    echo "cuda-gdb on the CPU core $(basename "$cpu") ($exe): rc=$? in $(since "$s") s" >> "$d/timing.log"
  done
  # Nothing may be left.
  kill -KILL -- -"$pid" 2>/dev/null
  for p in $pids; do kill -KILL "$p" 2>/dev/null; done
}

want() { [ $# -eq 0 ] || [[ " $* " == *" $CASE "* ]]; }
CASES=("$@")
for CASE in hang_flag hang_flag_attached hang_flag_1mb hang_triton hang_two_procs nccl_trace; do
  want "${CASES[@]}" || continue
  case $CASE in
    hang_flag) record hang_flag -- "$WORK/bin/hang_flag" ;;
    hang_flag_attached) ATTACH=1 record hang_flag_attached -- "$WORK/bin/hang_flag" ;;
    hang_flag_1mb) BYTES=1048576 record hang_flag_1mb -- "$WORK/bin/hang_flag" ;;
    # Python starts, imports torch and compiles the Triton kernel before it hangs.
    hang_triton) HANG=$((HANG + 10)) record hang_triton -- python3 "$WORK/hang_triton.py" ;;
    hang_two_procs) HANG=$((HANG + 16)) record hang_two_procs -- python3 "$WORK/hang_two_procs.py" ;;
    nccl_trace)
      # NCCL's flight recorder of a one-rank job stuck after its collectives, dumped through
      # its pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE) before the GPU dump.
      d="$DEST/nccl_trace"; mkdir -p "$d"
      rm -f "$WORK"/nccl_pipe_* "$WORK"/nccl_trace_*
      TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$WORK/nccl_pipe_" \
        TORCH_NCCL_DEBUG_INFO_TEMP_FILE="$WORK/nccl_trace_" MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 \
        RANK=0 WORLD_SIZE=1 timeout 90 python3 - > "$d/stdout.log" 2> "$d/stderr.log" <<'EOF' &
import os, time, torch, torch.distributed as dist
dist.init_process_group("nccl", device_id=torch.device("cuda:0"))
x = torch.ones(1024, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
dist.broadcast(x, 0)
torch.cuda.synchronize()
print("collectives done; hanging on the host", flush=True)
time.sleep(60)
EOF
      npid=$!
      for _ in $(seq 1 200); do [ -p "$WORK/nccl_pipe_0.pipe" ] && grep -q hanging "$d/stdout.log" && break; sleep 0.2; done
      ls -l "$WORK" | grep nccl_ > "$d/pipes.log" 2>&1
      [ -p "$WORK/nccl_pipe_0.pipe" ] && echo 1 > "$WORK/nccl_pipe_0.pipe"
      for _ in $(seq 1 50); do [ -s "$WORK/nccl_trace_0" ] && break; sleep 0.2; done
      sleep 1
      ls -l "$WORK" | grep nccl_ >> "$d/pipes.log" 2>&1
      if [ -s "$WORK/nccl_trace_0" ]; then
        cp "$WORK/nccl_trace_0" "$d/nccl_trace_0.pickle"
        python3 -c 'import pickle, json, sys; print(json.dumps(pickle.load(open(sys.argv[1], "rb")), indent=1, default=repr))' \
          "$WORK/nccl_trace_0" > "$d/nccl_trace_0.json" 2>&1
      fi
      kill -KILL "$npid" 2>/dev/null
      ;;
  esac
done
echo "recorded into $DEST"
