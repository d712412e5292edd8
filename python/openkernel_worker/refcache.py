"""Per-worker cache of the reference's expected outputs for correctness trials.

A search evaluates many candidates of one problem in one worker; the reference's outputs for the
trials are the same for all of them when the trial seeds are. The worker therefore draws the trial
seeds (and the init seed, which fixes the weights) from a secret made once per worker process
(unless the request gives `seed`), and keeps the expected outputs keyed by everything they depend
on: the reference's source hash, the overrides, the device, the precision policy, the torch
version, the thread count, the init seed and the trial seed. Timing inputs are not cached: they
come from fresh secret seeds in every evaluation.

Candidates never see the secret: it is not a public seed they could replay (KernelBench uses 42),
and the checks of timed outputs on fresh inputs catch a candidate that learned a trial's answer.

The cache holds at most `cap_bytes` (25% of the device's memory on a GPU, 2 GiB on the CPU;
`OPENKERNEL_REFERENCE_CACHE_BYTES` overrides it, 0 turns it off), least recently used first out.
"""
from __future__ import annotations

import os
import secrets
from collections import OrderedDict
from typing import Any, Hashable

from .options import tensor_nbytes

WORKER_SECRET = secrets.randbits(62)  # trial seeds of this worker when the request gives none
PRECISION_POLICY = "tf32-off/fp32-highest"


def cap_bytes(device: str) -> int:
    env = os.environ.get("OPENKERNEL_REFERENCE_CACHE_BYTES")
    if env is not None and env.strip() != "":
        try:
            return max(0, int(float(env)))
        except ValueError:
            pass
    if device.startswith("cuda"):
        import torch

        total = torch.cuda.get_device_properties(torch.device(device)).total_memory
        return int(total * 0.25)
    return 2 << 30


def fingerprint(values: list[Any]) -> tuple[Any, ...] | None:
    """A cheap digest of inputs (float64 sums, no copies), to notice a reference that changes its
    own inputs: its expected outputs cannot stand in for a run on the untouched inputs' successors.
    None when some input cannot be summed."""
    import torch

    out: list[Any] = []
    try:
        for v in values:
            if isinstance(v, torch.Tensor):
                if v.is_complex():
                    return None
                out.append((tuple(v.shape), str(v.dtype),
                            repr(float(torch.sum(v, dtype=torch.float64).item()))))
            else:
                out.append(repr(v))
    except (RuntimeError, TypeError):
        return None
    return tuple(out)


class ReferenceCache:
    def __init__(self) -> None:
        self.entries: OrderedDict[Hashable, tuple[list[Any], int]] = OrderedDict()
        self.bytes = 0
        self.uncacheable: set[Hashable] = set()  # problems whose reference mutates its inputs

    def get(self, key: Hashable) -> list[Any] | None:
        hit = self.entries.get(key)
        if hit is None:
            return None
        self.entries.move_to_end(key)
        return hit[0]

    def put(self, key: Hashable, outputs: list[Any], cap: int) -> bool:
        nbytes = tensor_nbytes(outputs)
        if nbytes > cap:
            return False
        old = self.entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        while self.entries and self.bytes + nbytes > cap:
            _, (_, freed) = self.entries.popitem(last=False)
            self.bytes -= freed
        self.entries[key] = (outputs, nbytes)
        self.bytes += nbytes
        return True

    def clear(self) -> None:
        self.entries.clear()
        self.bytes = 0
        self.uncacheable.clear()


CACHE = ReferenceCache()
# torch.compile(reference) timings, keyed by the problem and the timing method: a search pays the
# compile once per worker (trusted_timing.compile_baseline).
COMPILE_BASELINES: dict[Hashable, dict[str, Any]] = {}
