"""KernelBench level1/23_Softmax with a classic reduction bug: the block-level reduction keeps only
the first half of the warps' partial sums, so every row is normalised by too small a sum. Must be
judged incorrect."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

constexpr int kThreads = 1024;

__device__ inline void merge(float& m, float& s, float m2, float s2) {
  float M = fmaxf(m, m2);
  if (M == -INFINITY) return;
  s = s * __expf(m - M) + s2 * __expf(m2 - M);
  m = M;
}

__global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
  const float* xr = x + (long long)blockIdx.x * cols;
  float* yr = y + (long long)blockIdx.x * cols;
  float m = -INFINITY, s = 0.f;
  int cols4 = cols / 4;
  const float4* x4 = reinterpret_cast<const float4*>(xr);
  for (int i = threadIdx.x; i < cols4; i += kThreads) {
    float4 v = x4[i];
    float vm = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    float vs = __expf(v.x - vm) + __expf(v.y - vm) + __expf(v.z - vm) + __expf(v.w - vm);
    merge(m, s, vm, vs);
  }
  for (int i = cols4 * 4 + threadIdx.x; i < cols; i += kThreads) merge(m, s, xr[i], 1.f);
  for (int off = 16; off > 0; off >>= 1) {
    float m2 = __shfl_xor_sync(0xffffffff, m, off);
    float s2 = __shfl_xor_sync(0xffffffff, s, off);
    merge(m, s, m2, s2);
  }
  __shared__ float sm[32], ss[32];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) { sm[warp] = m; ss[warp] = s; }
  __syncthreads();
  if (warp == 0) {
    m = sm[lane]; s = lane < 16 ? ss[lane] : 0.f;  // bug: drops half the warps
    for (int off = 16; off > 0; off >>= 1) {
      float m2 = __shfl_xor_sync(0xffffffff, m, off);
      float s2 = __shfl_xor_sync(0xffffffff, s, off);
      merge(m, s, m2, s2);
    }
    if (lane == 0) { sm[0] = m; ss[0] = s; }
  }
  __syncthreads();
  float M = sm[0], inv = 1.f / ss[0];
  float4* y4 = reinterpret_cast<float4*>(yr);
  for (int i = threadIdx.x; i < cols4; i += kThreads) {
    float4 v = x4[i];
    v.x = __expf(v.x - M) * inv; v.y = __expf(v.y - M) * inv;
    v.z = __expf(v.z - M) * inv; v.w = __expf(v.w - M) * inv;
    y4[i] = v;
  }
  for (int i = cols4 * 4 + threadIdx.x; i < cols; i += kThreads) yr[i] = __expf(xr[i] - M) * inv;
}

torch::Tensor softmax(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == at::kFloat, "2-D float32 CUDA");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  softmax_rows<<<xc.size(0), kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(1));
  return y;
}
"""

_ext = load_inline(name="ok_softmax_cuda_wrong", cpp_sources="torch::Tensor softmax(torch::Tensor x);",
                   cuda_sources=CUDA_SRC, functions=["softmax"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax(x)
