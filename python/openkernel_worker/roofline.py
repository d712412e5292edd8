"""The physical floor: no kernel can move its unavoidable bytes faster than the device's measured
copy bandwidth, nor do its FLOPs faster than the device's peak. A candidate timed below that floor
did not do the work while timed (or lied about the time).

Bandwidth is measured once per worker and device (a large device-to-device copy, bytes read plus
written) and, given a cache directory, kept on disk for later workers behind a spot check
(bandwidth_cache.py); peak FLOP rates come from a table and are deliberately generous (the
fastest tensor-core rate of the part), so the floor only fires on impossible timings.
"""
from __future__ import annotations

import os
import time
from typing import Any

from .compare import flatten

_CACHE: dict[str, dict[str, Any]] = {}  # per worker: json of the device key -> ceilings

# Dense peak FLOP/s of the fastest format (fp8 tensor cores on Hopper), by device-name fragment.
PEAK_FLOPS = {"H200": 1.98e15, "H100": 1.98e15, "A100": 6.24e14, "L40S": 7.33e14, "RTX 6000": 7.3e14,
              "V100": 1.25e14, "L4": 4.85e14}


def _bandwidth(device: str) -> float:
    import torch

    nbytes = (1 << 30) if device.startswith("cuda") else (256 << 20)
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    best = float("inf")
    for _ in range(5):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    del src, dst
    return 2 * nbytes / best


def _spot(device: str) -> float:
    """A short bandwidth check (bytes/s) to compare with the one stored beside a full
    measurement: a smaller copy, repeated; on a GPU ten copies per synchronised sample, so the
    sample is long enough for the host's clock."""
    import torch

    cuda = device.startswith("cuda")
    nbytes = (256 << 20) if cuda else (64 << 20)
    per_sample, samples = (10, 5) if cuda else (1, 30)
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    dst.copy_(src)
    best = float("inf")
    for _ in range(samples):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(per_sample):
            dst.copy_(src)
        if cuda:
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / per_sample)
    del src, dst
    return 2 * nbytes / best


def ceilings(device: str, cache_dir: str | None = None) -> dict[str, Any]:
    """{"bandwidth": bytes/s, "peak_flops": FLOP/s, "bandwidth_source", "bandwidth_s",
    "bandwidth_note"?}: measured once per worker and device key, or with `cache_dir` taken from
    the disk cache after a spot check (bandwidth_cache.py). bandwidth_source says how this
    worker got it ("measured", "cached"); a later call returns the same numbers with source
    "worker" and bandwidth_s 0."""
    import json

    import torch

    from . import bandwidth_cache

    key = bandwidth_cache.device_key(device)
    mem_key = json.dumps(key, sort_keys=True)
    if mem_key in _CACHE:
        return {**_CACHE[mem_key], "bandwidth_source": "worker", "bandwidth_s": 0.0}
    t0 = time.monotonic()
    if cache_dir:
        got = bandwidth_cache.cached_bandwidth(cache_dir, key, lambda: _bandwidth(device),
                                               lambda: _spot(device))
    else:
        got = {"bandwidth": _bandwidth(device), "source": "measured"}
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(torch.device(device))
        peak = next((v for k, v in PEAK_FLOPS.items() if k in name), 2e15)
    else:
        # 64 fp32 FLOP per cycle per core (two AVX-512 FMAs) at 4 GHz: above any real CPU core.
        peak = (os.cpu_count() or 1) * 64 * 4e9
    out: dict[str, Any] = {"bandwidth": got["bandwidth"], "peak_flops": peak,
                           "bandwidth_source": got["source"],
                           "bandwidth_s": round(time.monotonic() - t0, 4)}
    if got.get("note"):
        out["bandwidth_note"] = got["note"]
    _CACHE[mem_key] = {k: out[k] for k in ("bandwidth", "peak_flops")}
    return out


def unavoidable_bytes(model: Any, inputs: list[Any], outputs: Any) -> int:
    import torch

    total = sum(v.numel() * v.element_size() for v in inputs if isinstance(v, torch.Tensor))
    total += sum(v.numel() * v.element_size() for v in flatten(outputs) if isinstance(v, torch.Tensor))
    if isinstance(model, torch.nn.Module):
        total += sum(p.numel() * p.element_size() for p in model.parameters())
    return int(total)


def floor_us(flops: float, nbytes: float, ceil: dict[str, float]) -> float:
    return max(nbytes / ceil["bandwidth"], flops / ceil["peak_flops"]) * 1e6
