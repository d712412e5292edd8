"""`device_info`: the device's specifications, for prompts and for the builtin generator's choices.

Static properties come from torch (CUDA) or /proc and /sys (CPU); the copy bandwidth is measured
(roofline.ceilings, cached per worker) and the peak FLOP rate is roofline's deliberately generous
table value, so both say what the evaluator's physical floor assumes.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .device import cpu_name
from .problem import BadInput
from .roofline import ceilings

# cudaDeviceProp fields torch exposes (which ones depends on the torch version) -> our key.
CUDA_PROPERTIES = {
    "multi_processor_count": "sm_count",
    "total_memory": "memory_bytes",
    "L2_cache_size": "l2_bytes",
    "shared_memory_per_block": "shared_memory_per_block",
    "shared_memory_per_block_optin": "shared_memory_per_block_optin",
    "shared_memory_per_multiprocessor": "shared_memory_per_sm",
    "regs_per_multiprocessor": "registers_per_sm",
    "max_threads_per_multi_processor": "max_threads_per_sm",
    "max_threads_per_block": "max_threads_per_block",
    "warp_size": "warp_size",
    "clock_rate": "clock_khz",
    "memory_clock_rate": "memory_clock_khz",
    "memory_bus_width": "memory_bus_width_bits",
}
# CPU flags worth telling a kernel writer about.
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16",
             "avx512_vnni", "amx_tile", "amx_bf16")


def _cuda_index(device: str) -> int:
    """`cuda` or `cuda:N` -> N, checked against this machine."""
    import torch

    from .options import EnvironmentProblem

    text = device.split(":", 1)[1] if ":" in device else "0"
    if not text.isdigit():
        raise BadInput(f"device {device!r} is not cpu, cuda or cuda:N")
    if not torch.cuda.is_available():
        raise EnvironmentProblem(f"device {device} was asked for but CUDA is not available "
                                 f"(torch {torch.__version__})")
    index = int(text)
    if index >= torch.cuda.device_count():
        raise BadInput(f"device {device} does not exist (this machine has "
                       f"{torch.cuda.device_count()} GPU(s))")
    return index


def cuda_info(device: str) -> dict[str, Any]:
    import torch

    index = _cuda_index(device)
    device = f"cuda:{index}"
    p = torch.cuda.get_device_properties(index)
    info: dict[str, Any] = {"device": device, "kind": "cuda", "name": p.name,
                            "compute_capability": f"{p.major}.{p.minor}"}
    for attr, key in CUDA_PROPERTIES.items():
        value = getattr(p, attr, None)
        if value is not None:
            info[key] = int(value)
    if info.get("memory_clock_khz") and info.get("memory_bus_width_bits"):
        # Double data rate: two transfers per clock over the whole bus.
        info["theoretical_bandwidth"] = (2 * info["memory_clock_khz"] * 1e3
                                         * info["memory_bus_width_bits"] / 8)
    ceil = ceilings(device)
    info["measured_bandwidth"] = ceil["bandwidth"]
    info["peak_flops"] = ceil["peak_flops"]
    info["peak_flops_note"] = ("dense peak of the fastest format (fp8 tensor cores on Hopper), "
                               "an upper bound, from a table by device name")
    return info


def _cpu_flags() -> list[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    present = set(line.split(":", 1)[1].split())
                    return [flag for flag in CPU_FLAGS if flag in present]
    except OSError:
        pass
    return []


def _cpu_caches() -> dict[str, int]:
    """Cache sizes of cpu0 by level and type (l1d, l1i, l2, l3) in bytes, from sysfs."""
    caches: dict[str, int] = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        suffix = {"Data": "d", "Instruction": "i"}.get(kind, "")
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        digits = size.rstrip("KMG")
        if digits.isdigit():
            caches[f"l{level}{suffix}_bytes"] = int(digits) * scale
    return caches


def cpu_info() -> dict[str, Any]:
    import torch

    ceil = ceilings("cpu")
    return {"device": "cpu", "kind": "cpu", "name": cpu_name(), "cores": os.cpu_count(),
            "threads": torch.get_num_threads(), "flags": _cpu_flags(), **_cpu_caches(),
            "measured_bandwidth": ceil["bandwidth"], "peak_flops": ceil["peak_flops"],
            "peak_flops_note": ("64 fp32 FLOP per cycle per core at 4 GHz: an upper bound, "
                                "not a measurement")}


def device_info(device: str) -> dict[str, Any]:
    """The `device_info` op: {"device": "cpu" | "cuda" | "cuda:N"}."""
    if device == "cpu":
        return cpu_info()
    if device == "cuda" or device.startswith("cuda:"):
        return cuda_info(device)
    raise BadInput(f"device {device!r} is not cpu, cuda or cuda:N")
