"""Honest native kernels the hostile candidates build on (the fast CPU compile path)."""
import ctypes

import torch

from openkernel_worker.native import DEFAULT_FLAGS, compile_cpp, ptr

_SRC = r"""
#include <cmath>
#include <cstdint>
extern "C" void swish(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}
extern "C" void softmax_rows(const float* x, float* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float m = xr[0];
    for (int64_t c = 1; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    float inv = (float)(1.0 / s);
    for (int64_t c = 0; c < cols; ++c) yr[c] = std::exp(xr[c] - m) * inv;
  }
}
"""
_lib = compile_cpp(_SRC, flags=DEFAULT_FLAGS, name="adversarial")


def swish(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x) if out is None else out
    _lib.swish(ptr(x), ptr(y), ctypes.c_int64(x.numel()))
    return y


def softmax_rows(x: torch.Tensor, rows: int | None = None) -> torch.Tensor:
    x = x.contiguous()
    y = torch.zeros_like(x)
    _lib.softmax_rows(ptr(x), ptr(y), ctypes.c_int64(rows if rows is not None else x.shape[0]),
                      ctypes.c_int64(x.shape[1]))
    return y
