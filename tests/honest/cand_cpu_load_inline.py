"""RMSNorm as a C++ extension built with torch.utils.cpp_extension.load_inline (cpp_sources with
the function, bound through functions=[...]); rows split over threads with at::parallel_for."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor rms_norm(torch::Tensor x, torch::Tensor weight, double eps) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32,
              "rms_norm: a 2-D float32 input is expected");
  TORCH_CHECK(weight.numel() == x.size(1), "rms_norm: one weight per column is expected");
  auto xc = x.contiguous();
  auto wc = weight.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t rows = xc.size(0), cols = xc.size(1);
  const float* xp = xc.data_ptr<float>();
  const float* wp = wc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  const float feps = static_cast<float>(eps);
  at::parallel_for(0, rows, 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = xp + r * cols;
      float* yr = yp + r * cols;
      float sum_sq = 0.0f;
      for (int64_t c = 0; c < cols; ++c) sum_sq += xr[c] * xr[c];
      const float scale = 1.0f / std::sqrt(sum_sq / static_cast<float>(cols) + feps);
      for (int64_t c = 0; c < cols; ++c) yr[c] = xr[c] * scale * wp[c];
    }
  });
  return y;
}
"""

rms_ext = load_inline(name="honest_rms_norm_cpu", cpp_sources=CPP_SOURCE, functions=["rms_norm"],
                      extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(dim))  # same init order as Model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_ext.rms_norm(x, self.weight, self.eps)
