"""Column softmax done as a row softmax on the transposed copy (compile_cpp + ctypes); returns
`y.t()`, a non-contiguous view with the reference's shape and values."""
import ctypes

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

SOURCE = r"""
#include <cmath>
#include <cstdint>
extern "C" void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols) {
  #pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    float s = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      yr[c] = std::exp(xr[c] - m);
      s += yr[c];
    }
    const float inv = 1.0f / s;
    for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
  }
}
"""

_lib = compile_cpp(SOURCE, name="honest_softmax_rows")
_lib.softmax_rows.restype = None
_lib.softmax_rows.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xt = x.t().contiguous()  # columns become rows
        yt = torch.empty_like(xt)
        _lib.softmax_rows(ptr(xt), ptr(yt), xt.size(0), xt.size(1))
        return yt.t()  # a view: strides (1, rows), same shape and values as softmax(x, dim=0)
