"""KernelBench level 2 style: PyTorch's own Conv2d, then a custom load_inline CUDA kernel for the
epilogue (per-channel bias add + ReLU), written in place into the convolution's output. The
parameters are created in the reference's order, so the same seed gives the same weights."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <algorithm>

__global__ void bias_relu_inplace_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                         int64_t n, int64_t hw, int64_t channels) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = (i / hw) % channels;
    const float v = y[i] + __ldg(bias + c);
    y[i] = v > 0.0f ? v : 0.0f;
  }
}

torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias) {
  TORCH_CHECK(y.is_cuda() && y.dim() == 4 && y.scalar_type() == torch::kFloat32,
              "bias_relu_: a 4-D float32 CUDA tensor is expected");
  TORCH_CHECK(y.is_contiguous(), "bias_relu_: works in place on a contiguous NCHW tensor");
  TORCH_CHECK(bias.numel() == y.size(1), "bias_relu_: one bias per channel is expected");
  auto b = bias.contiguous();
  const int64_t n = y.numel();
  if (n == 0) return y;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 4096);
  bias_relu_inplace_kernel<<<static_cast<unsigned>(blocks), threads, 0,
                             at::cuda::getCurrentCUDAStream()>>>(
      y.data_ptr<float>(), b.data_ptr<float>(), n, y.size(2) * y.size(3), y.size(1));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

epilogue = load_inline(name="honest_conv_bias_relu",
                       cpp_sources="torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias);",
                       cuda_sources=CUDA_SOURCE, functions=["bias_relu_"],
                       extra_cflags=["-O3"], extra_cuda_cflags=["-O3", "--use_fast_math"])


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).contiguous()
        return epilogue.bias_relu_(y, self.bias)
