"""Hostile: allocates more memory than the sandbox allows (OPENKERNEL_TEST_ALLOC_MB) and checks
that core dumps are off and CPU time is bounded; raises if any limit is missing. In the sandbox
the allocation fails with MemoryError and the kernel is honest: verdict correct."""
import ctypes
import os
import resource

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r"""
#include <cstdint>
extern "C" void relu_scale(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) * s;
}
""", name="sandbox_relu")


def unlimited() -> str | None:
    if resource.getrlimit(resource.RLIMIT_CORE)[0] != 0:
        return "core dumps are on"
    if resource.getrlimit(resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY:
        return "CPU time is unlimited"
    if resource.getrlimit(resource.RLIMIT_NPROC)[0] == resource.RLIM_INFINITY:
        return "the process count is unlimited"
    try:
        hog = bytearray(int(os.environ.get("OPENKERNEL_TEST_ALLOC_MB") or 1) << 20)
    except MemoryError:
        return None
    del hog
    return "allocating past the memory limit worked"


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.tried = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.tried:
            self.tried = True
            how = unlimited()
            if how:
                raise RuntimeError(f"NOT LIMITED: {how}")
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_scale(ptr(x), ptr(y), ctypes.c_int64(x.numel()), ctypes.c_float(self.scale))
        return y
