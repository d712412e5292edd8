#!/usr/bin/env bash
# GPU run for the builtin norm, reduction and loss family (issue 23): a builtin sweep over
# KernelBench level 1's BatchNorm, InstanceNorm, GroupNorm, Frobenius norm, LayerNorm, Sum,
# MinGPT GELU, the losses (cross-entropy's int64 target included) and scaled dot-product attention
# (two GEMMs around a row softmax) (33-35, 37, 40, 47, 88, 94-100) on Triton, then on CUDA,
# resumable across device calls; run_h200_gemm.sh does the work (same variables and results,
# named level1_norms_<backend>_builtin.tsv, state under .device/norms-state).
#   BACKENDS="triton cuda" ITERATIONS=4 DEADLINE=540 tests/gpu/run_h200_norms.sh
export FAMILY=norms PROBLEMS=${PROBLEMS:-33-35,37,40,47,88,94-100}
exec "$(dirname "$0")/run_h200_gemm.sh"
