"""native.py: the g++ compile path for CPU kernels, its cache and its errors."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import pytest
import torch

from openkernel_worker import native

SOURCE = r"""
#include <cstdint>
extern "C" void add_one(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] + 1.0f;
}
extern "C" int answer() { return 42; }
"""

FAST = ("-O0", "-shared", "-fPIC", "-std=c++17")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> str:
    path = str(tmp_path / "native-cache")
    monkeypatch.setenv("OPENKERNEL_NATIVE_CACHE", path)
    return path


def compiles(monkeypatch) -> list[list[str]]:
    """Records every compiler invocation that produces an output file."""
    seen: list[list[str]] = []
    real = subprocess.run

    def spy(args, *a, **k):
        if "-o" in args:
            seen.append(list(args))
        return real(args, *a, **k)

    monkeypatch.setattr(native.subprocess, "run", spy)
    return seen


def test_compiles_and_calls(monkeypatch) -> None:
    lib = native.compile_cpp(SOURCE, flags=FAST, name="addone")
    assert lib.answer() == 42
    x = torch.arange(5, dtype=torch.float32)
    y = torch.empty_like(x)
    lib.add_one(native.ptr(x), native.ptr(y), ctypes.c_int64(x.numel()))
    assert torch.equal(y, x + 1)


def test_default_flags_compile(monkeypatch) -> None:
    lib = native.compile_cpp(SOURCE)
    assert lib.answer() == 42


def test_second_compile_hits_the_cache(monkeypatch, cache: str) -> None:
    seen = compiles(monkeypatch)
    native.compile_cpp(SOURCE, flags=FAST, name="cached")
    native.compile_cpp(SOURCE, flags=FAST, name="cached")
    assert len(seen) == 1
    libs = [f for f in os.listdir(cache) if f.endswith(".so")]
    assert len(libs) == 1 and libs[0].startswith("cached-")
    assert not [f for f in os.listdir(cache) if f.endswith(".tmp")]


def test_cache_key_covers_source_and_flags(monkeypatch) -> None:
    seen = compiles(monkeypatch)
    native.compile_cpp(SOURCE, flags=FAST)
    native.compile_cpp(SOURCE + "\n// changed\n", flags=FAST)
    native.compile_cpp(SOURCE, flags=FAST + ("-DX=1",))
    assert len(seen) == 3


def test_bad_source_raises_compile_error_with_diagnostics() -> None:
    with pytest.raises(native.CompileError) as info:
        native.compile_cpp("extern \"C\" int f() { return undefined_name; }", flags=FAST)
    message = str(info.value)
    assert "undefined_name" in message
    assert "error" in message


def test_failed_compile_leaves_no_library(cache: str) -> None:
    with pytest.raises(native.CompileError):
        native.compile_cpp("this is not C++", flags=FAST)
    assert not [f for f in os.listdir(cache) if f.endswith(".so")]


def test_missing_compiler_is_reported(monkeypatch) -> None:
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    with pytest.raises((native.CompileError, OSError)):
        native.compile_cpp(SOURCE, flags=FAST)


def test_ptr_needs_contiguous_tensor() -> None:
    x = torch.zeros(3, 4)
    assert native.ptr(x).value == x.data_ptr()
    with pytest.raises(ValueError, match="contiguous"):
        native.ptr(x.t())


NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine: CUDA compile path skipped")
def test_compile_cuda_builds_a_cached_library_without_a_gpu(tmp_path, monkeypatch) -> None:
    # Building needs only nvcc; loading and launching need a GPU (tests/gpu/candidates/relu_nvcc.py).
    from openkernel_worker import native

    monkeypatch.setenv("OPENKERNEL_NATIVE_CACHE", str(tmp_path))
    monkeypatch.setenv("OPENKERNEL_CUDA_ARCH", "90")
    monkeypatch.setenv("NVCC", NVCC)
    src = ('#include <cuda_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n'
           'extern "C" int launch(float* x, cudaStream_t s) { k<<<1, 32, 0, s>>>(x); return 0; }\n')
    flags = [*native.DEFAULT_CUDA_FLAGS, f"-arch={native.cuda_arch()}"]
    path = native._build(src, NVCC, flags, ".cu", "probe")
    assert os.path.getsize(path) > 0 and path.endswith(".so")
    assert native._build(src, NVCC, flags, ".cu", "probe") == path  # cached
    with pytest.raises(native.CompileError, match="error"):
        native._build(src.replace("1.f;", "1.f"), NVCC, flags, ".cu", "probe")
