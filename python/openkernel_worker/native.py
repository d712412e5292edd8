"""Fast compile paths for kernels over raw pointers: g++ (CPU) or nvcc (CUDA) straight into a
shared library, loaded with ctypes.

KernelBench's load_inline spends ~28 s per compile here (45-65 s on the H200 machine), almost all
of it parsing torch's headers. Kernels that take raw pointers need none of that:
`compile_cpp(source)` builds in well under a second and `compile_cuda(source)` in a few seconds.
Both cache the library by the hash of source, flags and compiler.

    lib = compile_cpp(SOURCE)           # SOURCE has extern "C" functions
    lib.relu(ptr(x), ptr(y), x.numel())

    lib = compile_cuda(CUDA_SOURCE)     # extern "C" host functions that launch the kernels
    lib.relu(ptr(x), ptr(y), x.numel(), stream())
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from typing import Any, Sequence

DEFAULT_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17")
DEFAULT_CUDA_FLAGS = ("-O3", "-shared", "-Xcompiler", "-fPIC", "-std=c++17")


class CompileError(RuntimeError):
    """The compiler rejected the source; the message holds its diagnostics."""


def _compiler_id(compiler: str) -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip().splitlines()
        return out[-1] if out else compiler
    except OSError:
        return compiler


def _build(source: str, compiler: str, flags: Sequence[str], suffix: str, name: str) -> str:
    """The cached library for (source, flags, compiler); builds it when missing."""
    cache = os.environ.get("OPENKERNEL_NATIVE_CACHE") or os.path.join(
        tempfile.gettempdir(), "openkernel-cache", "native")
    os.makedirs(cache, exist_ok=True)
    key = hashlib.sha256("\0".join([source, *flags, _compiler_id(compiler)]).encode()).hexdigest()[:24]
    lib_path = os.path.join(cache, f"{name}-{key}.so")
    if os.path.exists(lib_path):
        return lib_path
    # Unique temporaries: concurrent candidates (each maybe in its own PID namespace, where pids
    # repeat) may build the same source at once; the last rename wins, all are equal.
    fd, src_path = tempfile.mkstemp(prefix=f"{name}-{key}.", suffix=suffix, dir=cache)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp = src_path[: -len(suffix)] + ".so.tmp"
    try:
        proc = subprocess.run([compiler, *flags, src_path, "-o", tmp], capture_output=True,
                              text=True, check=False)
    except OSError as e:
        raise CompileError(f"cannot run the compiler {compiler!r}: {e.strerror}") from None
    finally:
        os.unlink(src_path)
    if proc.returncode != 0:
        raise CompileError(f"{compiler} failed:\n{proc.stderr[-4000:]}")
    os.replace(tmp, lib_path)
    return lib_path


def compile_cpp(source: str, flags: Sequence[str] = DEFAULT_FLAGS, name: str = "kernel") -> ctypes.CDLL:
    """Compiles C++ `source` into a shared library (cached) and loads it."""
    return ctypes.CDLL(_build(source, os.environ.get("CXX", "g++"), flags, ".cpp", name))


def _nvcc() -> str:
    for candidate in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.exists(candidate):
            return candidate
    raise CompileError("nvcc not found: set NVCC or put the CUDA toolkit's bin on PATH")


def cuda_arch() -> str:
    """sm_XY of the current GPU, or $OPENKERNEL_CUDA_ARCH (e.g. "90") when set."""
    arch = os.environ.get("OPENKERNEL_CUDA_ARCH")
    if not arch:
        import torch

        major, minor = torch.cuda.get_device_capability()
        arch = f"{major}{minor}"
    return f"sm_{arch}a" if arch == "90" else f"sm_{arch}"  # sm_90a: Hopper's wgmma and TMA


def compile_cuda(source: str, flags: Sequence[str] = DEFAULT_CUDA_FLAGS,
                 name: str = "kernel") -> ctypes.CDLL:
    """Compiles CUDA `source` for this GPU with nvcc (runtime linked statically), loads it."""
    return ctypes.CDLL(_build(source, _nvcc(), [*flags, f"-arch={cuda_arch()}"], ".cu", name))


def ptr(tensor: Any) -> ctypes.c_void_p:
    """The data pointer of a contiguous tensor, for passing to a compiled function."""
    if not tensor.is_contiguous():
        raise ValueError("ptr() needs a contiguous tensor")
    return ctypes.c_void_p(tensor.data_ptr())


def stream() -> ctypes.c_void_p:
    """The current CUDA stream (the harness's), to launch on: work elsewhere escapes the timer."""
    import torch

    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
