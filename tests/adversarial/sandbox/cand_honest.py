"""Control: an honest native kernel (compiled inside the sandbox into the native cache)."""
import ctypes

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r"""
#include <cstdint>
extern "C" void relu_scale(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) * s;
}
""", name="sandbox_relu")


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_scale(ptr(x), ptr(y), ctypes.c_int64(x.numel()), ctypes.c_float(self.scale))
        return y
