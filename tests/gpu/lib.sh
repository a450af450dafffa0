# Shared by the recording scripts (record.sh, record_verdict.sh): time stamps, one line of
# OUT/meta.tsv per command (name, exit code, seconds, command), and one rung's run into a log.
# The caller sets CASE_DIR (where logs and meta.tsv go) and T (the timeout in seconds).

now() { date +%s.%N; }
meta() { printf '%s\t%s\t%.3f\t%s\n' "$1" "$2" "$3" "$4" >> "$CASE_DIR/meta.tsv"; }

run_rung() { # rung logfile env... -- cmd...
  local rung=$1 log=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local t0; t0=$(now)
  timeout -s KILL "$T" env "${envs[@]}" "$@" > "$CASE_DIR/$log" 2>&1
  local rc=$?
  meta "$rung" "$rc" "$(awk "BEGIN{print $(now) - $t0}")" "${envs[*]} $*"
}
