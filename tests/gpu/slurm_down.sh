#!/usr/bin/env bash
# slurm_down.sh: stops the cluster tests/gpu/slurm_up.sh started from DIR and leaves nothing of
# it running. First cancels every job of that cluster (so that their slurmstepd and tasks end),
# then stops the slurmd, slurmctld and munged by the pids in DIR/*.pid (.ci/slurm-down), then
# kills, by pid, any process still running a program from DIR/x (a slurmstepd left behind),
# and says whether any is left (exit 1 if so).
#
# What it must not do: signal a process by name (pkill, killall) or any process that is not
# running a program from DIR/x, even where a pid file names it (a pid reused since); touch a
# system copy of Slurm or munge; write or delete anything (DIR stays, for its logs).
#
# usage: bash tests/gpu/slurm_down.sh DIR
set -uo pipefail
D=${1:?usage: slurm_down.sh DIR}
D=$(cd "$D" 2>/dev/null && pwd) || { echo "slurm_down: no folder $1" >&2; exit 0; }
X=$D/x
ours() { # pid: is it running a program from DIR/x?
  local exe
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  case "$exe" in "$X"/*) return 0 ;; *) return 1 ;; esac
}

if [ -f "$D/env" ] && [ -f "$D/slurmctld.pid" ] && ours "$(cat "$D/slurmctld.pid")"; then
  (
    eval "$(cat "$D/env")"
    jobs=$(squeue -h -o %i 2>/dev/null)
    if [ -n "$jobs" ]; then
      echo "slurm_down: cancelling jobs ${jobs//$'\n'/ }"
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null
      for _ in $(seq 1 50); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
    fi
  )
fi

# The daemons, by their pid files, each only if it is ours.
for f in "$D"/slurmd.node*.pid "$D"/slurmctld.pid "$D"/munged.pid; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  if ! ours "$pid"; then continue; fi
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 50); do ours "$pid" || break; sleep 0.1; done
  ours "$pid" && kill -9 "$pid" 2>/dev/null
done

# Anything else still running from the prefix (a slurmstepd), by pid.
left() { local p; for p in /proc/[0-9]*; do p=${p#/proc/}; ours "$p" && echo "$p"; done; }
for pid in $(left); do
  echo "slurm_down: killing $pid ($(readlink "/proc/$pid/exe" 2>/dev/null))"
  kill "$pid" 2>/dev/null
done
sleep 0.5
for pid in $(left); do kill -9 "$pid" 2>/dev/null; done
sleep 0.2
rest=$(left)
if [ -n "$rest" ]; then
  echo "slurm_down: still running from $X: ${rest//$'\n'/ }" >&2
  exit 1
fi
echo "slurm_down: nothing from $X is running"
