#!/usr/bin/env bash
# GPU run for the sweep issue: `openkernel baseline` on a few level-1 problems, then a builtin
# sweep over KernelBench level 1, resumable across device calls. Run from the repo root on the GPU
# machine after scripts/bundle-device.sh. STATE holds the results TSV, the problem folders and the
# store; the sweep is stopped with SIGINT (it keeps every session resumable) before DEADLINE
# seconds, so the call returns with everything under $OUT; carry STATE back to continue.
#   PROBLEMS=1-100 DEADLINE=540 BASELINE_PROBLEMS=1-10 tests/gpu/run_h200_sweep.sh
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
STATE=${STATE:-$PWD/.device/sweep-state}
mkdir -p "$OUT" "$STATE"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPENKERNEL_HOME=$PWD XDG_CACHE_HOME=/tmp/okcache OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
BIN=$PWD/.device/bin/openkernel
KB=$PWD/.device/kernelbench
TSV=$STATE/level1_triton_builtin.tsv
start=$(date +%s)
deadline=$((start + ${DEADLINE:-540}))
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1

if [ -n "${BASELINE_PROBLEMS:-}" ] && [ ! -s "$STATE/baseline.json" ]; then
  t0=$(date +%s)
  timeout -s INT -k 30 "${BASELINE_TIMEOUT:-200}" "$BIN" baseline --level 1 \
    --problems "$BASELINE_PROBLEMS" --kernelbench-dir "$KB" --backend triton \
    --timing-budget "${TIMING_BUDGET:-1}" --db "$STATE/sweep.db" --json \
    > "$STATE/baseline.json" 2> "$STATE/baseline.err"
  echo "baseline rc=$? wall=$(( $(date +%s) - t0 ))s" >> "$STATE/runs.txt"
fi

left=$((deadline - $(date +%s)))
if [ "$left" -gt 30 ]; then
  t0=$(date +%s)
  timeout -s INT -k 60 "$left" "$BIN" sweep --level 1 --problems "${PROBLEMS:-1-100}" \
    --kernelbench-dir "$KB" --backend triton --model builtin --iterations "${ITERATIONS:-1}" \
    --trials "${TRIALS:-3}" --timing-budget "${TIMING_BUDGET:-1}" --output "$TSV" \
    --db "$STATE/sweep.db" --json > "$STATE/sweep-$t0.json" 2>> "$STATE/sweep.err"
  echo "sweep rc=$? wall=$(( $(date +%s) - t0 ))s" >> "$STATE/runs.txt"
fi

if [ -s "$TSV" ]; then
  "$BIN" score "$TSV" --json > "$OUT/score.json" 2>&1
  "$BIN" score "$TSV" > "$OUT/score.txt" 2>&1
  "$BIN" compare "$TSV" --markdown --hardware "1x $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "unnamed GPU") (this run)" > "$OUT/compare.md" 2>&1
  cp "$TSV" "$OUT/"
fi
cp "$STATE/runs.txt" "$STATE/sweep.err" "$OUT/" 2>/dev/null
[ -f "$STATE/baseline.json" ] && cp "$STATE/baseline.json" "$STATE/baseline.err" "$OUT/"
# Everything needed to continue (and the problem folders) as one archive.
tar -czf "$OUT/state.tgz" -C "$STATE" . 2>/dev/null
cat "$STATE/runs.txt"; tail -5 "$STATE/sweep.err"
