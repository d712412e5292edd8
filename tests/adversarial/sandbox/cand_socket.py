"""Hostile: connects to a server the test runs outside the sandbox (127.0.0.1, port in
OPENKERNEL_TEST_PORT) and, were that to work, would send it data and raise. In the sandbox the
network namespace is empty, the connection fails, and the kernel is honest: verdict correct."""
import ctypes
import os
import socket

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r"""
#include <cstdint>
extern "C" void relu_scale(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) * s;
}
""", name="sandbox_relu")


def escape() -> str | None:
    port = int(os.environ.get("OPENKERNEL_TEST_PORT") or 9)
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=3)
    except OSError:
        return None
    with conn:
        conn.sendall(b"escaped from the sandbox\n")
    return f"connected to 127.0.0.1:{port}"


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.tried = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.tried:
            self.tried = True
            how = escape()
            if how:
                raise RuntimeError(f"SANDBOX ESCAPE: {how}")
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_scale(ptr(x), ptr(y), ctypes.c_int64(x.numel()), ctypes.c_float(self.scale))
        return y
