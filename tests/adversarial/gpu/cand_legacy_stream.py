"""Honest, launched the way KernelBench's own few-shot examples launch: kernel<<<grid, block>>>
with no stream argument, so the kernel runs on the legacy default stream, not on the stream the
forward was called on (built with the fast nvcc path, an extern "C" host function). Eagerly its
outputs and times are right. Captured on torch's non-blocking stream it would escape the graph
(an empty graph, stale replays, rejected as timed_output_mismatch); on the blocking capture
stream the launch invalidates the capture instead. Must be correct, flagged graph_fallback (the
reason names the launch outside the stream), timed by events, no below_physical_floor."""
import ctypes

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cuda, ptr

SOURCE = r"""
#include <cuda_runtime.h>
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
extern "C" void relu(const float* x, float* y, long long n) {
  const int block = 256;
  relu_kernel<<<(unsigned)((n + block - 1) / block), block>>>(x, y, n);  // no stream argument
}
"""

_lib = compile_cuda(SOURCE, name="relu_legacy_stream")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu(ptr(x), ptr(y), ctypes.c_longlong(x.numel()))
        return y
