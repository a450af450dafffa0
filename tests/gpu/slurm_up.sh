#!/usr/bin/env bash
# slurm_up.sh: a one-host Slurm cluster (node1, node2) on a machine with no Slurm, no package
# registry and no network (the GPU machine: Ubuntu 24.04, root), from Debian 12's .deb files
# carried in .slurm-debs/ (slurmctld, slurmd, slurm-client, munge and the libraries they need).
#
# What it does: unpacks every .slurm-debs/*.deb with `dpkg -x` into DIR/x (never into /),
# makes the names slurmctld, slurmd, slurmstepd there (Debian installs *-wlm and leaves the
# names to update-alternatives), puts into DIR/x/ld only the carried libraries whose soname
# the system's loader does not already know (so that what srun exports to a job's tasks never
# shadows the system's own newer libraries), refuses unless every Slurm and munge command then
# found on PATH lies under DIR/x and every binary and plugin resolves its libraries, starts
# munged, slurmctld and two slurmd through .ci/slurm-up (the same cluster CI runs, with
# PluginDir and slurmstepd pointed into DIR/x, which Debian's build hard-codes at
# /usr/lib/x86_64-linux-gnu/slurm-wlm and /usr/sbin/slurmstepd), waits until both nodes are
# idle, writes DIR/env and prints its one line of exports (PATH, LD_LIBRARY_PATH, SLURM_CONF).
# Every other path Debian's build hard-codes (/etc/slurm, /etc/munge, /run/munge, /var/lib/munge,
# /var/log/munge, /var/spool/slurmd, /run/slurm*.pid) is given explicitly on the command line
# or in DIR/slurm.conf, the munge socket through AuthInfo.
#
# What it must not do: write anything outside DIR (the prefix DIR/x and the cluster's state,
# logs, key, socket and pids in DIR itself); install, replace or run a system copy of Slurm or
# munge; touch /etc, /run, /var or ld.so's cache; leave a daemon that slurm_down.sh cannot find
# by its pid file.
#
# .slurm-debs/ (ignored, not committed; 27 files, 6.2 MiB) is made on a Debian 12 machine with
#   mkdir -p .slurm-debs && cd .slurm-debs && apt-get download slurmctld slurmd slurm-client \
#     slurm-wlm-basic-plugins munge libmunge2 libhwloc15 libnuma1 libjson-c5 liblua5.1-0 \
#     libyaml-0-2 libdbus-1-3 libreadline8 libtinfo6 liblz4-1 libgcrypt20 libgpg-error0 zlib1g \
#     libbz2-1.0 liblzma5 libzstd1 libsystemd0 libudev1 libcap2 libpam0g libaudit1 libcap-ng0
#   (the NEEDED closure of every binary and plugin in them, less glibc, libgcc and libstdc++).
#
# usage: bash tests/gpu/slurm_up.sh DIR && eval "$(cat DIR/env)"
#        bash tests/gpu/slurm_down.sh DIR
# env:   SLURM_DEBS  the folder of .deb files (else .slurm-debs/ in the repository root)
#        SLURM_X_LIBS=all  put every carried library into DIR/x/ld, not only the missing ones
#        SLURM_X_CGROUP=auto  let slurmd pick its cgroup plugin (else cgroup/v1, see below)
#        SLURM_UP_PORT     the first port tried (else 17817, away from CI's 16817)
set -euo pipefail
D=${1:?usage: slurm_up.sh DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
debs=${SLURM_DEBS:-$root/.slurm-debs}
[ "$(id -u)" = 0 ] || { echo "error: slurm_up.sh runs as root (slurmd and munged do)" >&2; exit 1; }
mkdir -p "$D"
D=$(cd "$D" && pwd)
case "$D" in /|/usr|/usr/*|/etc|/etc/*|/var|/run|/opt|/bin|/sbin|/lib|/lib64|/tmp|/root|/home)
  echo "error: DIR must be a folder of its own, not $D" >&2; exit 1 ;;
esac
# DIR is new, empty, or one this script made (it deletes DIR/x, DIR/state, DIR/spool).
if [ -n "$(ls -A "$D")" ] && [ ! -f "$D/.slurm_up" ]; then
  echo "error: $D holds files that slurm_up.sh did not make; name a new folder" >&2; exit 1
fi
: > "$D/.slurm_up"
shopt -s nullglob
# A cluster from this DIR still running (a pid file naming a process of DIR/x) is not unpacked over.
for f in "$D"/*.pid; do
  exe=$(readlink "/proc/$(cat "$f")/exe" 2>/dev/null || true)
  case "$exe" in "$D"/x/*)
    echo "error: $f names a running $exe; bash tests/gpu/slurm_down.sh $D first" >&2
    exit 1 ;;
  esac
done
for c in dpkg hostname nproc dd seq grep awk stat timeout getent; do
  command -v "$c" >/dev/null 2>&1 || { echo "error: slurm_up.sh needs $c" >&2; exit 1; }
done
# slurm.conf names the controller 'localhost' (as in CI): unresolved, every client and slurmd
# waits on DNS retries instead of failing.
getent ahostsv4 localhost 2>/dev/null | grep -q '^127\.' \
  || { echo "error: 'localhost' does not resolve to 127.x here (/etc/hosts); Slurm needs it" >&2; exit 1; }
pkgs=("$debs"/*.deb)
[ ${#pkgs[@]} -gt 0 ] || { echo "error: no .deb files in $debs" >&2; exit 1; }

# Unpack into the prefix, afresh; no job or node state from an earlier run (its logs stay).
X=$D/x
rm -rf "$X" "$D/state" "$D/spool" "$D"/*.pid "$D/env"
mkdir -p "$X"
for f in "${pkgs[@]}"; do dpkg -x "$f" "$X"; done
SLD=$X/usr/lib/x86_64-linux-gnu/slurm-wlm
for need in "$X/usr/sbin/munged" "$X/usr/sbin/slurmctld-wlm" "$X/usr/sbin/slurmd-wlm" \
  "$X/usr/sbin/slurmstepd-wlm" "$X/usr/bin/srun" "$SLD/libslurmfull.so" "$SLD/auth_munge.so"; do
  [ -e "$need" ] || { echo "error: $need is not in the packages of $debs" >&2; exit 1; }
done
mkdir -p "$X/bin"
for n in slurmctld slurmd slurmstepd; do ln -sf "../usr/sbin/$n-wlm" "$X/bin/$n"; done

# The carried libraries (not Slurm's own folder): link into X/ld those the loader lacks.
mkdir -p "$X/ld"
# ld.so's cache (x86-64 entries) is what the loader searches after LD_LIBRARY_PATH.
known=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true) | awk '/x86-64.*=>/{print $1}' | sort -u)
link_libs() { # all|missing
  local f so
  rm -f "$X"/ld/*
  # The sonames (libz.so.1): the packages ship each as a link to the versioned file.
  for f in "$X"/lib/x86_64-linux-gnu/*.so.* "$X"/usr/lib/x86_64-linux-gnu/*.so.*; do
    [ -L "$f" ] || continue
    so=$(basename "$f")
    if [ "$1" = missing ] && grep -qxF "$so" <<<"$known"; then continue; fi
    ln -sf "$(readlink -f "$f")" "$X/ld/$so"
  done
}
mode=${SLURM_X_LIBS:-missing}
link_libs "$mode"
LIBS=$SLD:$X/ld

export PATH="$X/bin:$X/usr/sbin:$X/usr/bin:$PATH"
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Every command must be ours.
for c in munged slurmctld slurmd slurmstepd srun sinfo squeue scancel sbatch salloc scontrol; do
  p=$(command -v "$c" || true)
  case "$p" in
    "$X"/*) echo "slurm_up: $c = $p" ;;
    *) echo "error: $c is '${p:-not found}', not under $X" >&2; exit 1 ;;
  esac
done

# Every binary and every plugin (those slurm.conf names and those Slurm loads on its own)
# resolve their libraries: ldd's 'not found' is a missing soname or a missing symbol version.
check_libs() {
  local f bad=0 out
  command -v ldd >/dev/null 2>&1 || { echo "slurm_up: no ldd here; libraries not checked" >&2; return 0; }
  for f in "$X"/usr/sbin/* "$X"/usr/bin/* "$SLD"/*.so; do
    out=$(ldd "$f" 2>&1 || true)
    if grep -q 'not found' <<<"$out"; then
      echo "slurm_up: $f: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ' | tr '\n' ';')" >&2
      bad=1
    fi
  done
  return $bad
}
if ! check_libs; then
  if [ "$mode" = all ]; then echo "error: libraries missing even with every carried one" >&2; exit 1; fi
  echo "slurm_up: retrying with every carried library (SLURM_X_LIBS=all)" >&2
  mode=all
  link_libs all
  check_libs || { echo "error: libraries missing even with every carried one" >&2; exit 1; }
fi
# shellcheck disable=SC2012
echo "slurm_up: carried libraries in use ($mode): $(cd "$X/ld" && ls | tr '\n' ' ')"

# slurmd 22.05 always loads a cgroup plugin, even with proctrack/linuxproc and task/none, which
# never use it, and by default picks it from what /sys/fs/cgroup is: with no cgroup file system
# there (a chroot, a sandbox) it stops ("No filesystem mounted"), with cgroup v2 beside v1 it
# stops ("Hybrid mode is not supported"), and on plain v2 it wants a delegated cgroup. cgroup/v1
# loads without touching /sys/fs/cgroup (seen with none mounted and with cgroup2 mounted), so
# DIR/cgroup.conf (read from slurm.conf's folder) names it; SLURM_X_CGROUP=auto leaves the pick
# to slurmd.
rm -f "$D/cgroup.conf"
if [ "${SLURM_X_CGROUP:-v1}" != auto ]; then
  printf 'CgroupPlugin=cgroup/v1\nCgroupAutomount=no\n' > "$D/cgroup.conf"
fi
echo "slurm_up: /sys/fs/cgroup is '$(stat -f -c %T /sys/fs/cgroup 2>/dev/null || echo absent)'; cgroup plugin: ${SLURM_X_CGROUP:-v1}"

# The cluster: CI's own script, with the plugins and slurmstepd of the prefix, and an empty
# plugstack (no SPANK plugin from a system's /etc/slurm/plugstack.conf).
: > "$D/plugstack.conf"
if ! SLURM_UP_PORT=${SLURM_UP_PORT:-17817} \
  SLURM_UP_STEPD="$X/bin/slurmstepd" \
  SLURM_UP_CONF_EXTRA="PluginDir=$SLD
PlugStackConfig=$D/plugstack.conf
MailProg=/bin/true" \
  timeout 120 bash "$root/.ci/slurm-up" "$D"; then
  for f in "$D"/munged.log "$D"/slurmctld.log "$D"/slurmd.node*.log; do
    [ -f "$f" ] && { echo "== $f (last lines)" >&2; tail -n 15 "$f" >&2; }
  done
  bash "$here/slurm_down.sh" "$D" >&2 || true
  exit 1
fi

# shellcheck disable=SC2016
printf 'export PATH="%s:$PATH" LD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SLURM_CONF="%s"\n' \
  "$X/bin:$X/usr/sbin:$X/usr/bin" "$LIBS" "$D/slurm.conf" > "$D/env"
cat "$D/env"
