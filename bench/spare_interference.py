"""Does a spare candidate process starting up disturb a measurement taken meanwhile? (GPU only.)

    python3 bench/spare_interference.py [--rounds 3] [--json OUT.json]

The worker starts candidate processes ahead of time (evaluate.SparePool) and, by default, lets
only their stage without device work (imports) overlap its timing. This measures what each stage
would do to the evaluator's own timing (timing.time_block, L2 flush, CUDA events) of a long and a
short kernel: blocks are timed back to back while (a) nothing else runs, (b) another process runs
the "cpu" warm stage (torch's and Triton's imports), (c) another process runs the "gpu" stage (CUDA
context, a first kernel), (d) another process runs the "profiler" stage (the profiler's first
start).
Prints, per kernel and condition, the median
and the 90th percentile of the per-call times and their ratios to the quiet condition's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def kernels():
    import torch

    big = torch.randn(1 << 30, device="cuda")  # 4 GiB: about 3 ms for a ReLU on an H200
    small = torch.randn(1 << 20, device="cuda")
    return {"relu_4GiB": lambda: torch.relu(big), "relu_4MiB": lambda: torch.relu(small)}


def sample(fn, flush, seconds: float) -> list[float]:
    """Per-call times (us) from blocks of time_block, for about `seconds`."""
    from openkernel_worker import timing

    out: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        times, _, _ = timing.time_block(fn, [[]], 20, "cuda:0", flush, keep_outputs=False)
        out.extend(times)
    return out


def during(stage: str, fn, flush) -> tuple[list[float], float]:
    """Samples taken while a new candidate process runs `stage` ("cpu": imports; "gpu": the
    CUDA context and a first kernel; "profiler": the profiler's first start, after "gpu"
    finished unmeasured); and how long the stage took."""
    from openkernel_worker import evaluate as ev

    scratch = tempfile.mkdtemp(prefix="interference-")
    opts = ev.Options(reference="", candidate="", no_sandbox=True)
    proc = ev.CandidateProcess(scratch, dict(os.environ), opts, "cuda:0", gpu_later=True,
                               profiler_anytime=True)

    def failed() -> None:
        if proc._failed:
            raise SystemExit(f"spare_interference: the process did not start: {proc._failed}")

    def pending() -> list[str]:
        proc.cpu_ready()  # reads whatever warm replies have come
        failed()
        return proc._pending

    try:
        if stage != "cpu":
            while not proc.cpu_ready():
                failed()
                time.sleep(0.02)
            proc.start_gpu()
            if stage == "profiler":
                while "gpu" in pending():
                    time.sleep(0.005)
        t0 = time.monotonic()
        out: list[float] = []
        while True:
            out.extend(sample(fn, flush, 0.05))
            if stage not in pending():
                break
        return out, time.monotonic() - t0
    finally:
        ev.discard(proc)


def summary(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"n": len(xs), "median": statistics.median(xs), "p90": xs[int(0.9 * (len(xs) - 1))],
            "max": xs[-1]}


def main() -> int:
    import torch

    from openkernel_worker import timing

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("spare_interference: skipped, no CUDA device")
        return 0
    flush = timing.flush_buffer("cuda:0")
    results = []
    print("kernel\tcondition\tn\tmedian_us\tp90_us\tmax_us\tmedian/quiet\tp90/quiet\tstage_s")
    for name, fn in kernels().items():
        sample(fn, flush, 1.0)  # warm-up
        got: dict[str, list[float]] = {"quiet": [], "cpu": [], "gpu": [], "profiler": []}
        stage_s: dict[str, list[float]] = {k: [] for k in got}
        for _ in range(args.rounds):
            got["quiet"].extend(sample(fn, flush, 2.0))
            for stage in ("cpu", "gpu", "profiler"):
                xs, s = during(stage, fn, flush)
                got[stage].extend(xs)
                stage_s[stage].append(s)
        quiet = summary(got["quiet"])
        for cond, xs in got.items():
            if not xs:
                continue
            s = summary(xs)
            row = {"kernel": name, "condition": cond, **s,
                   "median_ratio": s["median"] / quiet["median"], "p90_ratio": s["p90"] / quiet["p90"],
                   "stage_s": statistics.mean(stage_s[cond]) if stage_s[cond] else 0.0}
            results.append(row)
            print(f"{name}\t{cond}\t{s['n']}\t{s['median']:.2f}\t{s['p90']:.2f}\t{s['max']:.1f}\t"
                  f"{row['median_ratio']:.4f}\t{row['p90_ratio']:.4f}\t{row['stage_s']:.2f}",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
