"""Timing fidelity on a GPU: the evaluator's timing method against Nsight Compute's
gpu__time_duration.sum and triton.testing.do_bench, for short and long kernels.

    python3 bench/timing_fidelity.py            # prints a TSV; runs ncu itself when present
    python3 bench/timing_fidelity.py --one NAME # internal: runs one kernel a few times for ncu

Columns: kernel, ours_us (median of our event method), ours_cv (coefficient of variation of that
median over 5 repeats), idle_us/idle_cv (rested timing, the evaluator's method for kernels of
100 us and more: an idle gap as long as the kernel before each call and a device-wide synchronise
after it, time_block's idle_us), graph_us/graph_cv (our CUDA-graph mode, for kernels under 100 us),
do_bench_us (median mode, with its own L2 flush), ncu_us (gpu__time_duration.sum of every kernel
of one forward, at the clocks the GPU runs without ncu's clock control), and the ratios.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def kernels():
    import torch

    dev = "cuda:0"
    g = torch.Generator(device=dev).manual_seed(0)

    def relu(n):
        x = torch.randn(n, device=dev, generator=g)
        return lambda: torch.relu(x)

    def softmax(r, c):
        x = torch.rand(r, c, device=dev, generator=g)
        return lambda: torch.softmax(x, dim=1)

    def mm(n):
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=g)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=g)
        return lambda: a @ b

    return {
        "relu_1M": lambda: relu(1 << 20),
        "relu_1.6G": lambda: relu(4096 * 393216),
        "softmax_4096x393216": lambda: softmax(4096, 393216),
        "matmul_bf16_1024": lambda: mm(1024),
        "matmul_bf16_8192": lambda: mm(8192),
    }


def ours(fn, repeats=5, idle=0.0):
    """Our event method; idle > 0: with an idle gap of `idle` times the kernel's own time before
    each call (time_block's idle_us), measured from a first pass without it."""
    import torch

    from openkernel_worker import timing

    flush = timing.flush_buffer("cuda:0")
    idle_us = 0.0
    if idle > 0:
        times, _, _ = timing.time_block(lambda: fn(), [[]], 20, "cuda:0", flush, keep_outputs=False)
        idle_us = idle * statistics.median(times)
    medians = []
    for _ in range(repeats):
        timing.time_block(lambda: fn(), [[]], 5, "cuda:0", flush, keep_outputs=False,
                          idle_us=idle_us)
        times, _, _ = timing.time_block(lambda: fn(), [[]], 50, "cuda:0", flush, keep_outputs=False,
                                        idle_us=idle_us)
        medians.append(statistics.median(times))
    del flush
    torch.cuda.empty_cache()
    m = statistics.median(medians)
    return m, statistics.pstdev(medians) / statistics.fmean(medians)


def do_bench(fn):
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1000.0


# ncu prints units as "nsecond"/"usecond" (older) or "ns"/"us" (newer).
NCU_SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
             "second": 1e6, "s": 1e6}
NCU_CALLS = 5


def ncu(name):
    """Device time of one forward by ncu: every kernel launched inside the profiled range (the
    --one run starts the profiler only around NCU_CALLS forwards, after its set-up and warm-up),
    summed, divided by NCU_CALLS; so a forward that launches several kernels counts whole."""
    exe = shutil.which("ncu")
    if exe is None:
        return None
    cmd = [exe, "--metrics", "gpu__time_duration.sum", "--csv", "--clock-control", "none",
           "--profile-from-start", "off", sys.executable, os.path.abspath(__file__), "--one", name]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    values = []
    for line in proc.stdout.splitlines():
        if "gpu__time_duration.sum" in line:
            cells = [c.strip('"') for c in line.split('","')]
            unit, value = cells[-2], cells[-1].strip('"').replace(",", "")
            if unit not in NCU_SCALE:
                sys.stderr.write(f"ncu: unknown unit {unit!r} for {name}\n")
                return None
            try:
                values.append(float(value) * NCU_SCALE[unit])
            except ValueError:
                pass
    if not values:
        sys.stderr.write(f"ncu gave no values for {name}: {proc.stderr[-800:]}\n")
        return None
    return sum(values) / NCU_CALLS


def ours_graph(fn, repeats=5):
    """Our CUDA-graph mode (timing.GraphTimer): 16 forwards per replay, flushed before each."""
    import torch

    from openkernel_worker import timing

    flush = timing.flush_buffer("cuda:0")
    graph = timing.GraphTimer(lambda: fn(), [[] for _ in range(16)], "cuda:0")
    medians = []
    for _ in range(repeats):
        times = [graph.replay(flush)[0] / graph.forwards for _ in range(30)]
        medians.append(statistics.median(times))
    graph.close()
    del flush
    torch.cuda.empty_cache()
    m = statistics.median(medians)
    return m, statistics.pstdev(medians) / statistics.fmean(medians)


def main():
    import torch

    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        fn = kernels()[sys.argv[2]]()
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for _ in range(NCU_CALLS):
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        return
    print("kernel\tours_us\tours_cv\tidle_us\tidle_cv\tgraph_us\tgraph_cv\tdo_bench_us\tncu_us"
          "\tours/ncu\tidle/ncu\tgraph/ncu\tours/do_bench")
    for name, make in kernels().items():
        fn = make()
        m, cv = ours(fn)
        im, icv = ours(fn, idle=1.0) if m >= 100 else (None, None)
        g, gcv = ours_graph(fn) if m < 100 else (None, None)
        db = do_bench(fn)
        del fn
        torch.cuda.empty_cache()
        n = ncu(name)
        f = lambda v, spec: "" if v is None else format(v, spec)
        print("\t".join([name, f(m, ".2f"), f(cv, ".4f"), f(im, ".2f"), f(icv, ".4f"), f(g, ".2f"),
                         f(gcv, ".4f"), f(db, ".2f"), f(n, ".2f"), f(m / n if n else None, ".3f"),
                         f(im / n if n and im else None, ".3f"),
                         f(g / n if n and g else None, ".3f"), f(m / db, ".3f")]), flush=True)


if __name__ == "__main__":
    main()
