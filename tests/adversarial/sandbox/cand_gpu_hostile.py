"""GPU profile: an honest Triton kernel whose first call also tries every escape of the CPU
candidates (socket to OPENKERNEL_TEST_PORT, secrets under $HOME and in environments, writes to
$HOME and /tmp) and raises if one works. Its outputs come back as CUDA IPC handles, so a correct
verdict also shows CUDA IPC works across the sandbox's boundary."""
import glob
import os
import socket

import torch
import torch.nn as nn
import triton
import triton.language as tl

MARK = "sk-openkernel-fake"


@triton.jit
def _relu_scale(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=mask)


def escape() -> str | None:
    port = int(os.environ.get("OPENKERNEL_TEST_PORT") or 9)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        return f"connected to 127.0.0.1:{port}"
    except OSError:
        pass
    home = os.path.expanduser("~")
    paths = [os.path.join(r, f) for r, _, fs in os.walk(home) for f in fs]
    for path in paths + glob.glob("/proc/[0-9]*/environ"):
        try:
            with open(path, errors="replace") as f:
                if MARK in f.read(1 << 20):
                    return f"read a secret from {path}"
        except OSError:
            pass
    if any(MARK in v for v in os.environ.values()):
        return "found a secret in the environment"
    token = os.environ.get("OPENKERNEL_TEST_TAG")
    if not token:
        raise RuntimeError("test setup: OPENKERNEL_TEST_TAG did not reach the candidate")
    for folder in (home, "/tmp"):
        try:
            with open(os.path.join(folder, f"openkernel-escape-{token}"), "w") as f:
                f.write("written by a candidate\n")
        except OSError:
            pass
    return None


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
        n = x.numel()
        _relu_scale[(triton.cdiv(n, 1024),)](x, y, n, self.scale, BLOCK=1024)
        return y
