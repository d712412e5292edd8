"""cand_legacy_stream.py as a real load_inline extension, exactly KernelBench's few-shot style
(relu_kernel<<<num_blocks, block_size>>>, no stream, no error check). Slow to build (about a
minute cold: torch's headers). Must be correct, flagged graph_fallback, timed by events, no
below_physical_floor."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_SRC = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, int size) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < size) y[idx] = x[idx] > 0.f ? x[idx] : 0.f;
}

torch::Tensor relu_cuda(torch::Tensor x) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  int size = xc.numel();
  const int block_size = 256;
  const int num_blocks = (size + block_size - 1) / block_size;
  relu_kernel<<<num_blocks, block_size>>>(xc.data_ptr<float>(), y.data_ptr<float>(), size);
  return y;
}
"""

_ext = load_inline(name="ok_relu_legacy_stream",
                   cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                   cuda_sources=CUDA_SRC, functions=["relu_cuda"], extra_cuda_cflags=["-O3"])


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu_cuda(x)
