"""KernelBench level1/19_ReLU with the nvcc compile path (compile_cuda): the same float4 kernel
as relu_cuda.py without torch's headers, so a cold compile takes seconds, not a minute."""
import ctypes

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cuda, ptr, stream

SOURCE = r"""
#include <cuda_runtime.h>
__global__ void relu4(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}
__global__ void relu1(const float* __restrict__ x, float* __restrict__ y, long long start,
                      long long n) {
  long long i = start + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
extern "C" int relu(const float* x, float* y, long long n, cudaStream_t s) {
  long long n4 = n / 4;
  if (n4 > 0) relu4<<<(n4 + 255) / 256, 256, 0, s>>>((const float4*)x, (float4*)y, n4);
  if (n > n4 * 4) relu1<<<1, 256, 0, s>>>(x, y, n4 * 4, n);
  return (int)cudaGetLastError();
}
"""

_lib = compile_cuda(SOURCE, name="relu_nvcc")
_lib.relu.restype = ctypes.c_int


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        err = _lib.relu(ptr(x), ptr(y), ctypes.c_longlong(x.numel()), stream())
        if err != 0:
            raise RuntimeError(f"CUDA error {err}")
        return y
