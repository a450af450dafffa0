# Sourced by the stand-in target for a hang recording ($hdir, tests/fixtures/h200/hang/<case>,
# recorded by tests/gpu/record_hang.sh on an H200) under CUDA_ENABLE_USER_TRIGGERED_COREDUMP=1:
# replays what the driver did there. The process makes its named pipe from
# CUDA_COREDUMP_PIPE (%h host, %p its pid), prints the recorded stdout, and blocks reading
# the pipe; on a write it prints its recorded `coredump:` lines (stderr.log, its dump named
# as this run's), writes a small dump at CUDA_COREDUMP_FILE (%t a timestamp), leaves a CPU
# core where core_pattern says when its core limit allows one (as the kernel would on the
# abort), and dies of SIGABRT (exit 134). In a recording with a spawned worker
# (`spawn_main` in ps.log), the first process starts the worker (this script again), which
# does the same with its own pipe and never writes to stdout.
# Each process stands for a recorded pid (STANDIN_HANG_PID, the first row of ps.log for the
# first process), which the dump names so that the cuda-gdb and py-spy stand-ins replay its
# own recordings. Test switches: STANDIN_WORKER_EXITS=1 makes the worker exit at once after
# making its pipe (a process gone before the trigger). Each process notes when its pipe was
# read in STANDIN_TRIGGERS (`PID start|end`), for the test that dumps come one at a time.

rec_pid=${STANDIN_HANG_PID:-$(awk 'NR == 2 { print $1; exit }' "$hdir/ps.log")}
note_pid "${STANDIN_HANG_ROLE:-target}" $$

pipe=$(fill_template "${CUDA_COREDUMP_PIPE:-corepipe.%h.%p}" $$)
rm -f "$pipe"
mkfifo -m 640 "$pipe"
# Test switch: STANDIN_STRAY_PIPES=N also makes N pipes named as other processes' (pid 1 among
# all: alive, and never of the target's tree), which nobody reads: the hang rung must leave them alone, within its deadline.
if [ -n "${STANDIN_STRAY_PIPES:-}" ]; then
  d=$(dirname "$pipe")
  i=0
  while [ "$i" -lt "$STANDIN_STRAY_PIPES" ]; do
    mkfifo -m 640 "$d/corepipe.stray$((i + 1)).1" 2>/dev/null
    i=$((i + 1))
  done
fi

# torch.distributed's flight recorder (STANDIN_NCCL_TRACE: a recorded dump, the pickle of
# tests/fixtures/h200/hang/nccl_trace): PyTorch makes `<TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe`
# and, when something is written to it, dumps to `<TORCH_NCCL_DEBUG_INFO_TEMP_FILE><rank>`;
# the pipe stays behind (PyTorch does not remove it).
if [ -z "${STANDIN_HANG_ROLE:-}" ] && [ -n "${STANDIN_NCCL_TRACE:-}" ] && [ -n "${TORCH_NCCL_DEBUG_INFO_PIPE_FILE:-}" ]; then
  npipe="${TORCH_NCCL_DEBUG_INFO_PIPE_FILE}0.pipe"
  rm -f "$npipe"
  mkfifo -m 600 "$npipe"
  (cat "$npipe" >/dev/null && cp "$STANDIN_NCCL_TRACE" "${TORCH_NCCL_DEBUG_INFO_TEMP_FILE}0") &
fi

if [ -z "${STANDIN_HANG_ROLE:-}" ]; then
  worker=$(awk '/spawn_main/ { print $1; exit }' "$hdir/ps.log")
  if [ -n "$worker" ]; then
    STANDIN_HANG_PID=$worker STANDIN_HANG_ROLE=worker "$0" "$@" &
  fi
  cat "$hdir/stdout.log"
fi

if [ "${STANDIN_HANG_ROLE:-}" = worker ] && [ "${STANDIN_WORKER_EXITS:-}" = 1 ]; then
  exit 0
fi

# Blocks until a writer opens the pipe and closes it (the driver reads one byte).
cat "$pipe" >/dev/null
[ -z "${STANDIN_TRIGGERS:-}" ] || echo "$$ start" >>"$STANDIN_TRIGGERS"

dump=$(fill_template "${CUDA_COREDUMP_FILE:-core.%h.%p.%t}" $$)
# This process's block of the recorded progress: from the `Starting` line to `All done` of
# the block that wrote the recorded pid's dump.
awk -v rec=".$rec_pid." -v dump="$dump" -v cwd="$(pwd)" '
  / coredump: Starting GPU coredump generation/ { n = 0; mine = 0 }
  / coredump: / { block[n++] = $0 }
  / coredump: Writing ELF file to / && index($0, rec) { mine = 1 }
  / coredump: All done/ && mine {
    for (i = 0; i < n; i++) {
      l = block[i]
      sub(/Writing ELF file to .*/, "Writing ELF file to " dump, l)
      sub(/Current working directory is .*/, "Current working directory is " cwd, l)
      print l
    }
    mine = 0
  }' "$hdir/stderr.log" >&2
# A GPU dump's ELF header as the driver starts it (ET_CORE, EM_CUDA), then what it stands for.
printf '\177ELF\002\001\001\063\007\000\000\000\000\000\000\000\004\000\276\000\nstand-in GPU coredump (hang) of recorded pid %s\n' "$rec_pid" >"$dump"
case ${CUDA_COREDUMP_GENERATION_FLAGS:-} in
  *skip_abort*)
    # No abort after the dump: the kernel spins on, until whoever triggered the dump ends it.
    rm -f "$pipe"
    while :; do sleep 1; done
    ;;
esac

# The kernel writes the abort's CPU core where core_pattern says, if the limit allows.
limit=$(ulimit -c 2>/dev/null || echo 0)
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
if [ "$limit" != 0 ] && [ -n "$pattern" ] && [ "${pattern#|}" = "$pattern" ] && [ -f "$hdir/cpucore_1.log" ]; then
  core=$(printf '%s\n' "$pattern" | sed -e "s/%p/$$/g" -e "s/%e/target/g" -e "s/%t/$(date +%s)/g" -e "s/%h/$(host_name)/g")
  if [ "$(cat /proc/sys/kernel/core_uses_pid 2>/dev/null)" = 1 ] && [ "${pattern#*%p}" = "$pattern" ]; then
    core=$core.$$
  fi
  # An ELF core header for x86-64 (ET_CORE, EM_X86_64), as the kernel writes one.
  printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\004\000\076\000\nstand-in CPU core (hang) of recorded pid %s\n' "$rec_pid" >"$core" 2>/dev/null
fi
rm -f "$pipe"
[ -z "${STANDIN_TRIGGERS:-}" ] || { sleep 0.3; echo "$$ end" >>"$STANDIN_TRIGGERS"; }
end_as 134
