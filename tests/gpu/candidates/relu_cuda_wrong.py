"""KernelBench level1/19_ReLU with a realistic bug: the grid covers only half of the elements, so
the second half of the output is never written. Must be judged incorrect."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu4(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
    y[i] = v;
  }
}

torch::Tensor relu(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  long long n4 = xc.numel() / 4;
  const int threads = 256;
  long long blocks = (n4 + threads - 1) / threads / 2;  // bug: half the grid
  relu4<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const float4*>(xc.data_ptr<float>()),
      reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
  return y;
}
"""

_ext = load_inline(name="ok_relu_cuda_wrong", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                   cuda_sources=CUDA_SRC, functions=["relu"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu(x)
