"""Hostile: writes files into $HOME, /tmp and a directory outside scratch
(OPENKERNEL_TEST_OUTSIDE), named with OPENKERNEL_TEST_TAG (a name the sandbox's secret filter lets through); raises if the worker's package
directory is writable. In the sandbox the writes land in throw-away tmpfs mounts (the test looks
for the files on the real filesystem afterwards) and the kernel is honest: verdict correct."""
import ctypes
import os

import torch
import torch.nn as nn

import openkernel_worker
from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r"""
#include <cstdint>
extern "C" void relu_scale(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) * s;
}
""", name="sandbox_relu")


def vandalise() -> str | None:
    token = os.environ.get("OPENKERNEL_TEST_TAG")
    if not token:
        raise RuntimeError("test setup: OPENKERNEL_TEST_TAG did not reach the candidate")
    targets = [os.path.expanduser("~"), os.path.expanduser("~/.config"), "/tmp",
               os.environ.get("OPENKERNEL_TEST_OUTSIDE", "/tmp")]
    for folder in targets:
        try:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, f"openkernel-escape-{token}"), "w") as f:
                f.write("written by a candidate\n")
        except OSError:
            pass
    with open("scratch-file", "w") as f:  # the cwd, scratch, is writable
        f.write("fine\n")
    package = os.path.dirname(openkernel_worker.__file__)
    if os.access(package, os.W_OK):
        return f"the worker package {package} is writable"
    return None


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.tried = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.tried:
            self.tried = True
            how = vandalise()
            if how:
                raise RuntimeError(f"SANDBOX ESCAPE: {how}")
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_scale(ptr(x), ptr(y), ctypes.c_int64(x.numel()), ctypes.c_float(self.scale))
        return y
