#!/usr/bin/env bash
# Records what racecheck and synccheck scoping rests on (issue 23, the sweep's cost): for each
# program, `cuobjdump -sass` and `-elf` of its -lineinfo build, then racecheck and synccheck
# over every kernel, with `--kernel-name` filters (one `kne=` per kernel, repeated), and with
# `--launch-count`, each timed, its text output kept. Writes OUTDIR/scope.tar.gz.
#
# usage: tests/gpu/record_scope.sh OUTDIR
set -u
mkdir -p "$1"; OUT=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/scope.XXXXXX)
cd "$W" || exit 2
done_all() {
rm -f clean_layers transpose rmsnorm rowsum token_hist expert_offsets race_shared barrier oob_write
tar czf "$OUT/scope.tar.gz" -C "$W" .
cat times.txt
}
trap done_all EXIT
cp "$HERE/programs/clean_layers.cu" "$HERE/programs/check.h" "$HERE/kinds/transpose_race/transpose.cu" \
   "$HERE/kinds/rmsnorm_block_race/rmsnorm.cu" "$HERE/kinds/warp_rowsum_race/rowsum.cu" \
   "$HERE/kinds/syncthreads_divergent/token_hist.cu" "$HERE/kinds/syncwarp_tail_mask/expert_offsets.cu" \
   "$HERE/programs/race_shared.cu" "$HERE/programs/barrier.cu" "$HERE/programs/oob_write.cu" .
t() { # t NAME CMD...: time a command, keep its output
  local n=$1; shift; local s=$EPOCHREALTIME
  timeout -k 5 "${STEP_S:-60}" "$@" > "$n.out" 2>&1 < /dev/null; local rc=$?
  echo "$n rc=$rc $(python3 -c "print(f'{$EPOCHREALTIME - $s:.2f}')") s" | tee -a times.txt
}
for p in clean_layers transpose rmsnorm rowsum token_hist expert_offsets race_shared barrier oob_write; do
  echo "build $p $(date +%T)" >> times.txt
  timeout 120 nvcc -O2 -arch=sm_90 -lineinfo -g -o "$p" "$p.cu" 2> "$p.build.err" || { echo "$p build failed"; cat "$p.build.err"; }
  timeout 60 cuobjdump -sass "$p" > "$p.sass.txt" 2>&1
  timeout 60 cuobjdump -elf "$p" > "$p.elf.txt" 2>&1
done
ARGS="4096 16"
t cl-race-all compute-sanitizer --tool racecheck ./clean_layers $ARGS
K=$(grep -o 'Function : [^ ]*' clean_layers.sass.txt | awk '{print $3}')
echo "clean_layers kernels: $K" >> times.txt
F=(); for k in $K; do F+=(--kernel-name "kne=$k"); done
t cl-race-kne-all compute-sanitizer --tool racecheck "${F[@]}" ./clean_layers $ARGS
T=$(echo "$K" | grep transpose); R=$(echo "$K" | grep rms)
t cl-race-kne-two compute-sanitizer --tool racecheck --kernel-name "kne=$T" --kernel-name "kne=$R" ./clean_layers $ARGS
t cl-race-regex-two compute-sanitizer --tool racecheck --kernel-name "regex=transpose|rms" ./clean_layers $ARGS
t cl-race-c2 compute-sanitizer --tool racecheck --launch-count 2 ./clean_layers $ARGS
t cl-race-c6 compute-sanitizer --tool racecheck --launch-count 6 ./clean_layers $ARGS
t cl-race-two-c4 compute-sanitizer --tool racecheck --kernel-name "regex=transpose|rms" --launch-count 4 ./clean_layers $ARGS
t cl-sync-all compute-sanitizer --tool synccheck ./clean_layers $ARGS
t cl-sync-c6 compute-sanitizer --tool synccheck --launch-count 6 ./clean_layers $ARGS
t cl-mem compute-sanitizer --tool memcheck ./clean_layers $ARGS
t cl-init compute-sanitizer --tool initcheck ./clean_layers $ARGS
t cl-plain ./clean_layers $ARGS
t cl-race-small compute-sanitizer --tool racecheck ./clean_layers 1024 4
t cl-race-small-c6 compute-sanitizer --tool racecheck --launch-count 6 ./clean_layers 1024 4
t cl-mem-small compute-sanitizer --tool memcheck ./clean_layers 1024 4
t cl-init-small compute-sanitizer --tool initcheck ./clean_layers 1024 4
t cl-sync-small compute-sanitizer --tool synccheck ./clean_layers 1024 4
# the race programs: found over every kernel, with kne of their kernels, and with -c 1
for p in transpose rmsnorm rowsum race_shared; do
  t $p-race-all compute-sanitizer --tool racecheck ./$p
  t $p-race-c1 compute-sanitizer --tool racecheck --launch-count 1 ./$p
  F=(); for k in $(grep -o 'Function : [^ ]*' $p.sass.txt | awk '{print $3}'); do F+=(--kernel-name "kne=$k"); done
  t $p-race-kne compute-sanitizer --tool racecheck "${F[@]}" ./$p
done
t token_hist-sync-c1 compute-sanitizer --tool synccheck --launch-count 1 ./token_hist
for p in expert_offsets barrier; do
  t $p-sync-all compute-sanitizer --tool synccheck ./$p
  t $p-sync-c1 compute-sanitizer --tool synccheck --launch-count 1 ./$p
done
t kne-none compute-sanitizer --tool racecheck --kernel-name kne=no_such_kernel ./transpose
