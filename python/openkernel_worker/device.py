"""What the worker knows about its device and software: reported in hello and in every result."""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from importlib import metadata
from typing import Any


def versions(with_triton: bool) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "cuda": getattr(torch.version, "cuda", None)}
    try:
        import numpy

        out["numpy"] = numpy.__version__
    except ImportError:
        pass
    if with_triton:
        try:
            import triton

            out["triton"] = triton.__version__
        except Exception:  # noqa: BLE001 - absent or broken triton is just reported
            out["triton"] = None
    return out


def nvidia_driver_version(proc_text: str | None = None) -> str | None:
    """The NVIDIA kernel driver's version (e.g. 570.86.15) from /proc/driver/nvidia/version."""
    if proc_text is None:
        try:
            with open("/proc/driver/nvidia/version") as f:
                proc_text = f.read()
        except OSError:
            return None
    m = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)", proc_text)
    return m.group(1) if m else None


def nvcc_version(output: str | None = None) -> str | None:
    """nvcc's version (e.g. 12.4.131) from `nvcc --version`: the nvcc on PATH, else CUDA_HOME's."""
    if output is None:
        nvcc = shutil.which("nvcc") or os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"),
                                                    "bin", "nvcc")
        try:
            output = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                                    timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return None
    m = re.search(r"release [\d.]+, V(\d+(?:\.\d+)+)", output) or re.search(
        r"release (\d+(?:\.\d+)+)", output)
    return m.group(1) if m else None


def toolchain_versions() -> dict[str, Any]:
    """What the trace schema records beside torch (docs/traces.md): triton's installed version
    (read from its metadata, not imported), the NVIDIA driver and nvcc; None where absent."""
    try:
        triton: str | None = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton = None
    return {"triton": triton, "driver": nvidia_driver_version(), "nvcc": nvcc_version()}


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def describe(device: str) -> dict[str, Any]:
    import torch

    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(torch.device(device))
        return {
            "device": device, "kind": "cuda", "name": p.name,
            "sms": p.multi_processor_count, "memory_bytes": p.total_memory,
            "l2_bytes": getattr(p, "L2_cache_size", None),
            "capability": f"{p.major}.{p.minor}",
            "shared_memory_per_block": getattr(p, "shared_memory_per_block_optin", None),
        }
    return {"device": "cpu", "kind": "cpu", "name": cpu_name(), "cores": os.cpu_count(),
            "threads": torch.get_num_threads()}


def hello() -> dict[str, Any]:
    import torch

    gpus = []
    if torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {"python_executable": sys.executable,
            "versions": {**versions(with_triton=False), **toolchain_versions()},
            "cuda_available": bool(gpus), "gpus": gpus, "cpu": cpu_name(),
            "cores": os.cpu_count()}
