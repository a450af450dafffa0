#!/usr/bin/env bash
# Issue 40 (the real stack) on a machine with an NVIDIA GPU: what each provenance of
# tests/gpu/programs/real_stack prints, what its caches hold, and what `debug-ima` makes of it.
#
# Parts (PARTS, default "raw tool"):
#   raw     each program plainly (stdout/stderr, exit code, seconds); the Inductor cases also
#           with TORCH_LOGS=output_code,graph_code and with INDUCTOR_PROVENANCE=1 (+TORCH_TRACE);
#           CuPy also with CUPY_CUDA_COMPILE_WITH_DEBUG=1 CUPY_CACHE_SAVE_CUDA_SOURCE=1. The JIT
#           builds and NVRTC cases run beside the Inductor ones (CPU-bound compiles).
#   tool    `debug-ima --recipe pytorch --set script=... --rungs RUNGS --yes` on each case
#           (RUNGS default "baseline": the armed run), bundles kept without dumps or cores
#   warm    the caches a second run finds: Inductor's, the JIT extension's; the setup.py build
#   engine  engine_serve.py: plain without a fault (throughput), then under the tool with each
#           fault, then `watch` (ENGINE_FAULTS, default all five)
#   watch   engine_serve.py plain and under `watch` alternating, WATCH_S seconds each (cost)
#   cold    the Inductor cases under the tool on an empty Inductor cache (a fresh machine):
#           the recorder must read each kernel's file after Inductor wrote it
#   ext     ext_pkg installed as vLLM's csrc is (`pip install --no-build-isolation -e .`), its
#           line info counted, then the `vllm` recipe on it with the rebuild rung
#   hang    engine_serve.py --fault hang: under the tool with --hang-after, then started
#           plainly and read by `debug-ima dump PID` (the front's pid: its tree)
#   repro   --repro on the engine's Triton fault, an Inductor kernel and a JIT op
# Writes OUTDIR/real-stack.tar.gz (logs, bundles, the Inductor/extension/CuPy cache files that
# are text and small) and OUTDIR/summary.txt, rewritten after each case so a call cut at its
# limit still returns what was done.
#
# usage: [PARTS=...] tests/gpu/record_real_stack.sh XTASK_BINARY OUTDIR
set -u
[ $# -ge 2 ] || { echo "usage: tests/gpu/record_real_stack.sh XTASK_BINARY OUTDIR" >&2; exit 2; }
XTASK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"
OUTDIR=$(cd "$2" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 2
P=tests/gpu/programs/real_stack
W=${WORK:-/tmp/real-stack}
mkdir -p "$W/logs" "$W/bundles"
PARTS=${PARTS:-raw tool}
RUNGS=${RUNGS:-baseline}
DEADLINE_S=${DEADLINE_S:-560}
T0=$(date +%s)
export PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-16}
left() { echo $((DEADLINE_S - ($(date +%s) - T0))); }

summary() { echo "$*" >> "$W/summary.txt"; }
pack() {
  cp "$W/summary.txt" "$OUTDIR/summary.txt" 2>/dev/null
  # The caches' text files: Inductor's generated Python, the extensions' sources and
  # build.ninja, CuPy's saved sources; no binaries.
  mkdir -p "$W/caches"
  for d in /tmp/torchinductor_$(id -un) "$HOME/.cache/torch_extensions" "$HOME/.cupy/kernel_cache"; do
    [ -d "$d" ] || continue
    (cd / && find "${d#/}" -type f \( -name '*.py' -o -name '*.cu' -o -name '*.cpp' -o -name 'build.ninja' -o -name '*.json' \) -size -512k -print0 \
      | tar --null -T - -cf - 2>/dev/null) | (cd "$W/caches" && tar -xf - 2>/dev/null)
  done
  find "$W" -name 'core_*' -size +1M -delete 2>/dev/null
  tar -C "$W" -czf "$OUTDIR/real-stack.tar.gz" logs bundles caches summary.txt 2>/dev/null
}

raw() { # name timeout env... -- cmd...
  local name=$1 t=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local s; s=$(date +%s.%N)
  timeout -s KILL "$t" env "${envs[@]}" "$@" > "$W/logs/$name.out" 2> "$W/logs/$name.err"
  local rc=$?
  summary "raw $name: exit $rc in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s}") s: ${envs[*]} $*"
}

tool() { # name timeout xtask-args...
  local name=$1 t=$2; shift 2
  if [ "$(left)" -lt 30 ]; then summary "tool $name: skipped (deadline)"; return; fi
  local s; s=$(date +%s.%N)
  if [ "$1" = watch ]; then # its options go before the job's `--`
    shift; set -- watch --bundle-dir "$W/bundles/$name" "$@"
  else
    set -- "$@" --bundle-dir "$W/bundles/$name"
  fi
  timeout -s KILL "$t" "$XTASK" "$@" > "$W/logs/tool-$name.out" 2> "$W/logs/tool-$name.err"
  local rc=$?
  summary "tool $name: exit $rc in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $s}") s: $*"
  grep -E '^(verdict|no verdict|  |stopped|rungs)' "$W/logs/tool-$name.out" | head -20 >> "$W/summary.txt"
  summary "  left on the GPU: $(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ' ')"
  pack
}

# The py-spy wheel carried in .whl/ (the GPU machine has no py-spy and no network).
if ! command -v py-spy >/dev/null && ls .whl/py_spy-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-deps --no-index .whl/py_spy-*.whl >/dev/null 2>&1
fi
py() { echo "--recipe pytorch --set script=$1 --set args=$2"; }

summary "== $(date -u) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
summary "torch $(python3 -c 'import torch,triton;print(torch.__version__, triton.__version__)' 2>&1)"

for part in $PARTS; do
case $part in
raw)
  ( raw jit_load 300 -- python3 $P/jit_op_fault.py load
    raw jit_inline 300 -- python3 $P/jit_op_fault.py inline
    (cd $P/ext_pkg && timeout 300 python3 -m pip install --no-build-isolation --no-deps --no-index -e . > "$W/logs/ext_install.log" 2>&1; echo "ext install: exit $?" >> "$W/summary.txt")
    raw ext_use 120 -- python3 $P/ext_pkg/use_ext.py
  ) &
  ( raw cupy 120 -- python3 $P/nvrtc_fault.py cupy
    raw cupy_module 120 -- python3 $P/nvrtc_fault.py cupy-module
    raw cupy_debug 120 CUPY_CUDA_COMPILE_WITH_DEBUG=1 CUPY_CACHE_SAVE_CUDA_SOURCE=1 -- python3 $P/nvrtc_fault.py cupy
    raw cuda_core 120 -- python3 $P/nvrtc_fault.py cuda-core
    raw numba 120 -- python3 $P/nvrtc_fault.py numba
  ) &
  raw ind_assert 240 -- python3 $P/inductor_fault.py assert
  raw ind_read 240 -- python3 $P/inductor_fault.py read
  raw ind_write 240 -- python3 $P/inductor_fault.py write
  raw ind_read_graphs 240 -- python3 $P/inductor_fault.py read graphs
  raw ind_assert_graphs 240 -- python3 $P/inductor_fault.py assert graphs
  raw ind_read_logs 240 TORCH_LOGS=output_code,graph_code -- python3 $P/inductor_fault.py read
  raw ind_read_prov 240 INDUCTOR_PROVENANCE=1 TORCH_TRACE=$W/logs/trace -- python3 $P/inductor_fault.py read
  raw ind_clean 240 -- python3 $P/inductor_fault.py clean
  wait
  pack
  ;;
warm)
  # The caches a user's machine has: Inductor's, the JIT extension's, CuPy's (so that the
  # tool's runs time what a second run of the program costs); the setup.py extension built.
  raw warm_inductor 240 -- python3 $P/inductor_fault.py clean
  raw warm_graphs 240 -- python3 $P/inductor_fault.py clean graphs
  raw warm_jit 300 -- python3 $P/jit_op_fault.py clean
  (cd $P/ext_pkg && timeout 300 python3 setup.py build_ext --inplace > "$W/logs/ext_build.log" 2>&1; echo "ext build: exit $?" >> "$W/summary.txt")
  ;;
tool)
  tool ind_read 200 debug-ima $(py $P/inductor_fault.py read) --rungs $RUNGS --yes
  tool ind_assert 200 debug-ima $(py $P/inductor_fault.py assert) --rungs $RUNGS --yes
  tool ind_read_graphs 200 debug-ima $(py $P/inductor_fault.py read) --set args="read graphs" --rungs $RUNGS --yes
  tool jit_rebuild 300 debug-ima $(py $P/jit_op_fault.py load) --rungs baseline,rebuild --yes
  tool cupy_rebuild 200 debug-ima $(py $P/nvrtc_fault.py cupy) --rungs baseline,rebuild --yes
  tool jit_load 200 debug-ima $(py $P/jit_op_fault.py load) --rungs $RUNGS --yes
  tool cupy 200 debug-ima $(py $P/nvrtc_fault.py cupy) --rungs $RUNGS --yes
  CUPY_CUDA_COMPILE_WITH_DEBUG=1 CUPY_CACHE_SAVE_CUDA_SOURCE=1 tool cupy_debug 200 debug-ima $(py $P/nvrtc_fault.py cupy) --rungs $RUNGS --yes
  tool cuda_core 200 debug-ima $(py $P/nvrtc_fault.py cuda-core) --rungs $RUNGS --yes
  tool ind_write 200 debug-ima $(py $P/inductor_fault.py write) --rungs $RUNGS --yes
  tool ind_assert_graphs 200 debug-ima $(py $P/inductor_fault.py assert) --set args="assert graphs" --rungs $RUNGS --yes
  tool cupy_module 200 debug-ima $(py $P/nvrtc_fault.py cupy-module) --rungs $RUNGS --yes
  tool jit_inline 200 debug-ima $(py $P/jit_op_fault.py inline) --rungs $RUNGS --yes
  PYTHONPATH=$ROOT/$P/ext_pkg tool ext_use 200 debug-ima $(py $P/ext_pkg/use_ext.py "") --rungs $RUNGS --yes
  ;;
engine)
  [ "${ENGINE_PLAIN:-1}" = 1 ] && raw engine_none 120 -- python3 $P/engine_serve.py --fault none --seconds 15
  for f in ${ENGINE_FAULTS:-inductor-read jit-op triton nvrtc inductor-assert}; do
    tool "engine_$f" 240 debug-ima --recipe pytorch --set script=$P/engine_serve.py --set args="--fault $f --seconds 60" --rungs $RUNGS --yes
  done
  ;;
watch)
  S=${WATCH_S:-20}
  for i in $(seq 1 "${WATCH_PAIRS:-2}"); do
    raw "engine_plain_$i" $((S + 120)) -- python3 $P/engine_serve.py --fault none --seconds "$S"
    tool "engine_watch_$i" $((S + 120)) watch -- python3 $P/engine_serve.py --fault none --seconds "$S"
  done
  tool engine_watch_late 200 watch -- python3 $P/engine_serve.py --fault inductor-read --fault-after 30 --seconds 60
  ;;
cold)
  tool cold_ind_read 200 debug-ima $(py $P/inductor_fault.py read) --rungs $RUNGS --yes
  tool cold_ind_assert 200 debug-ima $(py $P/inductor_fault.py assert) --rungs $RUNGS --yes
  ;;
ext)
  SO=ima_ext/_C.cpython-312-x86_64-linux-gnu.so
  (cd $P/ext_pkg && rm -rf build ima_ext/*.so *.egg-info && timeout 300 python3 -m pip install -v --no-build-isolation --no-deps --no-index -e . > "$W/logs/ext_install.log" 2>&1; echo "ext install: exit $?" >> "$W/summary.txt")
  summary "ext .so: $(ls -la $P/ext_pkg/$SO 2>&1); line-info sections: $(cuobjdump -elf $P/ext_pkg/$SO 2>/dev/null | grep -c '\.nv_debug_line_sass\|\.debug_line')"
  tool ext_vllm 400 debug-ima --recipe vllm --set vllm_src=$P/ext_pkg --set repro="python3 $ROOT/$P/ext_pkg/use_ext.py" --set binaries=$SO --rungs baseline,rebuild --yes
  summary "ext .so after: line-info sections: $(cuobjdump -elf $P/ext_pkg/$SO 2>/dev/null | grep -c '\.nv_debug_line_sass\|\.debug_line')"
  ;;
hang)
  tool engine_hang 300 debug-ima --recipe pytorch --set script=$P/engine_serve.py --set args="--fault hang --seconds 200" --hang-after 45 --yes
  python3 $P/engine_serve.py --fault hang --seconds 200 > "$W/logs/dump_target.out" 2> "$W/logs/dump_target.err" &
  FRONT=$!
  for i in $(seq 1 90); do grep -q "planting the hang" "$W/logs/dump_target.err" && break; sleep 1; done
  sleep 5
  summary "dump target: front pid $FRONT, GPU: $(nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | tr '\n' ' ')"
  tool dump_engine 200 dump "$FRONT" --yes
  tool dump_engine_kill 200 dump "$FRONT" --kill --yes
  kill -9 $FRONT 2>/dev/null; pkill -9 -f engine_serve.py 2>/dev/null
  ;;
repro)
  tool repro_engine_triton 300 debug-ima --recipe pytorch --set script=$P/engine_serve.py --set args="--fault triton --seconds 60" --repro --yes
  tool repro_ind_read 200 debug-ima $(py $P/inductor_fault.py read) --repro --yes
  tool repro_jit 200 debug-ima $(py $P/jit_op_fault.py load) --repro --yes
  ;;
esac
pack
done
pack
cat "$W/summary.txt"
