#!/usr/bin/env bash
# GPU run for the builtin window family (issue 23): run_h200_gemm.sh's resumable Triton then CUDA
# sweeps over KernelBench level 1's pooling, argmax/argmin and scan problems (41-46, 51, 52,
# 89-93), state in .device/window-state, results in $OUT as level1_window_<backend>_builtin.tsv,
# score_<backend>.{json,txt}, compare_<backend>.md, runs.txt, sweep-<backend>.err, state.tgz,
# gpu.txt.
#   BACKENDS="triton cuda" ITERATIONS=4 DEADLINE=540 tests/gpu/run_h200_window.sh
FAMILY=window PROBLEMS=${PROBLEMS:-41-46,51,52,89-93} exec "$(dirname "$0")/run_h200_gemm.sh"
