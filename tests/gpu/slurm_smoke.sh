#!/usr/bin/env bash
# slurm_smoke.sh: checks tests/gpu/slurm_up.sh's cluster end to end and stops it again: up,
# `srun -N2 -n2` across node1 and node2, `salloc` with an `srun --overlap` step on node2,
# `sbatch --wrap` seen in squeue and its output, a running job that slurm_down.sh must cancel,
# then down and no process of DIR/x left. Prints 'N passed, N failed'; exit 1 on any failure.
#
# What it must not do: anything slurm_up.sh and slurm_down.sh must not (it only calls them and
# the Slurm commands of DIR/x); leave a cluster running, even when a check fails.
#
# usage: bash tests/gpu/slurm_smoke.sh DIR      (DIR as for slurm_up.sh; stays, for its logs)
# shellcheck disable=SC2016  # the single-quoted commands run under srun, where they expand
set -uo pipefail
D=${1:?usage: slurm_smoke.sh DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pass=0 fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
no() { echo "FAILED: $1" >&2; fail=$((fail + 1)); }

bash "$here/slurm_up.sh" "$D" || { echo "0 passed, 1 failed"; exit 1; }
D=$(cd "$D" && pwd)
trap 'bash "$here/slurm_down.sh" "$D" >/dev/null 2>&1' EXIT
eval "$(cat "$D/env")"
ok "up: $(sinfo -h -N -o '%N=%t' | tr '\n' ' ')"

out=$(timeout 60 srun -N2 -n2 --nodelist=node1,node2 --label sh -c 'echo "$SLURMD_NODENAME"' 2>&1)
if grep -qx '0: node1' <<<"$out" && grep -qx '1: node2' <<<"$out"; then ok "srun -N2 -n2"; else no "srun -N2 -n2: $out"; fi

out=$(timeout 60 salloc -N2 -n2 bash -c \
  'srun --label hostname >/dev/null && srun --overlap -w node2 -N1 -n1 sh -c "echo overlap on \$SLURMD_NODENAME"' 2>&1)
if grep -q 'overlap on node2' <<<"$out"; then ok "salloc + srun --overlap -w node2"; else no "salloc: $out"; fi

j=$(sbatch --parsable -N2 -n2 -D "$D" -o "$D/smoke.%j.out" --wrap 'srun --label sh -c "echo batch \$SLURMD_NODENAME"; sleep 2' 2>&1)
if grep -q "^ *$j " <<<"$(squeue -h -o '%i %T')"; then ok "sbatch --wrap: job $j in squeue"; else no "sbatch: job '$j' not in squeue"; fi
for _ in $(seq 1 60); do [ -z "$(squeue -h -j "$j" 2>/dev/null)" ] && break; sleep 0.5; done
if grep -qx '0: batch node1' "$D/smoke.$j.out" 2>/dev/null && grep -qx '1: batch node2' "$D/smoke.$j.out"; then
  ok "batch job's output"
else
  no "batch job's output: $(cat "$D/smoke.$j.out" 2>&1)"
fi

k=$(sbatch --parsable -N2 -n2 -D "$D" -o "$D/smoke.%j.out" --wrap 'srun sleep 300.4217')
for _ in $(seq 1 40); do [ "$(squeue -h -j "$k" -o %T 2>/dev/null)" = RUNNING ] && break; sleep 0.25; done
trap - EXIT
bash "$here/slurm_down.sh" "$D"
left=""
for p in /proc/[0-9]*; do
  e=$(readlink "$p/exe" 2>/dev/null) || continue
  case "$e" in "$D"/x/*) left="$left ${p#/proc/}($e)" ;; esac
  [ "$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)" = "sleep 300.4217 " ] && left="$left ${p#/proc/}(the job's task)"
done
if [ -z "$left" ]; then ok "down: nothing of $D/x running (job $k was running)"; else no "down left:$left"; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
