#!/usr/bin/env bash
# Records `debug-ima dump PID` (issue 21) on a machine with an NVIDIA GPU, nvcc, cuda-gdb and
# PyTorch with Triton (gdb and py-spy when installed). Each hang program is started WITHOUT the
# tool and left HANG seconds to hang; then, for the plain (not armed) cases, the raw outputs of
# the attach the tool makes (`cuda-gdb -batch -nx -iex "set auto-solib-add off" -p PID -ex "info
# cuda kernels" -ex "info cuda threads" -ex bt`, and `gdb -p PID -batch -ex "thread apply all
# bt"`), each followed by the process's state (it must still run, not be stopped: /proc/PID/stat
# and every thread's), then `XTASK dump PID --yes` (left running) and `XTASK dump PID --kill
# --yes` (gone afterwards). The armed cases (`CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1`) record the
# `--kill` trigger with nothing attached first, with the hang rung's pipe and file names and with
# the driver's default ones, and a trigger after the tool's own attach (which the driver is
# expected to refuse: `CUDA coredump is not supported with late attach`). Every process of a case
# is killed at its end. Everything goes into OUTDIR as small logs (the bundles without their GPU
# dumps, which are listed). tests/fixtures/h200/dump holds the raw steps of this script recorded
# by hand on an H200 (no gdb, no py-spy there; the `debug-ima dump` steps not run): the attaches
# the stand-in cuda-gdb of tests/it/dump.rs replays.
#
# usage: tests/gpu/record_dump.sh XTASK_RELEASE_BINARY OUTDIR [CASE...]
#        (cases: flag triton flag_armed flag_armed_default flag_armed_after_attach;
#        PYTHON: the interpreter with torch and triton, python3 by default)
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=${2:?usage: record_dump.sh XTASK_RELEASE_BINARY OUTDIR [CASE...]}
shift 2
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/tmp/ima-dump}
HANG=${HANG:-5}
# Python imports torch and compiles the Triton kernel before it hangs (14.5 s on the H200).
HANG_PY=${HANG_PY:-25}
rm -rf "$WORK"
mkdir -p "$WORK/bin"
cp "$ROOT"/tests/gpu/programs/* "$WORK/"
SKIP=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,skip_constbank_memory
PYTHON=${PYTHON:-python3}
GDB=$(command -v gdb || true)
PYSPY=$(command -v py-spy || true)

{
  date -u +%Y-%m-%dT%H:%M:%SZ; uname -a; nvidia-smi; nvcc --version; cuda-gdb --version | head -2
  echo "gdb: ${GDB:-none}"; [ -n "$GDB" ] && "$GDB" --version | head -1
  echo "py-spy: ${PYSPY:-none}"; [ -n "$PYSPY" ] && "$PYSPY" --version
  "$PYTHON" -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  echo "ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)"
  echo "core_pattern: $(cat /proc/sys/kernel/core_pattern)"; echo "ulimit -c: $(ulimit -c)"
  "$XTASK" --version
} > "$OUT/env.log" 2>&1

nvcc -arch=sm_90 -lineinfo -g -o "$WORK/bin/hang_flag" "$WORK/hang_flag.cu" > "$OUT/build.log" 2>&1 \
  || { echo "build failed"; cat "$OUT/build.log"; exit 1; }

now() { date +%s.%N; }
since() { awk "BEGIN{printf \"%.3f\", $(now) - $1}"; }

# `STATE (threads: N S, M R, ...) TracerPid T` of a process, or `gone`.
state() {
  local p=$1
  [ -r "/proc/$p/stat" ] || { echo gone; return; }
  local s; s=$(sed 's/^.*) //' "/proc/$p/stat" | cut -d' ' -f1)
  local t; t=$(for f in /proc/"$p"/task/*/stat; do sed 's/^.*) //' "$f" | cut -d' ' -f1; done 2>/dev/null \
    | sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')
  echo "$s (threads: $t) TracerPid $(awk '/^TracerPid/ {print $2}' "/proc/$p/status" 2>/dev/null)"
}

# The pids of the tree under $1 (itself included).
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

# Runs CMD... with a time limit into $D/LOG, and writes `$ CMD`, its exit and its time, then the
# target's state a second later, into $D/timing.log.
step() { # log limit cmd...
  local log=$1 limit=$2; shift 2
  local t0; t0=$(now)
  timeout -s KILL "$limit" "$@" > "$D/$log" 2>&1
  local rc=$?
  { echo "\$ $*"; echo "  exit $rc in $(since "$t0") s"; } >> "$D/timing.log"
  sleep 1
  echo "  after $log: pid $PID $(state "$PID")" >> "$D/timing.log"
}

# Starts CMD... in $D/cwd without the tool, with ENV..., and waits $WAIT s: sets PID.
start() { # case wait env... -- cmd...
  D=$OUT/$1; local wait=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  rm -rf "$D"; mkdir -p "$D/cwd" "$D/dumps"
  (cd "$D/cwd" && exec setsid env "${envs[@]}" "$@" > "$D/stdout.log" 2> "$D/stderr.log") &
  PID=$!
  echo "\$ ${envs[*]} $* (pid $PID)" > "$D/command.txt"
  sleep "$wait"
  ps -o pid,ppid,pgid,stat,etime,args -p "$(tree "$PID" | tr ' ' ,)" > "$D/ps.log" 2>&1
  echo "started: pid $PID $(state "$PID")" > "$D/timing.log"
}

# The tool's `dump` into $D/bundles: its stdout and stderr, then the target's state.
tool() { # log args...
  local log=$1; shift
  step "$log" 300 "$XTASK" dump "$PID" --yes --bundle-dir "$D/bundles" "$@"
}

# Ends the case: what is left of the tree is killed, the dumps listed (and left out).
finish() {
  ls -l "$D/cwd" "$D/dumps" > "$D/files_after.log" 2>&1
  local left; left=$(tree "$PID")
  [ -r "/proc/$PID/stat" ] || left=""
  echo "left at the end: ${left:-none}" >> "$D/timing.log"
  kill -KILL -- -"$PID" 2>/dev/null
  # shellcheck disable=SC2086
  for p in $left; do kill -KILL "$p" 2>/dev/null; done
  find "$D" -type f \( -name 'core_*' -o -name 'core.*' -o -name 'core' \) -size +64k -printf '%s\t%P\n' \
    > "$D/dumps_left_out.log" 2>/dev/null
  find "$D" -type f \( -name 'core_*' -o -name 'core.*' -o -name 'core' \) -size +64k -delete 2>/dev/null
  find "$D" -type p -delete 2>/dev/null
}

# The raw attaches of a plain case, then the tool without and with --kill.
plain() { # py
  step attach_raw.log 120 cuda-gdb -batch -nx -iex "set auto-solib-add off" -p "$PID" \
    -ex "info cuda kernels" -ex "info cuda threads" -ex bt
  if [ -n "$GDB" ]; then
    step gdb_raw.log 120 "$GDB" -p "$PID" -batch -ex "thread apply all bt"
  else
    echo "no gdb on this machine" > "$D/gdb_raw.log"
  fi
  if [ "$1" = py ] && [ -n "$PYSPY" ]; then
    step pyspy_raw.log 60 "$PYSPY" dump --native --pid "$PID"
  fi
  tool dump.log
  tool dump_kill.log --kill
}

armed_env() { # pipe/file patterns under $D/dumps, or the driver's defaults
  if [ "$1" = patterns ]; then
    echo CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_SHOW_PROGRESS=1 \
      "CUDA_COREDUMP_PIPE=$OUT/$2/dumps/corepipe.%h.%p" "CUDA_COREDUMP_FILE=$OUT/$2/dumps/core.%h.%p.%t" \
      "CUDA_COREDUMP_GENERATION_FLAGS=$SKIP"
  else
    echo CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1 CUDA_COREDUMP_SHOW_PROGRESS=1 "CUDA_COREDUMP_GENERATION_FLAGS=$SKIP"
  fi
}

want() { [ $# -eq 0 ] || [[ " $* " == *" $CASE "* ]]; }
CASES=("$@")
for CASE in flag triton flag_armed flag_armed_default flag_armed_after_attach; do
  want "${CASES[@]}" || continue
  case $CASE in
    flag) start flag "$HANG" -- "$WORK/bin/hang_flag"; plain native ;;
    triton) start triton "$HANG_PY" -- "$PYTHON" "$WORK/hang_triton.py"; plain py ;;
    flag_armed)
      # shellcheck disable=SC2046
      start flag_armed "$HANG" $(armed_env patterns flag_armed) -- "$WORK/bin/hang_flag"
      ls -l "$D/dumps" > "$D/files_before.log" 2>&1
      tool dump_kill.log --kill
      ;;
    flag_armed_default)
      # shellcheck disable=SC2046
      start flag_armed_default "$HANG" $(armed_env default) -- "$WORK/bin/hang_flag"
      ls -l "$D/cwd" > "$D/files_before.log" 2>&1
      ls -l /proc/"$PID"/fd > "$D/fds_before.log" 2>&1
      tool dump_kill.log --kill
      ;;
    flag_armed_after_attach)
      # shellcheck disable=SC2046
      start flag_armed_after_attach "$HANG" $(armed_env patterns flag_armed_after_attach) -- "$WORK/bin/hang_flag"
      tool dump.log
      tool dump_kill.log --kill
      ;;
  esac
  finish
done
echo "recorded into $OUT"
