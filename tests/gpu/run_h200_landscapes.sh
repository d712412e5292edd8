#!/usr/bin/env bash
# GPU run for the skill library's ablation (issue 21): the GEMM family's landscapes of KernelBench
# level 1 (bench/gemm_landscapes.tsv, full size) on the H200 with the Triton backend, over the
# triton-gemm sub-space of bench/landscape_axes/triton_gemm.json (about 32 points a problem),
# recorded by bench/record_landscapes.sh in resumable slices. Run from the repo root on the GPU
# machine after scripts/bundle-device.sh:
#
#   SLICE_S=480 tests/gpu/run_h200_landscapes.sh
#
# Each call runs at most SLICE_S seconds (default 480, within a 10-minute command) and leaves
# everything measured so far in one file, $OUT/h200_gemm_landscapes.tgz (bench.db, record.log,
# each problem's optimize JSON). The device machine may be a fresh one at the next call: put the
# last tarball back in the working tree as $RESUME (default tests/gpu/h200_gemm_landscapes.tgz,
# an untracked file travels with the tree) and call again; finished problems are skipped, an
# interrupted one continues where it stopped. When every problem says "done", replay here:
#   tar -xzf h200_gemm_landscapes.tgz bench.db && build/release/bin/skills_ablation --db bench.db \
#     --held-out land-triton-L1_7,... land-triton-L1_1 ... (docs/skills.md, "The ablation")
# Environment: ONLY (problem ids), TRIALS (default 3), TIMING_BUDGET (default 1).
set -uo pipefail
OUT=${OUT:-/tmp/openkernel-gpu}
RESUME=${RESUME:-tests/gpu/h200_gemm_landscapes.tgz}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XDG_CACHE_HOME=/tmp/okcache OPENKERNEL_BWRAP=$PWD/.device/bin/bwrap
export OPENKERNEL_BIN=$PWD/.device/bin/openkernel OPENKERNEL_KERNELBENCH_DIR=$PWD/.device/kernelbench
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
work=/tmp/land-h200-gemm
mkdir -p "$work"
if [ -f "$RESUME" ] && [ ! -f "$work/bench.db" ]; then
  tar -xzf "$RESUME" -C "$work"
  echo "# resumed from $RESUME"
fi
SLICE_S=${SLICE_S:-480} TRIALS=${TRIALS:-3} TIMING_BUDGET=${TIMING_BUDGET:-1} NICE=0 \
  bench/record_landscapes.sh triton bench/gemm_landscapes.tsv bench/landscape_axes/triton_gemm.json \
  "$work" | tee "$work/slice.txt"
tar -czf "$OUT/h200_gemm_landscapes.tgz" -C "$work" bench.db record.log slice.txt \
  $(cd "$work" && ls L1_*.json 2>/dev/null)
echo "# $OUT/h200_gemm_landscapes.tgz"
