"""Tanh-approximate GELU as one templated load_inline CUDA kernel: `__restrict__` pointers,
AT_DISPATCH over float/double/half/bfloat16 (math in at::opmath_type), a grid-stride loop with
int64 indices, torch::empty for the output, launched on at::cuda::getCurrentCUDAStream() and
checked with C10_CUDA_KERNEL_LAUNCH_CHECK. The same candidate serves the fp32, fp16 and bf16
references."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

template <typename scalar_t>
__global__ void gelu_tanh_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y,
                                 int64_t n) {
  using acc_t = at::opmath_type<scalar_t>;
  const acc_t k_beta = acc_t(0.7978845608028654);  // sqrt(2 / pi)
  const acc_t k_kappa = acc_t(0.044715);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const acc_t v = static_cast<acc_t>(x[i]);
    const acc_t inner = k_beta * (v + k_kappa * v * v * v);
    y[i] = static_cast<scalar_t>(acc_t(0.5) * v * (acc_t(1) + tanh(inner)));
  }
}

torch::Tensor gelu_tanh(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "gelu_tanh: a CUDA tensor is expected");
  auto xc = x.contiguous();
  auto y = torch::empty(xc.sizes(), xc.options());
  const int64_t n = xc.numel();
  if (n == 0) return y;
  const int threads = 256;
  const int64_t wanted = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(std::min<int64_t>(wanted, 132 * 32));
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,
                                  xc.scalar_type(), "gelu_tanh", [&] {
    gelu_tanh_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

CPP_SOURCE = "torch::Tensor gelu_tanh(torch::Tensor x);"

gelu_ext = load_inline(name="honest_gelu_dispatch", cpp_sources=CPP_SOURCE,
                       cuda_sources=CUDA_SOURCE, functions=["gelu_tanh"],
                       extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return gelu_ext.gelu_tanh(x)
