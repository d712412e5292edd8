"""KernelBench level1/19_ReLU: a vectorised CUDA kernel (float4 loads and stores). Correct."""
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

__global__ void relu1(const float* __restrict__ x, float* __restrict__ y, long long start,
                      long long n) {
  long long i = start + blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}

torch::Tensor relu(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "float32 CUDA tensor expected");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  long long n = xc.numel(), n4 = n / 4;
  auto stream = at::cuda::getCurrentCUDAStream();
  const int threads = 256;
  if (n4 > 0)
    relu4<<<(n4 + threads - 1) / threads, threads, 0, stream>>>(
        reinterpret_cast<const float4*>(xc.data_ptr<float>()),
        reinterpret_cast<float4*>(y.data_ptr<float>()), n4);
  if (n > n4 * 4)
    relu1<<<1, threads, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n4 * 4, n);
  return y;
}
"""

_ext = load_inline(name="ok_relu_cuda", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                   cuda_sources=CUDA_SRC, functions=["relu"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu(x)
