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

def now_ns(_clock: Callable[[], int] = time.perf_counter_ns) -> int:
    """The clock bound at import; rebinding this module's names later does not reach it."""
    return _clock()


def tune_allocator() -> None:
    """Same glibc malloc policy in the worker and every candidate process: keep freed memory
    (up to 32 MiB blocks from the heap, no trimming) instead of returning it to the kernel.
    Otherwise each call in a fresh process page-faults its output again (measured here: 45 ms
    instead of 0.6 ms for a 4 MiB tensor), and the side with the warmer allocator wins."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


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


_CYCLES_PER_US: dict[str, float] = {}


def gpu_cycles_per_us(device: str) -> float:
    """Clock cycles per microsecond of torch.cuda._sleep on `device`, measured once."""
    import torch

    if device not in _CYCLES_PER_US:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        start.record()
        torch.cuda._sleep(2_000_000)
        end.record()
        torch.cuda.synchronize(torch.device(device))
        _CYCLES_PER_US[device] = 2_000_000 / max(start.elapsed_time(end) * 1000.0, 1e-3)
    return _CYCLES_PER_US[device]


def time_block(fn: Callable[..., Any], pool: list[list[Any]], n: int, device: str,
               flush: Any, keep_outputs: bool, clock: Callable[[], int] = now_ns,
               idle_us: float = 0.0,
               rest_out: list[float] | None = None) -> tuple[list[float], float, list[Any]]:
    """Runs fn n times over the input pool; returns per-iteration times (us), the synchronised
    wall time of the block (us), and the last output for each pool entry when keep_outputs.

    idle_us > 0 (CUDA only) is "rested" timing: before each call (and its cache flush) the GPU
    spins one thread for this long, so a power-limited kernel starts each timed call from a rested
    clock instead of the sustained-load clock of back-to-back calls; and after each call the whole
    device is synchronised, so work the call left on another stream finishes before the next gap
    and cannot hide in it (it lands in the block's wall time instead). The gaps' own event times
    are appended to rest_out when given, for the worker's wall-time check."""
    import torch

    outputs: list[Any] = [None] * len(pool) if keep_outputs else []
    synchronize(device)
    wall_start = clock()
    times: list[float] = []
    with torch.no_grad():
        if device.startswith("cuda"):
            dev = torch.device(device)
            stream = torch.cuda.current_stream(dev)
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
            idle = int(idle_us * gpu_cycles_per_us(device)) if idle_us > 0 else 0
            rests = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(n)] if idle else []
            for i in range(n):
                inputs = pool[i % len(pool)]
                if idle:
                    rests[i][0].record(stream)
                    torch.cuda._sleep(idle)
                    rests[i][1].record(stream)
                if flush is not None:
                    flush.zero_()
                starts[i].record(stream)
                out = fn(*inputs)
                ends[i].record(stream)
                if idle:
                    torch.cuda.synchronize(dev)
                if keep_outputs:
                    outputs[i % len(pool)] = out
                del out
            torch.cuda.synchronize(dev)
            times = [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]
            if rest_out is not None:
                rest_out.extend(a.elapsed_time(b) * 1000.0 for a, b in rests)
        else:
            for i in range(n):
                inputs = pool[i % len(pool)]
                if flush is not None:
                    flush.fill_(float(i))
                t0 = clock()
                out = fn(*inputs)
                t1 = clock()
                times.append((t1 - t0) / 1000.0)
                if keep_outputs:
                    outputs[i % len(pool)] = out
                del out
    wall_us = (clock() - wall_start) / 1000.0
    return times, wall_us, outputs


def rest_gap_us(median_us: float | None) -> float:
    """The rested gap before each call: as long as the call itself (a 50% duty cycle, which
    brought an 8192^3 bf16 matmul on the H200 from 1.16x to 1.003x of ncu's time), at most
    REST_MAX_US so a slow reference does not eat the timing budget."""
    if not median_us or median_us <= 0:
        return 0.0
    return float(min(median_us, REST_MAX_US))


REST_MAX_US = 20_000.0


def descendants(root: int) -> list[int]:
    """root and every process below it (the candidate may run under bwrap's init)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_cpu_us(pids: list[int]) -> float:
    return sum(process_cpu_us(p) or 0.0 for p in pids)


def process_cpu_us(pid: int) -> float | None:
    """CPU time of a process and all its threads, from the kernel's scheduler statistics
    (nanoseconds; the 10 ms ticks of /proc/PID/stat are too coarse), falling back to stat. The
    kernel's account: the process cannot falsify it and machine load does not inflate it."""
    total, found = 0, False
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
                    found = True
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        return None
    if found:
        return total / 1000.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) * 1e6 / os.sysconf("SC_CLK_TCK")


def flush_cpu_us(flush: Any, n: int = 5) -> float:
    """Median CPU time of one CPU cache flush in this process (all threads)."""
    if flush is None:
        return 0.0
    samples = []
    for i in range(n):
        t0 = time.process_time()
        flush.fill_(float(i))
        samples.append((time.process_time() - t0) * 1e6)
    return statistics.median(samples)


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


class GraphTimer:
    """CUDA-graph timing for microsecond kernels: one graph holds one forward per pool entry (each
    entry its own input buffers), so a replay runs len(pool) forwards back to back with no CPU
    launch cost between them. The caller refreshes the pool's contents in place before each
    replay, so every forward in every replay sees inputs it has never seen; `outputs` are the
    tensors the captured forwards returned, which every replay overwrites.

    Warm-up and capture run on a blocking stream (capture.py), so a forward that launches work
    on the legacy default stream fails the capture instead of escaping it. Raises
    capture.CaptureFailed, saying why, when fn cannot be captured (work outside the stream it was
    called on, host syncs, side streams left unjoined, ...). `note` says when no blocking stream
    could be had (capture then runs on torch's own stream, as graphs usually are)."""

    def __init__(self, fn: Callable[..., Any], pool: list[list[Any]], device: str,
                 warmup: int = 2) -> None:
        import torch

        from . import capture

        self.device = device
        self.forwards = len(pool)
        dev = torch.device(device)
        stream, api, self.note = capture.blocking_stream(dev)
        self.capture_stream = "blocking" if stream is not None else "torch"
        side = stream if stream is not None else torch.cuda.Stream(device=dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.no_grad(), torch.cuda.stream(side):  # lazy initialisation off the capture
            for _ in range(warmup):
                for inputs in pool:
                    fn(*inputs)
        torch.cuda.current_stream(dev).wait_stream(side)
        torch.cuda.synchronize(dev)
        self.graph = torch.cuda.CUDAGraph()
        self.outputs: list[Any] = capture.capture_forwards(self.graph, fn, pool, stream, api, dev)
        torch.cuda.synchronize(dev)
        self.start = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def replay(self, flush: Any, clock: Callable[[], int] = now_ns) -> tuple[float, float]:
        """Flushes the cache, replays once between two events; returns the replay's device time
        and the synchronised wall time, both in microseconds (for all forwards together)."""
        import torch

        dev = torch.device(self.device)
        torch.cuda.synchronize(dev)
        wall_start = clock()
        stream = torch.cuda.current_stream(dev)
        if flush is not None:
            flush.zero_()
        self.start.record(stream)
        self.graph.replay()
        self.end.record(stream)
        torch.cuda.synchronize(dev)
        return self.start.elapsed_time(self.end) * 1000.0, (clock() - wall_start) / 1000.0

    def close(self) -> None:
        self.outputs = []
        self.graph.reset()


def graph_pool_size(per_set_bytes: int, free_bytes: float, cap: int = 16) -> int:
    """Forwards per graph: up to `cap`, their inputs and outputs within 8% of free memory."""
    return int(max(1, min(cap, (free_bytes * 0.08) // (2 * max(per_set_bytes, 1)))))
