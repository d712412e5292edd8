"""Positive and negative parts of a tensor in one pass: inline PTX (`asm volatile` with
ld.global.nc for the read-only load, `asm` max.f32 / min.f32), two outputs returned from C++ as
a std::vector (a Python list), launched on the current stream."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <vector>

__device__ __forceinline__ float load_readonly(const float* p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
  return v;
}

__device__ __forceinline__ float ptx_max(float a, float b) {
  float r;
  asm("max.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__device__ __forceinline__ float ptx_min(float a, float b) {
  float r;
  asm("min.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__global__ void split_sign_kernel(const float* __restrict__ x, float* __restrict__ pos,
                                  float* __restrict__ neg, long long n) {
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (; i < n; i += stride) {
    const float v = load_readonly(x + i);
    pos[i] = ptx_max(v, 0.0f);
    neg[i] = ptx_min(v, 0.0f);
  }
}

std::vector<torch::Tensor> split_sign(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32,
              "split_sign: a float32 CUDA tensor is expected");
  auto xc = x.contiguous();
  auto pos = torch::empty_like(xc);
  auto neg = torch::empty_like(xc);
  const long long n = xc.numel();
  if (n > 0) {
    const int threads = 512;
    long long blocks = (n + threads - 1) / threads;
    if (blocks > 65535) blocks = 65535;
    split_sign_kernel<<<static_cast<unsigned>(blocks), threads, 0,
                        at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), pos.data_ptr<float>(), neg.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return {pos, neg};
}
"""

split_ext = load_inline(name="honest_split_sign_ptx",
                        cpp_sources="std::vector<torch::Tensor> split_sign(torch::Tensor x);",
                        cuda_sources=CUDA_SOURCE, functions=["split_sign"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        return split_ext.split_sign(x)
