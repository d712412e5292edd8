"""The physical floor: no kernel can move its unavoidable bytes faster than the device's peak
memory bandwidth, nor do its FLOPs faster than the device's peak FLOP rate. A candidate timed below
that floor did not do the work while timed (or lied about the time).

Two bandwidths: the measured copy bandwidth places a kernel on the roofline (its fraction of the
speed of light, which the search reads), and the rejecting floor takes the larger of that copy and
the part's peak DRAM bandwidth (PEAK_BANDWIDTH), because a good kernel beats torch's copy: on an
H200 the copy measured 2.86 TB/s and an honest row softmax moved its bytes at 3.3 TB/s, which the
copy-based floor had rejected. Devices outside the table (and the CPU) get the copy x
UNKNOWN_PEAK_MARGIN, so the floor stays a bound, not an estimate.

Bandwidth is measured once per worker and device (a large device-to-device copy, bytes read plus
written) and, given a cache directory, kept on disk for later workers behind a spot check
(bandwidth_cache.py); peak FLOP rates come from a table and are deliberately generous (the
fastest tensor-core rate of the part), so the floor only fires on impossible timings.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

from .compare import flatten

_CACHE: dict[str, dict[str, Any]] = {}  # per worker: json of the device key -> ceilings

# Dense peak FLOP/s of the fastest format (fp8 tensor cores on Hopper), by device-name fragment.
PEAK_FLOPS = {"H200": 1.98e15, "H100": 1.98e15, "A100": 6.24e14, "L40S": 7.33e14, "RTX 6000": 7.3e14,
              "V100": 1.25e14, "L4": 4.85e14}

# Peak DRAM bandwidth in bytes/s by device-name fragment (torch.cuda.get_device_name), each
# variant of a part under the name its driver reports: a generic fragment would bound a slower
# variant by a faster one's peak and loosen its floor (an H100 PCIe under H100 NVL's 3.9 TB/s
# would let a kernel skip half its traffic). First match wins: variants before their family,
# "H200" before "H100", "L40S" and "L40" before "L4", "RTX 6000 Ada" before "RTX 6000".
PEAK_BANDWIDTH = {"H200": 4.8e12, "H100 NVL": 3.9e12, "H100 PCIe": 2.0e12, "H100": 3.35e12,
                  "A100-PCIE-40GB": 1.555e12, "A100-SXM4-40GB": 1.555e12, "A100": 2.04e12,
                  "L40S": 8.64e11, "L40": 8.64e11, "RTX 6000 Ada": 9.6e11, "RTX 6000": 6.72e11,
                  "V100": 9.0e11, "L4": 3.0e11}
UNKNOWN_PEAK_MARGIN = 1.6


def floor_bandwidth(measured: float, device_name: str | None) -> tuple[float, str]:
    """The bandwidth the rejecting floor uses and where it comes from ("peak" or "copy x 1.6")."""
    peak = next((v for k, v in PEAK_BANDWIDTH.items() if device_name and k in device_name), None)
    if peak is None:
        return measured * UNKNOWN_PEAK_MARGIN, f"copy x {UNKNOWN_PEAK_MARGIN:g}"
    return (peak, "peak") if peak >= measured else (measured, "copy")


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


def ceilings(device: str, cache_dir: str | None = None,
             settle: Callable[[], Any] | None = None) -> dict[str, Any]:
    """{"bandwidth": bytes/s (the copy), "floor_bandwidth": bytes/s and "floor_bandwidth_source"
    (floor_bandwidth()), "peak_flops": FLOP/s, "bandwidth_source", "bandwidth_s",
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
                                               lambda: _spot(device), settle)
    else:
        if settle is not None:
            settle()
        got = {"bandwidth": _bandwidth(device), "source": "measured"}
    name = None
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(torch.device(device))
        peak = next((v for k, v in PEAK_FLOPS.items() if k in name), 2e15)
    else:
        # 64 fp32 FLOP per cycle per core (two AVX-512 FMAs) at 4 GHz: above any real CPU core.
        peak = (os.cpu_count() or 1) * 64 * 4e9
    floor_bw, floor_source = floor_bandwidth(got["bandwidth"], name)
    out: dict[str, Any] = {"bandwidth": got["bandwidth"], "floor_bandwidth": floor_bw,
                           "floor_bandwidth_source": floor_source, "peak_flops": peak,
                           "bandwidth_source": got["source"],
                           "bandwidth_s": round(time.monotonic() - t0, 4)}
    if got.get("note"):
        out["bandwidth_note"] = got["note"]
    _CACHE[mem_key] = {k: out[k] for k in ("bandwidth", "floor_bandwidth",
                                           "floor_bandwidth_source", "peak_flops")}
    return out


def unavoidable_bytes(model: Any, inputs: list[Any], outputs: Any) -> int:
    import torch

    total = sum(v.numel() * v.element_size() for v in inputs if isinstance(v, torch.Tensor))
    total += sum(v.numel() * v.element_size() for v in flatten(outputs) if isinstance(v, torch.Tensor))
    if isinstance(model, torch.nn.Module):
        total += sum(p.numel() * p.element_size() for p in model.parameters())
    return int(total)


def floor_us(flops: float, nbytes: float, ceil: dict[str, Any], bandwidth: str = "bandwidth"
             ) -> float:
    """The roofline's time for the work: with `bandwidth` "bandwidth" the copy's (the speed of
    light the search reads), with "floor_bandwidth" the rejecting floor's."""
    return max(nbytes / ceil.get(bandwidth, ceil["bandwidth"]), flops / ceil["peak_flops"]) * 1e6
