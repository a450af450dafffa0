#!/usr/bin/env bash
# Issue 21 (one occurrence) on a machine with an NVIDIA GPU: what the armed first run, the
# retries and `debug-ima watch` cost and find. Writes OUTDIR/one_occurrence.md (a markdown
# table per part), OUTDIR/one_occurrence.tsv (one row per figure: part, case, run, metric,
# value, goal, met) and OUTDIR/one_occurrence-logs.tar.gz (the logs and bundles, without dumps
# or cores), all three appended or rewritten as each part ends, so that a call stopped at its
# limit still returns what was done. Logs and bundles go to WORK (not OUTDIR: only a few files
# come back from a GPU call). Expected verdicts: tests/gpu/expected_one_occurrence.tsv and, for
# the suite's cases, tests/gpu/expected.tsv.
#
# Parts (PARTS="A B C D E", the default, or any subset; H200 estimates in brackets):
#   A  late_fault.cu: nvcc alone, one plain run, then `debug-ima` with the recipe's build:
#      tool/plain (goal <= 1.3), runs of the target, verdict against expected.      [~1.5 min]
#   B  intermittent.cu: B_RUNS (10) plain runs, how many fault; then B_RUNS climbs with the
#      default retries (B_RETRIES=N adds --retries N): launch site found (goal >= 9 of 10),
#      reproduced k/n, runs of the target, seconds.                                    [~1 min]
#   C  `debug-ima watch`: late_fault under watch (exit status as plain, one bundle with the
#      verdict, the job ran once, wall time against plain); hang_flag under --hang-after 5;
#      serving_loop.py SERVE_S (20) s, 3 plain and 3 watched runs alternating (cost, goal
#      <= 2 %); hang_serving.py under --hang-after 15; after each, no GPU process and no
#      process of the job left.                                                      [~5.5 min]
#   D  runs per verdict over the suite's C++ cases (CASES, default below): tests/gpu/suite.sh
#      once per case for the default climb (not RATIO=1, which always adds `--full`), and
#      tests/gpu/manual_ladder.sh per case as suite.sh's RATIO mode calls it: runs of the
#      target, complete (kernel, line and launch known), default_s, manual_s, ratio; the sum
#      (goal <= 0.35) and median (goal <= 0.5) ratios.                                 [~1.5 min]
#   E  late_fault.py as A; the suite's E_CASES (triton_eager triton_worker) through suite.sh
#      for the runs per verdict.                                                       [~4 min]
# All five do not fit one 10-minute call: e.g. PARTS="A B D", then PARTS=C, then PARTS=E.
# Every run has a timeout within its part's budget and DEADLINE_S (540 s from the start; a
# part or run that no longer fits is skipped and says so). Other knobs: LATE_S (seconds of
# late_fault's correct launches, passed as its argument; default: the program's 35), WORK,
# C_FRESH_PLAIN=1 (part C times its own plain late_fault run even when part A ran before it).
#
# usage: [PARTS=...] [CASES=...] tests/gpu/one_occurrence.sh XTASK_BINARY OUTDIR
set -u
LC_NUMERIC=C
[ $# -ge 2 ] || { echo "usage: tests/gpu/one_occurrence.sh XTASK_BINARY OUTDIR" >&2; exit 2; }
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"
OUTDIR=$(cd "$2" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
P=tests/gpu/programs
BIN=target/one-occurrence # relative, as suite.sh's target/gpu-suite
mkdir -p "$BIN"
WORK=${WORK:-$(mktemp -d /tmp/one-occurrence.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
PARTS=${PARTS:-A B C D E}
DEADLINE_S=${DEADLINE_S:-540}
CASES=${CASES:-oob_write oob_read misaligned device_assert unchecked_launch inlined graph_fault clean}
E_CASES=${E_CASES:-triton_eager triton_worker}
B_RUNS=${B_RUNS:-10}
SERVE_S=${SERVE_S:-20}
LATE_S=${LATE_S:-}
MD=$OUTDIR/one_occurrence.md
TSV=$OUTDIR/one_occurrence.tsv
TAR=$OUTDIR/one_occurrence-logs.tar.gz
# The command lines of the jobs these parts start (and of the tool, while it runs them).
JOB_PAT='target/one-occurrence/|target/gpu-suite/|programs/(late_fault|intermittent|serving_loop|hang_serving|hang_flag|vllm_shaped)|multiprocessing\.spawn'
T0=$EPOCHREALTIME
PART_T0=$T0
PART_BUDGET=$DEADLINE_S

# ---- helpers ---------------------------------------------------------------------------
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { r = "no"; if (a == "-" || a == "") r = "-"; else if (a + 0 <= b + 0) r = "yes"; print r }'; }
md() { printf '%s\n' "$*" >> "$MD"; }
tsv() { # part case run metric value [goal] [met]
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:--}" "${7:--}" >> "$TSV"
}
left_s() { # seconds left: the least of the part's budget and the global deadline
  awk -v t0="$T0" -v p0="$PART_T0" -v pb="$PART_BUDGET" -v gb="$DEADLINE_S" -v n="$EPOCHREALTIME" \
    'BEGIN { a = pb - (n - p0); b = gb - (n - t0); x = (a < b) ? a : b; if (x < 0) x = 0; printf "%d", x }'
}

RC=- SECS=-
timed() { # name timeout_s cmd... : output to $W/name.out and .err; sets RC and SECS
  local name=$1 want=$2 t t0
  shift 2
  t=$(left_s)
  [ "$t" -lt "$want" ] && want=$t
  if [ "$want" -lt "${MIN_S:-10}" ]; then
    RC=skipped SECS=-
    echo "  $name: skipped, ${want} s left"
    return 1
  fi
  t0=$EPOCHREALTIME
  timeout -k 10 "$want" "$@" > "$W/$name.out" 2> "$W/$name.err"
  RC=$?
  SECS=$(since "$t0")
  # 124/137 and the whole time used: this script's timeout, not the command's own status.
  if { [ "$RC" = 124 ] || [ "$RC" = 137 ]; } && [ "$(le "$((want - 1))" "$SECS")" = yes ]; then
    RC="timeout($want s)"
  fi
  echo "  $name: exit $RC in $SECS s"
  return 0
}

job_procs() { # "pid cmd" of the jobs' processes still alive, one a line
  pgrep -fa -- "$JOB_PAT" | awk -v me="$$" '$1 != me' | cut -c1-160
}
leftovers() { # -> "none", or what is left: GPU processes and the jobs' processes
  sleep 1
  local g p d
  g=$(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader 2>/dev/null | tr '\n' ';')
  p=$(job_procs | tr '\n' ';')
  d=$(pgrep -af '(^|/)(cuda-gdb|compute-sanitizer|py-spy)( |$)' | tr '\n' ';') # reported only
  if [ -z "$g$p$d" ]; then echo none; else echo "gpu:${g:-none} jobs:${p:-none} debuggers:${d:-none}" | tr '\t|' ' /'; fi
}
kill_jobs() { # kills the jobs' processes still alive, by pid
  local pids
  pids=$(job_procs | awk '{ print $1 }')
  [ -n "$pids" ] || return 0
  echo "  killing leftovers: $(echo "$pids" | tr '\n' ' ')"
  # shellcheck disable=SC2086
  kill -KILL $pids 2> /dev/null
  sleep 1
}

bundle_of() { # bundle-dir logs... -> the bundle the tool printed, else the newest one there
  local dir=$1 b
  shift
  b=$(grep -h '^bundle: ' "$@" 2> /dev/null | tail -1 | sed 's/^bundle: //')
  if [ -z "$b" ] || [ ! -d "$b" ]; then
    b=$(find "$dir" -maxdepth 3 -name findings.json 2> /dev/null | sort | tail -1)
    b=${b%/findings.json}
  fi
  echo "${b:--}"
}
bundles_in() { find "$1" -maxdepth 3 -name manifest.yaml 2> /dev/null | wc -l; }

# One TSV line per bundle, fields "-" when unknown (never empty, so that `read` keeps them):
# kernel site error launch reproduced target_runs complete kernel_ok site_ok launch_ok match
# (all as expected; a hang's launch not required) build_s core (kernel, line, error as expected)
# stopped
cat > "$WORK/binfo.py" << 'PY'
import json, os, re, sys

def expected(case):
    for f in ("tests/gpu/expected_one_occurrence.tsv", "tests/gpu/expected.tsv"):
        try:
            for line in open(f):
                p = line.rstrip("\n").split("\t")
                if not line.startswith("#") and len(p) >= 6 and p[0] == case:
                    return p
        except OSError:
            pass
    return None

def rungs_yaml(text):
    import yaml
    class Loader(yaml.SafeLoader):
        pass
    def tagged(loader, suffix, node):  # `exit: !code 1` and the like
        if isinstance(node, yaml.ScalarNode):
            return loader.construct_scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_mapping(node)
    Loader.add_multi_constructor("!", tagged)
    m = yaml.load(text, Loader=Loader)
    out = []
    for r in m.get("rungs") or []:
        cmds = r.get("commands") or []
        out.append((str(r.get("status")), sum(c.get("role") == "target" for c in cmds),
                    sum(float(c.get("duration_s") or 0) for c in cmds if c.get("role") == "build")))
    return out, str(m.get("stopped") or "-")

def rungs_regex(text):  # no PyYAML: the manifest's layout, as suite.sh reads it
    body = re.search(r"^rungs:[ \t]*\n(.*?)(?=^[A-Za-z_][\w-]*:|\Z)", text, re.M | re.S)
    out = []
    for e in re.split(r"^- rung: ", body.group(1) if body else "", flags=re.M)[1:]:
        st = re.search(r"^  status: (\S+)", e, re.M)
        cmds = re.split(r"^  - role: ", e, flags=re.M)[1:]
        targets = sum(c.split("\n", 1)[0].strip() == "target" for c in cmds)
        build = 0.0
        for c in cmds:
            d = re.search(r"^    duration_s: ([0-9.eE+-]+)", c, re.M)
            if c.split("\n", 1)[0].strip() == "build" and d:
                build += float(d.group(1))
        out.append((st.group(1).strip("'\"") if st else "?", targets, build))
    s = re.search(r"^stopped: (.*)$", text, re.M)
    return out, (s.group(1).strip("'\"") if s else "-")

def clean(s):
    s = re.sub(r"[\t\n\r]+", " ", str(s)).replace("|", "\\|").strip()
    return s or "-"

def main():
    b, case = sys.argv[1], sys.argv[2]
    exp = expected(case)
    f, m = os.path.join(b, "findings.json"), os.path.join(b, "manifest.yaml")
    if not os.path.isfile(f):
        print("\t".join(["-"] * 10 + ["no", "-", "no", "no bundle"]))
        return
    d = json.load(open(f))
    v = d.get("verdict")
    rep = d.get("reproduced")
    rep = f"{rep.get('faulted', '?')}/{rep.get('runs', '?')}" if isinstance(rep, dict) else "-"
    rs, stopped = [], "-"
    if os.path.isfile(m):
        text = open(m).read()
        try:
            rs, stopped = rungs_yaml(text)
        except Exception:
            rs, stopped = rungs_regex(text)
    runs = sum(1 for s, t, _ in rs if s != "skipped" and t > 0)
    build = sum(x for _, _, x in rs)
    base = lambda p: os.path.basename(str(p)) if p else "?"
    if v:
        kernel, err = v.get("kernel") or "?", v.get("error") or "?"
        line = v.get("line")
        site = f"{base(v.get('file'))}:{line if line is not None else '?'}"
        ls = v.get("launch_site")
        launch = f"{base(ls.get('file'))}:{ls.get('line', '?')}" if ls else "unknown"
        complete = "yes" if v.get("kernel") and line is not None and ls and ls.get("line") is not None else "no"
    else:
        kernel = site = err = launch = complete = "-"
    yn = lambda x: "yes" if x else "no"
    if exp is None:
        kok = sok = lok = match = core = "?"
    elif exp[1] == "-":
        kok = sok = lok = match = core = yn(v is None)
    else:
        k, s, e, l = exp[1] in kernel, site == f"{exp[2]}:{exp[3]}", err == exp[4], launch == exp[5]
        kok, sok, lok = yn(k and v), yn(s), yn(l)
        match = yn(v and k and s and e and (l or exp[4] == "hang"))
        core = yn(v and k and s and e)  # the device side only: kernel, line, error
    print("\t".join(clean(x) for x in [kernel, site, err, launch, rep, runs, complete, kok, sok, lok,
                                      match, f"{build:.1f}", core, stopped[:200]]))

main()
PY
# shellcheck disable=SC2034  # the fields are read by the parts
binfo() { # bundle case -> K SITE ERR LAUNCH REPRO RUNS COMPLETE KOK SOK LOK MATCH BUILD CORE STOPPED
  local line
  line=$(python3 "$WORK/binfo.py" "$1" "$2" 2> "$W/binfo.err") || line=$(printf '%s\t' - - - - - - - - - - no - no "binfo failed")
  IFS=$'\t' read -r K SITE ERR LAUNCH REPRO RUNS COMPLETE KOK SOK LOK MATCH BUILD CORE STOPPED <<< "$line"
}
expected_of() { # case -> "kernel file:line error launch" from the expected tables
  awk -F'\t' -v c="$1" '!/^#/ && $1 == c { print $2, $3 ":" $4, $5, "launch " $6; exit }' \
    tests/gpu/expected_one_occurrence.tsv tests/gpu/expected.tsv
}

pack() { # the logs and bundles, without dumps, cores or large files, into OUTDIR
  (cd "$WORK" && find . -type f -size -4M ! -name 'core' ! -name 'core.*' ! -name 'core_*' ! -name '*.pickle' \
    ! -name 'logs.tar.gz' -print0 |
    tar --null -czf "$WORK/logs.tar.gz" -T -) 2> /dev/null
  if [ "$(stat -c %s "$WORK/logs.tar.gz" 2> /dev/null || echo 0)" -gt 15000000 ]; then
    (cd "$WORK" && find . -type f \( -name '*.md' -o -name '*.tsv' -o -name '*.out' -o -name '*.err' \
      -o -name findings.json -o -name manifest.yaml \) -size -1M -print0 | tar --null -czf "$WORK/logs.tar.gz" -T -) 2> /dev/null
  fi
  cp "$WORK/logs.tar.gz" "$TAR" 2> /dev/null
}
trap 'pack; exit 143' TERM INT

late_args=() # late_fault's argument when LATE_S is set
[ -n "$LATE_S" ] && late_args=("$LATE_S")
# The step count a plain time-bound run reached ("late_fault: N steps; last step"): the
# tool's run is then given the same count (`late_fault SECONDS STEPS`), so that both do the
# same work; a launch-blocking run is slower per step, and a clock would hide that.
steps_of() { sed -n 's/^late_fault[.py]*: \([0-9]*\) steps; last step.*/\1/p' "$1" | tail -1; }
LATE_STEPS=
cuda_args() { # binary source -> the recipe arguments users give (suite.sh's args_for)
  local run=$1
  [ -n "$LATE_S" ] && case $1 in */late_fault) run="$1 $LATE_S" ;; esac
  [ -n "$LATE_STEPS" ] && case $1 in */late_fault) run="$1 ${LATE_S:-35} $LATE_STEPS" ;; esac
  CUDA_ARGS=(--recipe cuda --set "build=nvcc -arch=sm_90 -o $1 $2" --set "run=$run" --set "binaries=$1")
}

# ---- A: late_fault (C++), plain against the tool ---------------------------------------
part_A() {
  local bin=$BIN/late_fault src=$P/late_fault.cu build_s plain_s plain_rc tool_s tool_rc b r rn
  md "## A. late_fault (C++): one plain run against \`debug-ima\`"
  md ""
  md "Expected: $(expected_of late_fault). The tool builds with the recipe, as users do; \`nvcc s\` is nvcc alone, \`tool build s\` the builds the manifest records."
  md ""
  timed build 120 nvcc -arch=sm_90 -o "$bin" "$src" || return 0
  build_s=$SECS
  [ "$RC" = 0 ] || { md "nvcc failed (exit $RC): $(head -c 300 "$W/build.err" | tr '\n' ' ')"; return 0; }
  timed plain 150 "$bin" "${late_args[@]}" || return 0
  plain_s=$SECS plain_rc=$RC
  LATE_STEPS=$(steps_of "$W/plain.out")
  md "The plain run did $LATE_STEPS steps in its time; the tool's run is given that count."
  md ""
  printf 'A_PLAIN_S=%s\nA_PLAIN_RC=%s\nA_STEPS=%s\n' "$plain_s" "$plain_rc" "$LATE_STEPS" > "$WORK/A.plain"
  tsv A late_fault plain exit "$plain_rc" "non-zero"
  tsv A late_fault plain seconds "$plain_s"
  tsv A late_fault - nvcc_s "$build_s"
  rm -f "$bin"
  cuda_args "$bin" "$src"
  timed tool 420 "$XTASK" debug-ima "${CUDA_ARGS[@]}" --yes --bundle-dir "$W/bundles" || return 0
  tool_s=$SECS tool_rc=$RC
  b=$(bundle_of "$W/bundles" "$W/tool.out" "$W/tool.err")
  binfo "$b" late_fault
  r=$(div "$tool_s" "$plain_s")
  rn=$(div "$(awk -v a="$tool_s" -v b="$BUILD" 'BEGIN { print a - b }')" "$plain_s")
  md "| plain s | plain exit | nvcc s | tool s | tool exit | tool build s | tool / plain | (tool - build) / plain | runs of the target | reproduced | kernel | site | launch | matches expected |"
  md "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  md "| $plain_s | $plain_rc | $build_s | $tool_s | $tool_rc | $BUILD | **$r** (goal <= 1.3) | $rn | $RUNS | $REPRO | \`$K\` | $SITE | $LAUNCH | $MATCH |"
  md ""
  md "stopped: $STOPPED"
  tsv A late_fault tool seconds "$tool_s"
  tsv A late_fault tool exit "$tool_rc"
  tsv A late_fault tool build_s "$BUILD"
  tsv A late_fault tool tool_over_plain "$r" "<=1.3" "$(le "$r" 1.3)"
  tsv A late_fault tool tool_minus_build_over_plain "$rn" "<=1.3" "$(le "$rn" 1.3)"
  tsv A late_fault tool target_runs "$RUNS" "1"
  tsv A late_fault tool reproduced "$REPRO"
  tsv A late_fault tool verdict "$K $SITE $ERR launch $LAUNCH"
  tsv A late_fault tool matches_expected "$MATCH" yes "$MATCH"
}

# ---- B: intermittent (C++): plain runs, then climbs with the default retries -------------
part_B() {
  local bin=$BIN/intermittent src=$P/intermittent.cu i faults=0 plain=0 ok=0 climbs=0 b exits=""
  md "## B. intermittent (C++): plain runs, then climbs with the default retries${B_RETRIES:+ (--retries $B_RETRIES)}"
  md ""
  md "Expected: $(expected_of intermittent)."
  md ""
  timed build 120 nvcc -arch=sm_90 -o "$bin.plain" "$src" || return 0
  for i in $(seq 1 "$B_RUNS"); do
    MIN_S=5 timed "plain-$i" 60 "$bin.plain" || break
    plain=$((plain + 1))
    exits="$exits $RC"
    [ "$RC" != 0 ] && faults=$((faults + 1))
  done
  md "Plain runs: $faults of $plain faulted (exit statuses:$exits)."
  md ""
  tsv B intermittent plain faulted "$faults/$plain" "about half"
  md "| climb | seconds | exit | runs of the target | reproduced | kernel | site | launch | launch as expected |"
  md "|---|---|---|---|---|---|---|---|---|"
  for i in $(seq 1 "$B_RUNS"); do
    rm -f "$bin"
    cuda_args "$bin" "$src"
    timed "tool-$i" 150 "$XTASK" debug-ima "${CUDA_ARGS[@]}" --yes --bundle-dir "$W/bundles-$i" \
      ${B_RETRIES:+--retries "$B_RETRIES"} || break
    climbs=$((climbs + 1))
    b=$(bundle_of "$W/bundles-$i" "$W/tool-$i.out" "$W/tool-$i.err")
    binfo "$b" intermittent
    [ "$LOK" = yes ] && ok=$((ok + 1))
    md "| $i | $SECS | $RC | $RUNS | $REPRO | \`$K\` | $SITE | $LAUNCH | $LOK |"
    tsv B intermittent "climb-$i" seconds "$SECS"
    tsv B intermittent "climb-$i" target_runs "$RUNS"
    tsv B intermittent "climb-$i" reproduced "$REPRO"
    tsv B intermittent "climb-$i" launch_ok "$LOK" yes "$LOK"
    find "$W/bundles-$i" -name 'core*' -size +1M -delete 2> /dev/null
  done
  md ""
  local met=no
  [ "$climbs" -gt 0 ] && [ $((ok * 10)) -ge $((climbs * 9)) ] && met=yes
  md "**Launch site found in $ok of $climbs climbs** (goal: at least 9 of 10): $met."
  tsv B intermittent all launch_ok_count "$ok/$climbs" ">=9/10" "$met"
}

# ---- C: watch -----------------------------------------------------------------------------
check_row() { # what value goal met
  md "| $1 | $2 | $3 | $4 |"
  tsv C "$CASE" "$RUNID" "$1" "$2" "$3" "$4"
}
part_C() {
  local bin=$BIN/late_fault src=$P/late_fault.cu plain_s=- plain_rc=- b n l i t
  md "## C. \`debug-ima watch\`"
  md ""
  md "| check | value | goal | met |"
  md "|---|---|---|---|"
  # (1) late_fault under watch
  CASE=late_fault RUNID=watch
  timed build 120 nvcc -arch=sm_90 -lineinfo -g -o "$bin" "$src" # watch cannot rebuild: line info given
  if [ -f "$WORK/A.plain" ] && [ -z "${C_FRESH_PLAIN:-}" ]; then
    # shellcheck disable=SC1091
    . "$WORK/A.plain"
    plain_s=$A_PLAIN_S plain_rc=$A_PLAIN_RC
    check_row "late_fault plain run" "from part A (nvcc without -lineinfo -g; the run is time-bound): exit $plain_rc, $plain_s s" - -
  elif timed plain 150 "$bin" "${late_args[@]}"; then
    plain_s=$SECS plain_rc=$RC
    check_row "late_fault plain run" "exit $plain_rc, $plain_s s" - -
  fi
  if timed watch-late 300 "$XTASK" watch --yes --bundle-dir "$W/watch-late" -- "$bin" "${late_args[@]}"; then
    b=$(bundle_of "$W/watch-late" "$W/watch-late.out" "$W/watch-late.err")
    binfo "$b" late_fault
    n=$(bundles_in "$W/watch-late")
    check_row "late_fault: exit status under watch" "$RC" "$plain_rc (plain)" "$([ "$RC" = "$plain_rc" ] && echo yes || echo no)"
    check_row "late_fault: bundles written" "$n" 1 "$([ "$n" = 1 ] && echo yes || echo no)"
    check_row "late_fault: verdict (kernel, line, error)" "\`$K\` $SITE $ERR" "$(expected_of late_fault | sed 's/ launch .*//')" "$CORE"
    check_row "late_fault: launch site (watch never launch-blocks)" "$LAUNCH" "$(expected_of late_fault | sed 's/.* launch //')" "$LOK"
    n=$(grep -c '^late_fault: start' "$W/watch-late.out")
    check_row "late_fault: start banners in watch's stdout (the job ran once)" "$n" 1 "$([ "$n" = 1 ] && echo yes || echo no)"
    t=$(div "$SECS" "$plain_s")
    check_row "late_fault: wall s under watch / plain" "$SECS / $plain_s = $t" - -
    check_row "late_fault: watch's last stderr lines" "$(grep -E '^(verdict|bundle):' "$W/watch-late.err" | tr '\n' ' ' | tr '|' '/' | cut -c1-300)" - -
    l=$(leftovers)
    check_row "late_fault: left after watch" "$l" none "$([ "$l" = none ] && echo yes || echo no)"
  fi
  kill_jobs
  # (2) hang_flag under watch --hang-after 5 (it spins until killed)
  CASE=hang_flag RUNID=watch
  timed build-hang 120 nvcc -arch=sm_90 -lineinfo -g -o "$BIN/hang_flag" "$P/hang_flag.cu"
  if timed watch-hang 150 "$XTASK" watch --yes --bundle-dir "$W/watch-hang" --hang-after 5 -- "$BIN/hang_flag"; then
    b=$(bundle_of "$W/watch-hang" "$W/watch-hang.out" "$W/watch-hang.err")
    binfo "$b" hang_flag
    check_row "hang_flag: verdict (--hang-after 5)" "\`$K\` $SITE $ERR, launch $LAUNCH" "$(expected_of hang_flag)" "$MATCH"
    check_row "hang_flag: seconds, exit status" "$SECS s, exit $RC" "<= 35 s (hang_after + 30, as hang_suite.sh)" "$(le "$SECS" 35)"
    l=$(leftovers)
    check_row "hang_flag: left after watch" "$l" none "$([ "$l" = none ] && echo yes || echo no)"
  fi
  kill_jobs
  # (3) serving_loop.py: plain and watched runs alternating; throughput
  CASE=serving_loop
  local tp tpp="" tpw=""
  for i in 1 2 3; do # plain, watch; watch, plain; plain, watch: a drift of the GPU favours neither
    local order="plain watch"
    [ "$i" = 2 ] && order="watch plain"
    for mode in $order; do
      RUNID=$mode-$i
      if [ "$mode" = plain ]; then
        timed "serve-$RUNID" $((SERVE_S + 120)) python3 "$P/serving_loop.py" "$SERVE_S" || break 2
      else
        timed "serve-$RUNID" $((SERVE_S + 120)) "$XTASK" watch --yes --bundle-dir "$W/watch-serve-$i" -- python3 "$P/serving_loop.py" "$SERVE_S" || break 2
      fi
      tp=$(grep '^throughput: ' "$W/serve-$RUNID.out" | tail -1 | awk '{ print $2 }')
      tp=${tp:--}
      if [ "$mode" = plain ]; then tpp="$tpp $tp"; else tpw="$tpw $tp"; fi
      n=$(bundles_in "$W/watch-serve-$i")
      l=$(leftovers)
      check_row "serving_loop $RUNID: req/s, wall s, exit, bundles, left" "$tp, $SECS s, exit $RC, $([ "$mode" = watch ] && echo "$n bundles" || echo -), $l" "exit 0, 0 bundles, none left" \
        "$([ "$RC" = 0 ] && [ "$l" = none ] && { [ "$mode" = plain ] || [ "$n" = 0 ]; } && echo yes || echo no)"
      tsv C serving_loop "$RUNID" throughput "$tp"
      kill_jobs
    done
  done
  local cost
  cost=$(awk -v p="$tpp" -v w="$tpw" 'BEGIN {
    np = split(p, a, " "); nw = split(w, b, " "); sp = 0; sw = 0; kp = 0; kw = 0
    for (i = 1; i <= np; i++) if (a[i] != "-") { sp += a[i]; kp++ }
    for (i = 1; i <= nw; i++) if (b[i] != "-") { sw += b[i]; kw++ }
    if (kp == 0 || kw == 0) print "-"; else printf "%.2f", 100 * (sp / kp - sw / kw) / (sp / kp) }')
  CASE=serving_loop RUNID=all
  check_row "serving_loop: cost of watch, % of plain req/s (plain:$tpp; watch:$tpw)" "$cost" "<= 2" "$(le "$cost" 2)"
  # (4 is in every row above) hang_serving.py under watch --hang-after 15
  CASE=hang_serving RUNID=watch
  if timed watch-hang-serving 180 "$XTASK" watch --yes --bundle-dir "$W/watch-hang-serving" --hang-after 15 -- python3 "$P/hang_serving.py"; then
    b=$(bundle_of "$W/watch-hang-serving" "$W/watch-hang-serving.out" "$W/watch-hang-serving.err")
    binfo "$b" hang_serving
    n=$(grep -c '^hang_serving: [0-9]* s,' "$W/watch-hang-serving.out")
    check_row "hang_serving: verdict (--hang-after 15)" "\`$K\` $SITE $ERR, launch $LAUNCH" "$(expected_of hang_serving)" "$MATCH"
    check_row "hang_serving: seconds, exit status, progress lines" "$SECS s, exit $RC, $n lines" \
      "~10 lines; <= 70 s (start-up ~15, serving 10, hang_after 15, + 30)" "$(le "$SECS" 70)"
    l=$(leftovers)
    check_row "hang_serving: left after watch" "$l" none "$([ "$l" = none ] && echo yes || echo no)"
  fi
  find "$W" -name 'core*' -size +1M -delete 2> /dev/null
}

# ---- D/E: the suite's cases through suite.sh, and the manual ladder ----------------------
suite_case() { # case -> SUITE_S (the default climb's total_s in suite.sh's results.tsv) and binfo
  local c=$1 b
  SUITE_S=-
  timed "suite-$c" "${2:-180}" env -u RATIO tests/gpu/suite.sh "$XTASK" "$W/suite" "$c" || return 1
  SUITE_S=$(awk -F'\t' -v c="$c" '$1 == c && $2 == "default" { s = $10 } END { if (s == "") s = "-"; print s }' "$W/suite/results.tsv" 2> /dev/null)
  SUITE_S=$(awk -v s="${SUITE_S:--}" 'BEGIN { if (s == "-") print "-"; else printf "%.1f", s }')
  b=$(find "$W/suite/bundles/$c-default" -mindepth 1 -maxdepth 1 -type d 2> /dev/null | sort | tail -1)
  binfo "${b:--}" "$c"
  return 0
}
manual_case() { # case -> MANUAL_S: tests/gpu/manual_ladder.sh as suite.sh's RATIO mode calls it
  local c=$1 src=${1%_G} defs="" dbg=-lineinfo script args=""
  MANUAL_S=-
  case $c in stencil_fixed) src=stencil_neighbour defs=-DFIXED ;; esac
  case $c in *_G) dbg=-G ;; esac
  case $c in
    torch_assert | aten_async | no_cuda_failure | triton_*)
      script=$P/$c.py
      case $c in triton_*) script=$P/vllm_shaped.py args=${c#triton_} ;; esac
      # shellcheck disable=SC2086
      timed "manual-$c" 300 env RUNG_TIMEOUT=90 tests/gpu/manual_ladder.sh "$W/manual/$c" - - python3 "$script" $args || return 1
      ;;
    *)
      rm -f "$BIN/$c"
      timed "manual-$c" 180 env RUNG_TIMEOUT=60 tests/gpu/manual_ladder.sh "$W/manual/$c" \
        "nvcc -arch=sm_90 $defs -o $BIN/$c $P/$src.cu" "$dbg" "$BIN/$c" || return 1
      ;;
  esac
  [ "$RC" = 0 ] && MANUAL_S=$SECS
  return 0
}
part_D() {
  local c r rows=$W/ratios.tsv
  : > "$rows"
  md "## D. Runs per verdict over the suite (default climb, suite.sh) against the manual ladder"
  md ""
  md "| case | runs of the target | reproduced | complete | matches expected | verdict | default s | manual s | ratio |"
  md "|---|---|---|---|---|---|---|---|---|"
  for c in $CASES; do
    suite_case "$c" || break
    manual_case "$c" || { md "| $c | $RUNS | $REPRO | $COMPLETE | $MATCH | \`$K\` $SITE launch $LAUNCH | $SUITE_S | (no time left) | - |"; break; }
    r=$(div "$SUITE_S" "$MANUAL_S")
    md "| $c | $RUNS | $REPRO | $COMPLETE | $MATCH | \`$K\` $SITE launch $LAUNCH | $SUITE_S | $MANUAL_S | $r |"
    tsv D "$c" default target_runs "$RUNS"
    tsv D "$c" default reproduced "$REPRO"
    tsv D "$c" default complete "$COMPLETE"
    tsv D "$c" default matches_expected "$MATCH" yes "$MATCH"
    tsv D "$c" default default_s "$SUITE_S"
    tsv D "$c" manual manual_s "$MANUAL_S"
    tsv D "$c" default ratio "$r"
    printf '%s\t%s\t%s\n' "$c" "$SUITE_S" "$MANUAL_S" >> "$rows"
    find "$W" -name 'core*' -size +1M -delete 2> /dev/null
  done
  md ""
  python3 - "$rows" << 'PY' > "$W/ratios.sum"
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rows = [(c, float(d), float(m)) for c, d, m in rows if d != "-" and m != "-" and float(m) > 0]
if rows:
    s = sum(d for _, d, _ in rows) / sum(m for _, _, m in rows)
    med = statistics.median(d / m for _, d, m in rows)
    print(f"{s:.3f}\t{med:.3f}\t{len(rows)}")
else:
    print("-\t-\t0")
PY
  local s med n
  IFS=$'\t' read -r s med n < "$W/ratios.sum"
  md "**Sum ratio (sum of default s / sum of manual s) $s** (goal <= 0.35): $(le "$s" 0.35); **median ratio $med** (goal <= 0.5): $(le "$med" 0.5); over $n cases."
  tsv D all - sum_ratio "$s" "<=0.35" "$(le "$s" 0.35)"
  tsv D all - median_ratio "$med" "<=0.5" "$(le "$med" 0.5)"
}

# ---- E: Python --------------------------------------------------------------------------
part_E() {
  local script=$P/late_fault.py plain_s plain_rc tool_s tool_rc b r c
  md "## E. Python: late_fault.py, plain against \`debug-ima\`; the suite's Triton cases"
  md ""
  md "Expected: $(expected_of late_fault_py)."
  md ""
  if timed plain 200 python3 "$script" "${late_args[@]}"; then
    plain_s=$SECS plain_rc=$RC
    local steps
    steps=$(steps_of "$W/plain.out")
    md "The plain run did $steps steps in its time; the tool's run is given that count."
    md ""
    tsv E late_fault_py plain seconds "$plain_s"
    tsv E late_fault_py plain exit "$plain_rc" "non-zero"
    if timed tool 420 "$XTASK" debug-ima --recipe tests/gpu/python.yaml --set "script=$script" --set "args=${LATE_S:-35} $steps" \
      --yes --bundle-dir "$W/bundles"; then
      tool_s=$SECS tool_rc=$RC
      b=$(bundle_of "$W/bundles" "$W/tool.out" "$W/tool.err")
      binfo "$b" late_fault_py
      r=$(div "$tool_s" "$plain_s")
      md "| plain s | plain exit | tool s | tool exit | tool / plain | runs of the target | reproduced | kernel | site | launch | matches expected |"
      md "|---|---|---|---|---|---|---|---|---|---|---|"
      md "| $plain_s | $plain_rc | $tool_s | $tool_rc | **$r** (goal <= 1.3) | $RUNS | $REPRO | \`$K\` | $SITE | $LAUNCH | $MATCH |"
      md ""
      md "stopped: $STOPPED"
      md ""
      tsv E late_fault_py tool seconds "$tool_s"
      tsv E late_fault_py tool exit "$tool_rc"
      tsv E late_fault_py tool tool_over_plain "$r" "<=1.3" "$(le "$r" 1.3)"
      tsv E late_fault_py tool target_runs "$RUNS" 1
      tsv E late_fault_py tool reproduced "$REPRO"
      tsv E late_fault_py tool verdict "$K $SITE $ERR launch $LAUNCH"
      tsv E late_fault_py tool matches_expected "$MATCH" yes "$MATCH"
    fi
  fi
  kill_jobs
  find "$W" -name 'core*' -size +1M -delete 2> /dev/null
  md "| suite case | runs of the target | reproduced | complete | matches expected | verdict | default s | left |"
  md "|---|---|---|---|---|---|---|---|"
  for c in $E_CASES; do
    suite_case "$c" 240 || break
    md "| $c | $RUNS | $REPRO | $COMPLETE | $MATCH | \`$K\` $SITE launch $LAUNCH | $SUITE_S | $(leftovers) |"
    tsv E "$c" default target_runs "$RUNS"
    tsv E "$c" default reproduced "$REPRO"
    tsv E "$c" default complete "$COMPLETE"
    tsv E "$c" default matches_expected "$MATCH" yes "$MATCH"
    tsv E "$c" default default_s "$SUITE_S"
    kill_jobs
    find "$W" -name 'core*' -size +1M -delete 2> /dev/null
  done
}

# ---- main -------------------------------------------------------------------------------
[ -f "$TSV" ] || printf 'part\tcase\trun\tmetric\tvalue\tgoal\tmet\n' > "$TSV"
if [ ! -f "$MD" ]; then
  md "# Issue 21 (one occurrence): tests/gpu/one_occurrence.sh"
  md ""
fi
md "Run of $(date -u +%Y-%m-%dT%H:%M:%SZ), PARTS=\"$PARTS\", GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1), xtask: $(timeout 10 "$XTASK" --version 2>&1 | head -1), git: $(git describe --always --dirty 2>/dev/null || echo -), work: $WORK"
md ""
budget_of() { case $1 in A) echo 300 ;; B) echo 240 ;; C) echo 540 ;; D) echo 300 ;; E) echo 480 ;; *) echo 0 ;; esac; }
for part in $PARTS; do
  PART_BUDGET=$(budget_of "$part")
  [ "$PART_BUDGET" -gt 0 ] || { echo "unknown part $part"; continue; }
  PART_T0=$EPOCHREALTIME
  W=$WORK/$part
  mkdir -p "$W"
  echo "== part $part (budget ${PART_BUDGET} s, $(left_s) s left)"
  if [ "$(left_s)" -lt 30 ]; then
    md "## $part: skipped, $(left_s) s left of DEADLINE_S=$DEADLINE_S"
    md ""
    tsv "$part" - - skipped "no time left"
    continue
  fi
  ("part_$part")
  prc=$?
  kill_jobs
  find "$W" -name 'core*' -size +1M -delete 2> /dev/null
  el=$(since "$PART_T0")
  md ""
  md "_Part $part: ${el} s (budget ${PART_BUDGET} s)$([ "$prc" = 0 ] || echo ", the part's shell failed with exit $prc: see $part/ in the logs")._"
  md ""
  tsv "$part" - - elapsed_s "$el"
  pack
  echo "== part $part: $el s"
done
pack
echo "results: $MD $TSV $TAR (work: $WORK, $(since "$T0") s)"
