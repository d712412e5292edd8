"""A fast compile path for CPU kernels written in C++: g++ into a shared library, called via ctypes.

KernelBench's load_inline spends ~28 s per compile here, almost all of it parsing torch's headers.
Kernels that take raw pointers need none of that: `compile_cpp(source)` builds a plain shared
library in well under a second and caches it by the hash of source, flags and compiler.

    lib = compile_cpp(SOURCE)           # SOURCE has extern "C" functions
    lib.relu(ptr(x), ptr(y), x.numel())
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
from typing import Any, Sequence

DEFAULT_FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17")


class CompileError(RuntimeError):
    """The C++ compiler rejected the source; the message holds its diagnostics."""


def _compiler() -> str:
    return os.environ.get("CXX", "g++")


def _compiler_id(cxx: str) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True,
                              check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        return cxx


def compile_cpp(source: str, flags: Sequence[str] = DEFAULT_FLAGS, name: str = "kernel") -> ctypes.CDLL:
    """Compiles `source` into a shared library (cached) and loads it."""
    cxx = _compiler()
    cache = os.environ.get("OPENKERNEL_NATIVE_CACHE") or os.path.join(
        tempfile.gettempdir(), "openkernel-cache", "native")
    os.makedirs(cache, exist_ok=True)
    key = hashlib.sha256("\0".join([source, *flags, _compiler_id(cxx)]).encode()).hexdigest()[:24]
    lib_path = os.path.join(cache, f"{name}-{key}.so")
    if not os.path.exists(lib_path):
        # Unique temporaries: concurrent candidates (each maybe in its own PID namespace, where
        # pids repeat) may build the same source at once; the last rename wins, all are equal.
        fd, src_path = tempfile.mkstemp(prefix=f"{name}-{key}.", suffix=".cpp", dir=cache)
        with os.fdopen(fd, "w") as f:
            f.write(source)
        tmp = src_path[:-4] + ".so.tmp"
        try:
            proc = subprocess.run([cxx, *flags, src_path, "-o", tmp], capture_output=True,
                                  text=True, check=False)
        except OSError as e:
            raise CompileError(f"cannot run the C++ compiler {cxx!r}: {e.strerror}") from None
        finally:
            os.unlink(src_path)
        if proc.returncode != 0:
            raise CompileError(f"{cxx} failed:\n{proc.stderr[-4000:]}")
        os.replace(tmp, lib_path)
    return ctypes.CDLL(lib_path)


def ptr(tensor: Any) -> ctypes.c_void_p:
    """The data pointer of a contiguous tensor, for passing to a compiled function."""
    if not tensor.is_contiguous():
        raise ValueError("ptr() needs a contiguous tensor")
    return ctypes.c_void_p(tensor.data_ptr())
