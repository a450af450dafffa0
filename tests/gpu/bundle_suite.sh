#!/usr/bin/env bash
# Bundles from a real GPU run: the demo with `--full` and a Hugging Face token planted in the
# environment, then every `bundle` command on the bundle it wrote, with their times, and a
# search of the bundle, the archives and the unpacked copy for the planted token.
#
# usage: tests/gpu/bundle_suite.sh XTASK_BINARY OUTDIR
set -u
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=$2
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/../.."
R=$OUT/results.txt
: > "$R"
secs() { awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $1}"; }
step() { # name command... ; records exit status and time
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  echo "$name: exit $? in $(secs "$t0") s" >> "$R"
}
# Built at run time: no token-shaped literal in the repository.
token="hf_$(printf 'Zq8Lm2%.0s' 1 2 3 4 5 6)"
export HF_TOKEN=$token
step demo "$XTASK" debug-ima --recipe demo --yes --full --bundle-dir "$OUT/bundles"
unset HF_TOKEN
B=$(ls -d "$OUT"/bundles/*/ | head -1); B=${B%/}
step show "$XTASK" bundle show "$B"
step list "$XTASK" bundle list --bundle-dir "$OUT/bundles"
step verify-dir "$XTASK" bundle verify "$B"
step sha256sum-dir sh -c "cd '$B' && sha256sum -c --quiet SHA256SUMS"
step pack "$XTASK" bundle pack "$B"
step pack-full "$XTASK" bundle pack --with-coredumps -o "$OUT/full.tar.zst" "$B"
step verify-archive "$XTASK" bundle verify "$B.tar.zst"
mkdir -p "$OUT/unpacked"
step unpack "$XTASK" bundle unpack "$B.tar.zst" "$OUT/unpacked"
step verify-unpacked "$XTASK" bundle verify "$OUT/unpacked/$(basename "$B")"
step report "$XTASK" bundle report "$B"
step replay-list "$B/replay.sh" --list
{
  echo "report characters: $(wc -m < "$OUT/report.out")"
  echo "archive bytes: $(stat -c %s "$B.tar.zst"), with coredumps: $(stat -c %s "$OUT/full.tar.zst")"
  echo "coredumps: $(find "$B" -name 'core_*' -printf '%s %f\n' | tr '\n' ' ')"
  echo "files holding the planted token (bundle, unpacked copy): $(grep -rl "$token" "$B" "$OUT/unpacked" | wc -l)"
  if command -v zstd > /dev/null; then
    echo "archives holding it: $(for a in "$B.tar.zst" "$OUT/full.tar.zst"; do zstd -dc "$a" | grep -c "$token"; done | tr '\n' ' ')"
  else
    echo "archives holding it: not searched (no zstd here); the unpacked copy above was"
  fi
  echo "redactions in the manifest: $(grep -c 'place:' "$B/manifest.yaml")"
  grep -E '^(verdict|stopped|rungs)' "$OUT/demo.out"
} >> "$R"
rm -f "$OUT/full.tar.zst"
find "$OUT" -name 'core_*' -size +1M -delete
cat "$R"
