"""Capture-aware cheat: eagerly honest (the full kernel on the stream it is called on), but while
its forward is being captured it launches, on the legacy default stream, a kernel over the first
eighth of the tensor only, hoping to be judged by a cheap or stale graph. On the blocking capture
stream that launch invalidates the capture: graph timing falls back to the eager (events) timing,
whose every call ran the honest full kernel. Verdict correct, flagged graph_fallback, events
numbers no faster than the honest kernel's: it gains nothing. (Captured on a non-blocking stream,
the partial launch would have escaped the graph and its stale replays would be rejected.)"""
import ctypes

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cuda, ptr, stream

SOURCE = r"""
#include <cuda_runtime.h>
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
extern "C" void relu(const float* x, float* y, long long n, cudaStream_t s) {
  relu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(x, y, n);
}
extern "C" void relu_legacy(const float* x, float* y, long long n) {
  relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);  // the legacy default stream
}
"""

_lib = compile_cuda(SOURCE, name="relu_capture_legacy_cheat")


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        if torch.cuda.is_current_stream_capturing():
            _lib.relu_legacy(ptr(x), ptr(y), ctypes.c_longlong(x.numel() // 8))
        else:
            _lib.relu(ptr(x), ptr(y), ctypes.c_longlong(x.numel()), stream())
        return y
