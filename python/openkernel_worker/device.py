"""What the worker knows about its device and software: reported in hello and in every result."""
from __future__ import annotations

import os
import platform
import sys
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
    return {"python_executable": sys.executable, "versions": versions(with_triton=False),
            "cuda_available": bool(gpus), "gpus": gpus, "cpu": cpu_name(),
            "cores": os.cpu_count()}
