"""a + b * c as a load_inline CUDA kernel in the style of KernelBench's few-shot example: int
indexing, the output allocated with torch::zeros_like, and a `<<<blocks, threads>>>` launch with
no stream argument (the legacy default stream, not torch's current stream)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

mul_add_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void fused_mul_add_kernel(const float* a, const float* b, const float* c, float* out,
                                     int size) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < size) {
        out[idx] = a[idx] + b[idx] * c[idx];
    }
}

torch::Tensor fused_mul_add_cuda(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && c.is_cuda(), "inputs must be CUDA tensors");
    TORCH_CHECK(a.sizes() == b.sizes() && a.sizes() == c.sizes(), "inputs must have one shape");
    TORCH_CHECK(a.numel() < (1LL << 31), "too many elements for int indexing");
    auto a_c = a.contiguous();
    auto b_c = b.contiguous();
    auto c_c = c.contiguous();
    auto out = torch::zeros_like(a_c);
    int size = static_cast<int>(a_c.numel());
    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;
    fused_mul_add_kernel<<<num_blocks, block_size>>>(a_c.data_ptr<float>(), b_c.data_ptr<float>(),
                                                     c_c.data_ptr<float>(), out.data_ptr<float>(),
                                                     size);
    return out;
}
"""

mul_add_cpp_source = "torch::Tensor fused_mul_add_cuda(torch::Tensor a, torch::Tensor b, torch::Tensor c);"

fused_mul_add = load_inline(
    name="honest_fused_mul_add",
    cpp_sources=mul_add_cpp_source,
    cuda_sources=mul_add_source,
    functions=["fused_mul_add_cuda"],
    verbose=False,
    extra_cflags=[""],
    extra_ldflags=[""],
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fused_mul_add = fused_mul_add

    def forward(self, a, b, c):
        return self.fused_mul_add.fused_mul_add_cuda(a, b, c)
