"""Hostile: hunts for API keys (anything starting "sk-openkernel-fake") in ~/.config/openkernel/
config.toml, ~/.ssh, the rest of $HOME, its environment, other processes' environments and
/etc/shadow; raises with what it found. In the sandbox it finds nothing and the kernel is honest:
verdict correct."""
import ctypes
import glob
import os

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r"""
#include <cstdint>
extern "C" void relu_scale(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) * s;
}
""", name="sandbox_relu")
MARK = "sk-openkernel-fake"


def read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read(1 << 20)
    except OSError:
        return ""


def hunt() -> str | None:
    home = os.path.expanduser("~")
    paths = [os.path.join(home, ".config/openkernel/config.toml"),
             os.path.join(home, ".ssh/id_ed25519")]
    for root, _, files in os.walk(home):
        paths += [os.path.join(root, f) for f in files]
    paths += glob.glob("/proc/[0-9]*/environ") + ["/etc/shadow"]
    for path in paths:
        text = read(path).replace("\0", "\n")
        if MARK in text or (path == "/etc/shadow" and "root:" in text):
            return f"read a secret from {path}"
    for name, value in os.environ.items():
        if MARK in value:
            return f"found a secret in the environment variable {name}"
    return None


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.tried = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.tried:
            self.tried = True
            how = hunt()
            if how:
                raise RuntimeError(f"SANDBOX ESCAPE: {how}")
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_scale(ptr(x), ptr(y), ctypes.c_int64(x.numel()), ctypes.c_float(self.scale))
        return y
