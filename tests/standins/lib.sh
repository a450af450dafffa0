# Shared by the stand-ins in this folder (sourced, not run). Each stand-in replays what the
# real tool printed for one case of the GPU suite, recorded on an H200 by
# tests/gpu/record.sh into tests/fixtures/h200/<case>/; STANDIN_CASE names the case (a
# folder, or a case name under tests/fixtures/h200). Only replays: no output is invented
# but the PIDs, the host and the paths that differ from run to run.

# Through a link (a `python3` link to the target, for a Python-named process) too.
standin_dir=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)

# The recordings of the case, or exit 127 saying why.
case_dir() {
  c=${STANDIN_CASE:-}
  if [ -z "$c" ]; then
    echo "$(basename "$0") (stand-in): STANDIN_CASE is not set (a folder of tests/fixtures/h200)" >&2
    exit 127
  fi
  if [ ! -d "$c" ] && [ -d "$standin_dir/../fixtures/h200/$c" ]; then
    c=$standin_dir/../fixtures/h200/$c
  fi
  if [ ! -f "$c/meta.tsv" ]; then
    echo "$(basename "$0") (stand-in): no recording in STANDIN_CASE=$c (meta.tsv missing)" >&2
    exit 127
  fi
  echo "$c"
}

# The recorded exit status of a row of meta.tsv (empty when the row is absent).
recorded_code() { # case-dir row
  [ -f "$1/meta.tsv" ] || return 0
  awk -F'\t' -v r="$2" '$1 == r { print $2; exit }' "$1/meta.tsv"
}

# Ends the way the recorded process ended: a status above 128 is how the shell reported
# a death by signal (134 = SIGABRT), so die of that signal; otherwise exit with it.
end_as() { # status
  s=${1:-0}
  case $s in '' | *[!0-9]*) s=0 ;; esac
  if [ "$s" -gt 128 ] && [ "$s" -lt 160 ]; then
    ulimit -c 0 2>/dev/null # no core file of this shell in the caller's folder
    kill -s "$((s - 128))" $$
    sleep 1 # the signal is delivered before this ends
  fi
  exit "$s"
}

# Appends `ROLE PID` to $STANDIN_PIDS when set, so tests can check what was killed.
note_pid() { # role pid
  if [ -n "${STANDIN_PIDS:-}" ]; then
    echo "$1 $2" >>"$STANDIN_PIDS"
  fi
}

# Prints a recorded log (stdout and stderr were recorded together) on stderr.
replay() { # file
  if [ -f "$1" ]; then
    cat "$1" >&2
  fi
}

# The host name, as the driver puts it into dump names.
host_name() {
  uname -n 2>/dev/null || cat /proc/sys/kernel/hostname
}

# The hang recording of the case (tests/fixtures/h200/hang/<case>: a folder with
# timing.log and trigger.log, recorded by tests/gpu/record_hang.sh), or nothing.
hang_case_dir() {
  c=${STANDIN_CASE:-}
  [ -n "$c" ] || return 1
  if [ ! -d "$c" ] && [ -d "$standin_dir/../fixtures/h200/hang/$c" ]; then
    c=$standin_dir/../fixtures/h200/hang/$c
  fi
  [ -f "$c/timing.log" ] && [ -f "$c/trigger.log" ] || return 1
  echo "$c"
}

# A CUDA_COREDUMP_* template with %h, %p and %t filled as the driver fills them.
fill_template() { # template pid
  printf '%s\n' "$1" | sed -e "s/%h/$(host_name)/g" -e "s/%p/$2/g" -e "s/%t/$(date +%s)/g"
}

# meet NAME: with STANDIN_MEET=DIR (tests of runs side by side), marks this run running in DIR,
# waits up to STANDIN_MEET_WAIT seconds (default 10) for STANDIN_MEET_COUNT (default 4) runs to
# be running at once, appends `NAME saw N` to DIR/seen.log, and sets MET to N.
meet() {
  mkdir -p "$STANDIN_MEET"
  _mark=$STANDIN_MEET/running.$1.$$
  : >"$_mark"
  _want=${STANDIN_MEET_COUNT:-4}
  _tries=$((${STANDIN_MEET_WAIT:-10} * 20))
  MET=1
  while [ "$_tries" -gt 0 ]; do
    MET=$(find "$STANDIN_MEET" -name 'running.*' | wc -l)
    [ "$MET" -ge "$_want" ] && break
    sleep 0.05
    _tries=$((_tries - 1))
  done
  echo "$1 saw $MET" >>"$STANDIN_MEET/seen.log"
  sleep 0.3 # the others see this one too before it ends
  rm -f "$_mark"
}
