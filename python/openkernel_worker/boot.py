"""The worker's own start, before its first request: the candidate process it starts then, and
the timeline it reports (docs/evaluation.md, "Throughput").

A one-off `openkernel evaluate` starts a worker for one evaluation, so every one-time cost of
the worker and of the candidate's process (Python, torch's import, the CUDA context, the
profiler's first start: seconds each on a GPU host) lies on its path. The engine announces that
request in the worker's environment (EXPECT_ENV: the evaluate request's JSON; set only for a
local worker started for one `evaluate`), and start_early() starts the candidate process for it
at once, before the worker imports torch, so that the process's start-up overlaps the worker's
own start, the engine's request and the reference's preparation.

That process is an ordinary spare (candidate_process.SparePool) under the announced request's
launch key, marked "boot": it runs no candidate code before its evaluation and is used once; the
evaluation takes it as it takes a spare (`candidate_process` "boot"), and a request with another
launch key (the announcement was wrong) drops it. Its whole start-up is asked for at once, in
separate stages (imports; CUDA context and first kernel; the profiler's first start), since
nothing is measured before the request; the evaluation's first measurement, the device's
bandwidth for the physical floor, first waits for the stages that may not overlap one
(Evaluation._start_candidate).

STEPS is the worker's start-up timeline, in seconds since its process began: reported once, as
`worker_start_s` in its first evaluation's result.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
from typing import Any

EXPECT_ENV = "OPENKERNEL_WORKER_EXPECT"

STEPS: dict[str, float] = {}
_reported = False


def _process_age() -> float:
    """Seconds since this process began (its exec), from /proc; 0 where that cannot be read."""
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


_AGE_AT_IMPORT = _process_age()
_IMPORTED = time.monotonic()


def mark(step: str) -> None:
    """Notes that `step` of the worker's start is done, now."""
    STEPS.setdefault(step, round(_AGE_AT_IMPORT + time.monotonic() - _IMPORTED, 3))


def take_steps() -> dict[str, float] | None:
    """The start-up timeline, once (the worker's first evaluation); None afterwards."""
    global _reported
    if _reported:
        return None
    _reported = True
    return dict(STEPS)


def start_early() -> None:
    """Starts the candidate process for the announced request (EXPECT_ENV), if any, as a "boot"
    spare. The variable is removed from the environment first (candidate processes inherit
    it). Not from a Python without torch (the engine tries the next; its candidate process
    could not start either), nor on a GPU whose sandbox shares the PID namespace
    (OPENKERNEL_SANDBOX_GPU_SHARE=pid, not the default). Any failure leaves nothing behind: the evaluation then starts its process
    as usual and meets the problem itself."""
    text = os.environ.pop(EXPECT_ENV, None)
    if not text or importlib.util.find_spec("torch") is None:
        return
    from .candidate_process import SPARE
    from .options import (BACKENDS, Options, announced_device, cache_root_of, candidate_env_of,
                          launch_key_of)
    from .sandbox import gpu_shared

    try:
        req: Any = json.loads(text)
        if not isinstance(req, dict) or req.get("op") != "evaluate":
            return
        opts = Options.from_request(req)
        device = announced_device(opts.backend, opts.device)
        if opts.backend not in BACKENDS or not re.fullmatch(r"cpu|cuda:\d+", device):
            return  # not a request that could evaluate: it will say so itself
        if device.startswith("cuda") and "pid" in gpu_shared():
            return  # the sandbox hides the worker's threads from /proc as they are when the
            # process starts, and most of them (torch's, the watchdog's) start later
        key = launch_key_of(opts, device, sys.executable)
        SPARE.start_boot(key, device, opts, candidate_env_of(opts, cache_root_of(opts)))
        mark("candidate_spawned")
    except Exception:  # noqa: BLE001 - an optimisation only: the request will say what is wrong
        SPARE.clear()


def release() -> None:
    """Drops the boot process if it is still waiting: a request other than the announced
    evaluation came first, and what it runs (a baseline's timing, a bandwidth measurement) must
    not meet that process's start-up."""
    from .candidate_process import SPARE

    if any(p.boot for p in SPARE.procs):
        SPARE.clear()
