"""Timing fidelity on a GPU: the evaluator's timing method against Nsight Compute's
gpu__time_duration.sum and triton.testing.do_bench, for short and long kernels.

    python3 bench/timing_fidelity.py            # prints a TSV; runs ncu itself when present
    python3 bench/timing_fidelity.py --one NAME # internal: runs one kernel a few times for ncu

Columns: kernel, ours_us (median of our method), ours_cv (coefficient of variation of that median
over 5 repeats), do_bench_us (median mode, with its own L2 flush), ncu_us (median of
gpu__time_duration.sum over the profiled launches), ours/ncu, ours/do_bench.
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


def ours(fn, repeats=5):
    import torch

    from openkernel_worker import timing

    flush = timing.flush_buffer("cuda:0")
    medians = []
    for _ in range(repeats):
        timing.time_block(lambda: fn(), [[]], 5, "cuda:0", flush, keep_outputs=False)
        times, _, _ = timing.time_block(lambda: fn(), [[]], 50, "cuda:0", flush, keep_outputs=False)
        medians.append(statistics.median(times))
    del flush
    torch.cuda.empty_cache()
    m = statistics.median(medians)
    return m, statistics.pstdev(medians) / statistics.fmean(medians)


def do_bench(fn):
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") * 1000.0


def ncu(name):
    exe = shutil.which("ncu")
    if exe is None:
        return None
    cmd = [exe, "--metrics", "gpu__time_duration.sum", "--csv", "--clock-control", "none",
           "--launch-skip", "3", "--launch-count", "6", sys.executable, os.path.abspath(__file__),
           "--one", name]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    values = []
    for line in proc.stdout.splitlines():
        if "gpu__time_duration.sum" in line:
            cells = [c.strip('"') for c in line.split('","')]
            unit, value = cells[-2], cells[-1].strip('"').replace(",", "")
            scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit, 1.0)
            try:
                values.append(float(value) * scale)
            except ValueError:
                pass
    if not values:
        sys.stderr.write(f"ncu gave no values for {name}: {proc.stderr[-800:]}\n")
        return None
    return statistics.median(values)


def main():
    import torch

    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        fn = kernels()[sys.argv[2]]()
        for _ in range(13):
            fn()
        torch.cuda.synchronize()
        return
    print("kernel\tours_us\tours_cv\tdo_bench_us\tncu_us\tours/ncu\tours/do_bench")
    for name, make in kernels().items():
        fn = make()
        m, cv = ours(fn)
        db = do_bench(fn)
        del fn
        torch.cuda.empty_cache()
        n = ncu(name)
        ratio = f"{m / n:.3f}" if n else ""
        print(f"{name}\t{m:.2f}\t{cv:.4f}\t{db:.2f}\t{'' if n is None else f'{n:.2f}'}\t{ratio}"
              f"\t{m / db:.3f}", flush=True)


if __name__ == "__main__":
    main()
