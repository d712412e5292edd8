"""Timing of a forward call: CUDA events on the current stream (GPU) or a monotonic clock (CPU).

The clock is captured when this module is imported, before any candidate code runs, so a candidate
that patches time.perf_counter_ns afterwards does not change what we read. Caches are flushed
between iterations by writing a buffer of twice the last-level cache. Every measurement is also
bracketed by a synchronising wall-clock reading, so the worker can cross-check the events.
"""
from __future__ import annotations

import math
import os
import statistics
import time
from typing import Any, Callable

_now_ns: Callable[[], int] = time.perf_counter_ns


def now_ns() -> int:
    return _now_ns()


def stats(samples_us: list[float]) -> dict[str, float | int | None]:
    n = len(samples_us)
    if n == 0:
        return {"median": None, "mean": None, "stderr": None, "min": None, "n": 0}
    mean = statistics.fmean(samples_us)
    stderr = statistics.stdev(samples_us) / math.sqrt(n) if n > 1 else 0.0
    return {"median": statistics.median(samples_us), "mean": mean, "stderr": stderr,
            "min": min(samples_us), "n": n}


def relative_stderr(samples_us: list[float]) -> float:
    if len(samples_us) < 2:
        return math.inf
    mean = statistics.fmean(samples_us)
    return (statistics.stdev(samples_us) / math.sqrt(len(samples_us))) / mean if mean > 0 else 0.0


def cpu_llc_bytes() -> int:
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                with open(os.path.join(base, entry, "size")) as f:
                    text = f.read().strip()
                value = int(text.rstrip("KMG"))
                value *= {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
                best = max(best, value)
            except (OSError, ValueError):
                continue
    except OSError:
        pass
    return best or (32 << 20)


def flush_buffer(device: str) -> Any:
    """A buffer twice the size of the last-level cache on `device`."""
    import torch

    if device.startswith("cuda"):
        l2 = getattr(torch.cuda.get_device_properties(torch.device(device)), "L2_cache_size", 0)
        nbytes = 2 * (l2 or (64 << 20))
    else:
        nbytes = 2 * cpu_llc_bytes()
    return torch.empty(nbytes // 4, dtype=torch.float32, device=device)


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def time_block(fn: Callable[..., Any], pool: list[list[Any]], n: int, device: str,
               flush: Any, keep_outputs: bool) -> tuple[list[float], float, list[Any]]:
    """Runs fn n times over the input pool; returns per-iteration times (us), the synchronised
    wall time of the block (us), and the last output for each pool entry when keep_outputs."""
    import torch

    outputs: list[Any] = [None] * len(pool) if keep_outputs else []
    synchronize(device)
    wall_start = now_ns()
    times: list[float] = []
    with torch.no_grad():
        if device.startswith("cuda"):
            stream = torch.cuda.current_stream(torch.device(device))
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            for i in range(n):
                inputs = pool[i % len(pool)]
                if flush is not None:
                    flush.zero_()
                starts[i].record(stream)
                out = fn(*inputs)
                ends[i].record(stream)
                if keep_outputs:
                    outputs[i % len(pool)] = out
                del out
            torch.cuda.synchronize(torch.device(device))
            times = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]
        else:
            for i in range(n):
                inputs = pool[i % len(pool)]
                if flush is not None:
                    flush.fill_(float(i))
                t0 = now_ns()
                out = fn(*inputs)
                t1 = now_ns()
                times.append((t1 - t0) / 1000.0)
                if keep_outputs:
                    outputs[i % len(pool)] = out
                del out
    wall_us = (now_ns() - wall_start) / 1000.0
    return times, wall_us, outputs


def flush_cost_us(device: str, flush: Any, n: int = 5) -> float:
    """Median time of one cache flush, to subtract when cross-checking block wall times."""
    if flush is None:
        return 0.0
    samples = []
    for i in range(n):
        synchronize(device)
        t0 = now_ns()
        if device.startswith("cuda"):
            flush.zero_()
        else:
            flush.fill_(float(i))
        synchronize(device)
        samples.append((now_ns() - t0) / 1000.0)
    return statistics.median(samples)
