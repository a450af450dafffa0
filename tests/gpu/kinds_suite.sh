#!/usr/bin/env bash
# Issue 23's bug kinds on a machine with an NVIDIA GPU: runs `xtask debug-ima` on each program of
# tests/gpu/kinds/ exactly as a user would -- the built-in `cuda` recipe with the case's own
# Makefile (`make -B`, then ./PROG) or the built-in `pytorch` recipe with the script, the DEFAULT
# climb (no --full, no --rungs), non-interactive (--yes); the hang case with --hang-after -- and
# compares the verdict with tests/gpu/kinds/expected.tsv (kernel, file:line, class, launch site,
# and the extra checks: the race's other line, the capture site, the library, the other bugs).
#
# Each case runs in a fresh copy under WORK (default: a new mktemp folder under /tmp), its bundle
# in WORK/bundles/<case>, its logs in WORK/logs/<case> (the tool's stdout and stderr,
# `xtask analyze --json` of the bundle, the compare, the processes left). After each case: that
# no process of it is left (by pid: cwd or command line under the case's folders; killed if so)
# and what `nvidia-smi --query-compute-apps` lists. Outputs, all three rewritten after every
# case so that a call stopped at its limit still returns what was done:
#   OUTDIR/kinds.md              a markdown table, one row per case, PASS/FAIL per field
#   OUTDIR/kinds.tsv             the same, tab-separated
#   OUTDIR/kinds-bundles.tar.gz  WORK's bundles and logs, without GPU dumps or CPU cores
#                                (core_*, core.*, core, *.nvcudmp) and files over 8 MiB
#
# Time: DEADLINE_S (540) from the start for the whole suite; each case gets its budget (below)
# or what is left, whichever is less; a case that no longer fits MIN_CASE_S (40) is skipped
# and says so. Other knobs: WORK, HANG_AFTER (overrides the case's hang-after), PYTHON (the
# pytorch recipe's `python`, default python3), BUILD ("make -B"; where make is missing, the
# Makefile's nvcc line instead), KEEP_CORES=1 (leave dumps in WORK; the tarball never has them).
#
# usage: tests/gpu/kinds_suite.sh XTASK_BINARY OUTDIR [CASE...]
set -u
LC_ALL=C
export LC_ALL
[ $# -ge 2 ] || { echo "usage: tests/gpu/kinds_suite.sh XTASK_BINARY OUTDIR [CASE...]" >&2; exit 2; }
if [[ $1 == */* ]]; then
  XTASK=$(cd "$(dirname "$1")" 2> /dev/null && pwd)/$(basename "$1")
else
  XTASK=$(command -v -- "$1" || echo "$PWD/$1")
fi
mkdir -p "$2" || exit 2
OUTDIR=$(cd "$2" && pwd)
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KINDS=$HERE/kinds
EXPECTED=$KINDS/expected.tsv
# shellcheck source=tests/gpu/lib.sh
. "$HERE/lib.sh" # now(); meta() (with CASE_DIR set per case)
WORK=${WORK:-$(mktemp -d /tmp/kinds.XXXXXX)}
mkdir -p "$WORK/bundles" "$WORK/logs" || exit 2
WORK=$(cd "$WORK" && pwd)
DEADLINE_S=${DEADLINE_S:-540}
MIN_CASE_S=${MIN_CASE_S:-40}
RESERVE_S=${RESERVE_S:-15} # kept back at the end for the outputs
BUILD=${BUILD:-make -B}
MD=$OUTDIR/kinds.md
TSV=$OUTDIR/kinds.tsv
TAR=$OUTDIR/kinds-bundles.tar.gz
T0=$(now)

since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
left_s() { awk -v t0="$T0" -v n="$(now)" -v d="$DEADLINE_S" -v r="$RESERVE_S" 'BEGIN { x = d - r - (n - t0); if (x < 0) x = 0; printf "%d", x }'; }
budget_of() { # case recipe class -> seconds this case may take at most
  case $1 in
    cublas_*) echo 150 ;;
    *)
      case $2:$3 in
        *:hang) echo 150 ;;
        pytorch:*) echo 200 ;;
        *) echo 110 ;;
      esac
      ;;
  esac
}
extra_of() { # extra key -> the value of key=VALUE in the extra field ($EXTRA)
  local kv kvs
  IFS=';' read -ra kvs <<< "$EXTRA"
  for kv in "${kvs[@]}"; do [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return 0; }; done
  return 1
}
prog_of() { # Makefile -> the program it builds: PROG, TARGET or BIN
  sed -n -E 's/^[[:space:]]*(PROG|TARGET|BIN)[[:space:]]*[:?]?=[[:space:]]*([^[:space:]#]+).*/\2/p' "$1" | head -1
}
clean() { printf '%s' "${1:--}" | tr '\t\n|' '  /' | cut -c1-"${2:-300}"; }

# ---- the comparison: findings.json (the ladder's verdict) against expected.tsv -----------
cat > "$WORK/compare.py" << 'PY'
"""compare.py FINDINGS ANALYZE CASE KERNEL FILE LINE CLASS LAUNCH EXTRA -> one TSV line on
stdout (got/ok per field), the reasoning on stderr. FINDINGS is the bundle's findings.json (the
verdict the user saw); ANALYZE is `xtask analyze --json` of the bundle, compared for agreement."""
import json, os, sys

fj, aj, case, e_kernel, e_file, e_line, e_class, e_launch, e_extra = sys.argv[1:10]
base = lambda p: os.path.basename(str(p)) if p else None
log = lambda *a: print(*a, file=sys.stderr)

def load(p):
    try:
        with open(p) as f:
            text = f.read()
        i = text.find("{")  # anything printed before the JSON object
        return json.loads(text[i:]) if i >= 0 else None
    except (OSError, ValueError) as e:
        log(f"{p}: {e}")
        return None

extras = {}
for kv in e_extra.split(";"):
    if "=" in kv:
        k, v = kv.split("=", 1)
        extras[k.strip()] = v.strip()

def site(d):
    if not isinstance(d, dict) or d.get("line") is None:
        return None
    return f"{base(d.get('file')) or '?'}:{d['line']}"

def positions(x, out):  # every (file, line) anywhere in the verdict, and file:line in its strings
    if isinstance(x, dict):
        if x.get("file") and x.get("line") is not None:
            out.add(f"{base(x['file'])}:{x['line']}")
        for v in x.values():
            positions(v, out)
    elif isinstance(x, list):
        for v in x:
            positions(v, out)
    elif isinstance(x, str):
        import re
        for m in re.finditer(r"([\w.+-]+\.(?:cu|cuh|cpp|cc|h|hpp|py)):(\d+)", x):
            out.add(f"{m.group(1)}:{m.group(2)}")
    return out

def judge(v):
    """-> dict of got/ok per field for verdict v (None: no verdict)."""
    r = {}
    if not v:
        for k in ("kernel", "site", "class", "launch", "extra"):
            r[k] = ("-", False)
        return r
    kernel = v.get("kernel") or ""
    keys = [k.lower() for k in e_kernel.split("|")]
    r["kernel"] = (kernel, any(k in kernel.lower() for k in keys))
    file, line = base(v.get("file")), v.get("line")
    got_site = f"{file or '-'}:{line if line is not None else '-'}"
    file_ok = (file is None) if e_file == "-" else (file == e_file)
    lines = {e_line} | ({extras["alt-line"]} if "alt-line" in extras else set())
    if e_line == "-":
        line_ok = line is None
    elif e_line == "*":
        line_ok = True
    elif "race-other-line" in extras:  # the pair, in either order
        other = ((v.get("hazard") or {}).get("other_side") or {}).get("at") or {}
        o = other.get("line")
        got_site += f" & {base(other.get('file')) or '-'}:{o if o is not None else '-'}"
        line_ok = sorted([str(line), str(o)]) == sorted([e_line, extras["race-other-line"]])
        file_ok = file_ok and (o is None or base(other.get("file")) in (None, e_file))
    else:
        line_ok = str(line) in lines
    r["site"] = (got_site, file_ok and line_ok)
    r["class"] = (str(v.get("error")), str(v.get("error")) == e_class)
    got_launch = site(v.get("launch_site")) or "-"
    r["launch"] = (got_launch, got_launch == e_launch if e_launch != "-" else got_launch == "-")
    got, ok = [], True
    for k, want in extras.items():
        if k == "captured":
            alts = want.split("|")
            seen = positions(v, set())
            hit = [a for a in alts if a in seen]
            got.append(f"captured:{hit[0] if hit else 'no'}")
            ok &= bool(hit)
        elif k == "library":
            lib = v.get("library") or "-"
            got.append(f"library:{lib}")
            ok &= want.lower() in lib.lower()
        elif k == "others":
            names = [o.get("kernel") or "" for o in v.get("others") or []]
            got.append("others:" + (",".join(n.split("(")[0] for n in names) or "none"))
            ok &= all(any(w.lower() in n.lower() for n in names) for w in want.split(","))
        elif k in ("race-other-line", "alt-line", "hang-after", "timeout"):
            pass  # in the site check, or how the suite runs the case
        else:
            got.append(f"{k}:?")
            ok = False
    r["extra"] = (" ".join(got) or "-", ok)
    return r

f, a = load(fj), load(aj)
v = (f or {}).get("verdict")
r = judge(v)
av = (a or {}).get("verdict") if a else None
if a is None:
    agree = "-"
else:
    ra = judge(av)
    agree = "yes" if all(ra[k][0] == r[k][0] for k in r) else "no: " + "; ".join(
        f"{k} {ra[k][0]}" for k in r if ra[k][0] != r[k][0])
rep = (f or {}).get("reproduced")
rep = f"{rep.get('faulted', '?')}/{rep.get('runs', '?')}" if isinstance(rep, dict) else "-"
all_ok = all(ok for _, ok in r.values())
for k in ("kernel", "site", "class", "launch", "extra"):
    log(f"  {k:7s} {'PASS' if r[k][1] else 'FAIL'}  got {r[k][0]}")
log(f"  {'all':7s} {'PASS' if all_ok else 'FAIL'}")
if not v:
    log("  (no verdict: " + str((f or {}).get("conclusion") or "no findings.json") + ")")
clean = lambda s: " ".join(str(s).split()).replace("|", "/")[:240] or "-"
cells = []
for k in ("kernel", "site", "class", "launch", "extra"):
    cells += [clean(r[k][0]), "PASS" if r[k][1] else "FAIL"]
print("\t".join(cells + ["PASS" if all_ok else "FAIL", clean(agree), rep,
                         clean((f or {}).get("conclusion") or "-")]))
PY

# ---- outputs -----------------------------------------------------------------------------
COLS='case\trecipe\texit\twall_s\tlimit_s\tkernel\tkernel_ok\tsite\tsite_ok\tclass\tclass_ok\tlaunch\tlaunch_ok\textra\textra_ok\tall\tanalyze_agrees\treproduced\tdumps\tleft_procs\tgpu_apps\tstopped\tnote'
[ -s "$TSV" ] || printf '%b\n' "$COLS" > "$TSV"
gpu_line=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2> /dev/null | head -1)
{
  echo "# Issue 23 bug kinds: tests/gpu/kinds_suite.sh"
  echo
  echo "Run of $(date -u +%Y-%m-%dT%H:%M:%SZ); GPU: $(clean "$gpu_line" 120); xtask: $(clean "$(timeout 10 "$XTASK" --version 2>&1 | head -1)" 80); git: $(git -C "$ROOT" describe --always --dirty 2> /dev/null || echo -); DEADLINE_S=$DEADLINE_S; work: $WORK"
  echo
  echo "Default climb, \`--yes\`; C++: \`--recipe cuda --set build='$BUILD' --set run=./PROG --set binaries=PROG\`; Python: \`--recipe pytorch --set script=SCRIPT\`. Expected: tests/gpu/kinds/expected.tsv (README.md there says why)."
  echo
  echo "| case | exit | s | kernel | file:line | class | launch site | extra | all | analyze agrees | reproduced | dumps | left | stopped / note |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} > "$MD"
mark() { if [ "$2" = PASS ]; then echo "$1 ✅"; else echo "$1 ❌"; fi; } # text PASS|FAIL
md_row() { # the TSV row's fields (none empty) -> one markdown row
  local IFS=$'\t'
  # shellcheck disable=SC2086
  set -- $1
  echo "| $1 | $3 | $4 | $(mark "\`$6\`" "$7") | $(mark "$8" "$9") | $(mark "${10}" "${11}") | $(mark "${12}" "${13}") | $(mark "${14}" "${15}") | **${16}** | ${17} | ${18} | ${19} | procs: ${20}; gpu: ${21} | ${22} ${23} |" >> "$MD"
}
pack() { # WORK's bundles and logs, without dumps, cores and large files -> the tarball
  cp "$MD" "$TSV" "$WORK/" 2> /dev/null
  (cd "$WORK" && find bundles logs env.txt kinds.md kinds.tsv -type f -size -8M \
    ! -name 'core_*' ! -name 'core.*' ! -name core ! -name '*.nvcudmp' ! -name 'corepipe*' -print0 2> /dev/null |
    tar --null -czf "$WORK/.kinds-bundles.tar.gz" -T - 2> /dev/null)
  mv -f "$WORK/.kinds-bundles.tar.gz" "$TAR" 2> /dev/null
}
trap 'echo "interrupted: writing the outputs" >&2; pack; exit 143' TERM INT
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>&1
  echo "nvcc: $( (${NVCC:-nvcc} --version 2>&1 || true) | tail -2 | tr '\n' ' ')"
  echo "compute-sanitizer: $(compute-sanitizer --version 2>&1 | sed -n 2p)"
  echo "cuda-gdb: $(cuda-gdb --version 2>&1 | head -1)"
  echo "python: $(${PYTHON:-python3} -c 'import sys, torch, triton; print(sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)' 2>&1 | tail -1)"
  echo "xtask: $XTASK ($(timeout 10 "$XTASK" --version 2>&1 | head -1))"
} > "$WORK/env.txt" 2>&1

# ---- processes and dumps left by a case --------------------------------------------------
case_procs() { # folder... -> "pid cmd" of live processes whose cwd or command line is under one
  local p pid cwd cmd d
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
    cwd=$(readlink "$p/cwd" 2> /dev/null) || continue
    cmd=$(tr '\0' ' ' < "$p/cmdline" 2> /dev/null) || continue
    [ -n "$cmd" ] || continue
    for d in "$@"; do
      if [[ $cwd == "$d" || $cwd == "$d"/* || $cmd == *"$d"/* ]]; then
        echo "$pid $(clean "$cmd" 120)"
        break
      fi
    done
  done
}
gpu_apps() {
  command -v nvidia-smi > /dev/null || { echo "n/a"; return; }
  local g
  g=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>&1 | tr -s ' \n' ' ' | sed 's/ $//')
  echo "${g:-none}"
}

# ---- the cases ---------------------------------------------------------------------------
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || mapfile -t CASES < <(awk -F'\t' '!/^#/ && $1 != "case" && NF >= 8 { print $1 }' "$EXPECTED")
n_pass=0 n_run=0
for c in "${CASES[@]}"; do
  row=$(awk -F'\t' -v c="$c" '!/^#/ && $1 == c' "$EXPECTED" | head -1)
  if [ -z "$row" ] || [ ! -d "$KINDS/$c" ]; then
    echo "== $c: not in $EXPECTED (or no tests/gpu/kinds/$c): skipped"
    printf '%s\t-\tskipped\t-\t-\t-\tFAIL\t-\tFAIL\t-\tFAIL\t-\tFAIL\t-\tFAIL\tSKIP\t-\t-\t-\t-\t-\t-\tunknown case\n' "$c" >> "$TSV"
    md_row "$(tail -1 "$TSV")"
    continue
  fi
  IFS=$'\t' read -r _ RECIPE E_KERNEL E_FILE E_LINE E_CLASS E_LAUNCH EXTRA <<< "$row"
  budget=$(budget_of "$c" "$RECIPE" "$E_CLASS")
  left=$(left_s)
  # Beyond its limit a case may take 20 s more (timeout -k), the analyze and the leftover check.
  room=$((left - 30))
  limit=$((budget < room ? budget : room))
  if [ "$limit" -lt "$MIN_CASE_S" ]; then
    echo "== $c: skipped, ${left} s left of DEADLINE_S=$DEADLINE_S (needs up to $budget s)"
    printf '%s\t%s\tskipped\t-\t%s\t-\tFAIL\t-\tFAIL\t-\tFAIL\t-\tFAIL\t-\tFAIL\tSKIP\t-\t-\t-\t-\t-\t-\tno time left: %s s of DEADLINE_S=%s, budget %s s\n' \
      "$c" "$RECIPE" "$limit" "$left" "$DEADLINE_S" "$budget" >> "$TSV"
    md_row "$(tail -1 "$TSV")"
    pack
    continue
  fi
  W=$WORK/$c
  B=$WORK/bundles/$c
  CASE_DIR=$WORK/logs/$c # lib.sh's meta() writes CASE_DIR/meta.tsv
  rm -rf "$W" "$B" "$CASE_DIR"
  mkdir -p "$W" "$B" "$CASE_DIR"
  cp -R "$KINDS/$c/." "$W/"
  note=""
  args=()
  case $RECIPE in
    cuda)
      prog=$(prog_of "$W/Makefile")
      [ -n "$prog" ] || { prog=$c; note="no PROG/TARGET/BIN in the Makefile; "; }
      build=$BUILD
      if [ "${build%% *}" = make ] && ! command -v make > /dev/null; then
        # No make on this machine: the build line the Makefile runs, as a user would type it.
        src=$(cd "$W" && find . -maxdepth 1 -name '*.cu' | sort | head -1)
        libs=$(grep -o -- '-lcublas' "$W/Makefile" | head -1)
        build="${NVCC:-nvcc} -O2 -arch=sm_90 -o $prog ${src#./}${libs:+ $libs}"
        note+="no make here: build='$build' "
      fi
      args=(--recipe cuda --set "build=$build" --set "run=./$prog" --set "binaries=$prog")
      ;;
    pytorch)
      script=$(cd "$W" && find . -maxdepth 1 -name '*.py' | sort | head -1)
      script=${script#./}
      args=(--recipe pytorch --set "script=$script")
      [ -n "${PYTHON:-}" ] && args+=(--set "python=$PYTHON")
      ;;
    *) args=(--recipe "$RECIPE") ;;
  esac
  if ha=$(extra_of hang-after); then
    args+=(--hang-after "${HANG_AFTER:-$ha}")
  fi
  if to=$(extra_of timeout); then
    args+=(--timeout "$to")
  fi
  echo "== $c (limit ${limit} s, $(left_s) s left): debug-ima ${args[*]} --yes --bundle-dir $B"
  t0=$(now)
  (cd "$W" && exec timeout -s TERM -k 20 "$limit" "$XTASK" debug-ima "${args[@]}" --yes --bundle-dir "$B") \
    > "$CASE_DIR/tool.out" 2> "$CASE_DIR/tool.err" < /dev/null
  rc=$?
  secs=$(since "$t0")
  meta debug-ima "$rc" "$secs" "cd $W && $XTASK debug-ima ${args[*]} --yes --bundle-dir $B"
  if [ "$rc" = 124 ] || { [ "$rc" = 137 ] && awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s >= l - 1) }'; }; then
    rc="timeout(${limit}s)"
  fi
  n_run=$((n_run + 1))
  # The bundle: the one the tool printed, else the newest under B.
  bundle=$(grep -h '^bundle: ' "$CASE_DIR/tool.out" "$CASE_DIR/tool.err" 2> /dev/null | tail -1 | sed 's/^bundle: //')
  if [ -z "$bundle" ] || [ ! -d "$bundle" ]; then
    bundle=$(find "$B" -maxdepth 3 -name manifest.yaml 2> /dev/null | sort | tail -1)
    bundle=${bundle%/manifest.yaml}
  fi
  if [ -n "$bundle" ] && [ -d "$bundle" ]; then
    timeout 30 "$XTASK" analyze --json "$bundle" > "$CASE_DIR/analyze.json" 2> "$CASE_DIR/analyze.err" < /dev/null
    echo "$? $(since "$t0")" > "$CASE_DIR/analyze.exit"
    stopped=$(sed -n 's/^stopped: //p' "$bundle/manifest.yaml" 2> /dev/null | head -1 | tr -d "'\"")
    dumps=$(find "$bundle" -type f \( -name 'core_*' -o -name 'core.*' -o -name '*.nvcudmp' \) 2> /dev/null | wc -l)
  else
    bundle="" stopped="" dumps=0
    note+="no bundle "
    : > "$CASE_DIR/analyze.json"
  fi
  cmp=$(python3 "$WORK/compare.py" "${bundle:-/nonexistent}/findings.json" "$CASE_DIR/analyze.json" "$c" \
    "$E_KERNEL" "$E_FILE" "$E_LINE" "$E_CLASS" "$E_LAUNCH" "$EXTRA" 2> "$CASE_DIR/compare.txt")
  [ -n "$cmp" ] || cmp=$(printf '%s\t' - FAIL - FAIL - FAIL - FAIL - FAIL FAIL "compare failed" - -)
  IFS=$'\t' read -r g_k ok_k g_s ok_s g_c ok_c g_l ok_l g_x ok_x all agree repro conclusion <<< "$cmp"
  {
    echo "expected: $E_KERNEL $E_FILE:$E_LINE $E_CLASS launch $E_LAUNCH extra $EXTRA"
    echo "exit $rc in $secs s (limit $limit s); bundle ${bundle:--}; reproduced $repro"
  } >> "$CASE_DIR/compare.txt"
  sed 's/^/  /' "$CASE_DIR/compare.txt"
  # Leftovers: the case's processes (by pid) and what is on the GPU.
  sleep 2
  procs=$(case_procs "$W" "$B")
  if [ -n "$procs" ]; then
    echo "$procs" > "$CASE_DIR/left-procs.txt"
    pids=$(echo "$procs" | awk '{ print $1 }' | tr '\n' ' ')
    echo "  left: $procs" | head -5
    # shellcheck disable=SC2086
    kill -TERM $pids 2> /dev/null
    sleep 3
    # shellcheck disable=SC2086
    kill -KILL $pids 2> /dev/null
    left_procs="$(echo "$procs" | wc -l) (killed: $pids)"
  else
    left_procs=none
  fi
  gpu=$(gpu_apps)
  echo "$gpu" > "$CASE_DIR/gpu-apps.txt"
  ps -eo pid,ppid,stat,etime,cmd > "$CASE_DIR/ps-after.txt" 2>&1
  [ "${KEEP_CORES:-0}" = 1 ] || find "$WORK" -type f \( -name 'core_*' -o -name 'core.*' -o -name core -o -name '*.nvcudmp' \) -delete 2> /dev/null
  [ "$all" = PASS ] && n_pass=$((n_pass + 1))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$c" "$RECIPE" "$rc" "$secs" "$limit" "$g_k" "$ok_k" "$g_s" "$ok_s" "$g_c" "$ok_c" "$g_l" "$ok_l" "$g_x" "$ok_x" \
    "$all" "$agree" "$repro" "$dumps" "$left_procs" "$gpu" "$(clean "${stopped:-$conclusion}" 200)" "$(clean "${note:--}" 200)" >> "$TSV"
  md_row "$(tail -1 "$TSV")"
  echo "== $c: $all (exit $rc, $secs s)"
  pack
done
{
  echo
  echo "**$n_pass of ${#CASES[@]} cases PASS** ($n_run run; $(since "$T0") s of DEADLINE_S=$DEADLINE_S). Per case under \`logs/<case>/\` in the tarball: \`tool.out\`, \`tool.err\`, \`analyze.json\`, \`compare.txt\`, \`left-procs.txt\`, \`ps-after.txt\`; bundles under \`bundles/<case>/\`."
} >> "$MD"
pack
echo "results: $MD $TSV $TAR (work: $WORK, $(since "$T0") s)"
