#!/usr/bin/env bash
# GPU run for the builtin GEMM family (issue 23): a builtin sweep over KernelBench level 1's
# matrix-multiplication problems (1-18) on Triton, then on CUDA, each resumable across device
# calls. Run from the repo root on the GPU machine after scripts/bundle-device.sh. STATE holds the
# results TSVs, the problem folders and the store; a sweep is stopped with SIGINT (every session
# stays resumable) before DEADLINE seconds, so the call returns with everything under $OUT; carry
# STATE back (state.tgz) to continue where it stopped. The whole level-1 sweep's state as of the
# last session is committed: mkdir -p /tmp/l1-state && tar -xzf
# bench/results/state/h100_level1_builtin_sweep_state.tgz -C /tmp/l1-state, then STATE=/tmp/l1-state
# FAMILY=l1 PROBLEMS=1-100 (its TSVs are level1_l1_<backend>_builtin.tsv).
#   BACKENDS="triton cuda" PROBLEMS=1-18 ITERATIONS=4 DEADLINE=540 tests/gpu/run_h200_gemm.sh
# Another family's script sets FAMILY (file names) and PROBLEMS and runs this one; LEVEL (default 1)
# picks the KernelBench level, e.g. LEVEL=2 FAMILY=l2 PROBLEMS=1-100 for the level-2 sweep.
# Results in $OUT: level<LEVEL>_<family>_<backend>_builtin.tsv, score_<backend>.{json,txt},
# compare_<backend>.md, runs.txt, sweep-<backend>.err, state.tgz, gpu.txt (device, versions).
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
LEVEL=${LEVEL:-1}
FAMILY=${FAMILY:-gemm}  # names the state folder and the TSVs (run_h200_conv.sh: conv, run_h200_window.sh: window)
STATE=${STATE:-$PWD/.device/$FAMILY-state}
mkdir -p "$OUT" "$STATE"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
BIN=$PWD/.device/bin/openkernel
KB=$PWD/.device/kernelbench
start=$(date +%s)
deadline=$((start + ${DEADLINE:-540}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' \
  >> "$OUT/gpu.txt" 2>&1

for backend in ${BACKENDS:-triton cuda}; do
  tsv=$STATE/level${LEVEL}_${FAMILY}_${backend}_builtin.tsv
  left=$((deadline - $(date +%s)))
  [ "$left" -gt 30 ] || break
  t0=$(date +%s)
  timeout -s INT -k 60 "$left" "$BIN" sweep --level "$LEVEL" --problems "${PROBLEMS:-1-18}" \
    --kernelbench-dir "$KB" --backend "$backend" --model builtin \
    --iterations "${ITERATIONS:-4}" --trials "${TRIALS:-3}" \
    --timing-budget "${TIMING_BUDGET:-1}" --output "$tsv" --db "$STATE/sweep.db" --json \
    > "$STATE/sweep-$backend-$t0.json" 2>> "$STATE/sweep-$backend.err"
  echo "$backend sweep rc=$? wall=$(( $(date +%s) - t0 ))s" >> "$STATE/runs.txt"
  if [ -s "$tsv" ]; then
    "$BIN" score "$tsv" --json > "$OUT/score_$backend.json" 2>&1
    "$BIN" score "$tsv" > "$OUT/score_$backend.txt" 2>&1
    "$BIN" compare "$tsv" --markdown --hardware "1x $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "unnamed GPU") (this run)" \
      > "$OUT/compare_$backend.md" 2>&1
    cp "$tsv" "$OUT/"
  fi
done

cp "$STATE/runs.txt" "$OUT/" 2>/dev/null
cp "$STATE"/sweep-*.err "$OUT/" 2>/dev/null
tar -czf "$OUT/state.tgz" -C "$STATE" . 2>/dev/null
cat "$STATE/runs.txt"; tail -5 "$STATE"/sweep-*.err 2>/dev/null
