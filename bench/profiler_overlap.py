"""Does the profiler's first start (CUPTI set-up) on a thread leave the GIL to the main thread?

Runs a pure-Python loop on the main thread for as long as the profiler's first start on another
thread takes, and the same loop alone afterwards; prints the thread's seconds and the loop's rate
during the start as a fraction of its rate alone (near 1: the GIL is free during the set-up; near
0: the main thread waited). Usage: python3 bench/profiler_overlap.py [cuda:0]

On the H200 (torch 2.11, bench/results/h200_profiler_thread.txt) the GIL was free, but the start
took 51-61 s instead of 4 s on the main thread, and Kineto printed "External init callback must
run in same thread as registerClient": the first start must stay on the main thread, so the
candidate process does not start its profiler on a background thread.
"""
from __future__ import annotations

import json
import sys
import time


def spin(seconds: float) -> float:
    """Loop iterations per second of a pure-Python loop for `seconds`."""
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        for _ in range(1000):
            n += 1
    return n / (time.monotonic() - t0)


def main() -> int:
    import torch

    import threading

    from torch.profiler import ProfilerActivity, profile

    device = sys.argv[1] if len(sys.argv) > 1 else ("cuda:0" if torch.cuda.is_available() else "cpu")
    torch.empty(1, device=device).add_(1)  # the context first, as the "gpu" stage does
    seconds: dict[str, float] = {}

    def first_start() -> None:
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device != "cpu" else [])
        t = time.monotonic()
        with profile(activities=acts):
            torch.ones(8, device=device).sum().item()
        seconds["profiler_start"] = round(time.monotonic() - t, 3)

    t0 = time.monotonic()
    thread = threading.Thread(target=first_start, daemon=True)
    thread.start()
    rate_during = []
    while thread.is_alive():
        rate_during.append(spin(0.05))
    joined = seconds
    during = sum(rate_during) / max(1, len(rate_during))
    alone = spin(1.0)
    print(json.dumps({"device": device, "profiler_start_s": joined.get("profiler_start"),
                      "wall_s": round(time.monotonic() - t0, 3),
                      "main_thread_rate_fraction": round(during / alone, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
