#!/usr/bin/env bash
# GPU run for the builtin convolution family (issue 23): a builtin sweep over KernelBench level 1's
# convolution problems (50, 54-87) on Triton, then on CUDA, each resumable across device calls;
# the GEMM family's script with this family's problems (same environment knobs, same results in
# $OUT, named level1_conv_<backend>_builtin.tsv; state in .device/conv-state).
#   BACKENDS="triton cuda" ITERATIONS=4 DEADLINE=540 tests/gpu/run_h200_conv.sh
FAMILY=conv PROBLEMS=${PROBLEMS:-50,54-87} exec "$(dirname "$0")/run_h200_gemm.sh"
