"""One evaluation's physical floor: the reference's counts (floor_counts.py) taken where they
cost nothing, and the candidate's median set against the roofline floor (roofline.py).

count_early() runs while a new candidate process starts (seconds in which the worker would only
wait); judge() after timing, counting then only when the early counts do not fit the trials'
inputs. Plain functions; the evaluation keeps the counts between them.
"""
from __future__ import annotations

import secrets
from random import Random
from typing import Any

from . import floor_counts, roofline, verdicts
from .options import Outcome
from .problem import Reference, make_inputs


def count_early(ref: Reference, device: str, cache_root: str, seed: int | None, ref_model: Any,
                count: bool) -> tuple[floor_counts.Counts | None, str | None]:
    """The counts from this worker's memo or the disk cache, or with `count` counted now on
    fresh inputs (from `seed`, the evaluation's, or a secret one); with the note of their
    caching when counted. The reference's buffers (a BatchNorm's running statistics) are
    restored afterwards, so the trials see the model as built. Any failure gives no counts,
    leaving them to judge(), which meets and reports it as before."""
    import torch

    try:
        k = floor_counts.key(ref.source_hash, ref.overrides, device, ref_model)
        got = floor_counts.lookup(cache_root, k)
        if got is not None or not count:
            return got, None
        buffers = ([(b, b.detach().clone()) for b in ref_model.buffers()]
                   if isinstance(ref_model, torch.nn.Module) else [])
        inputs_seed = (Random(f"{seed}/floor").getrandbits(31) if seed is not None
                       else secrets.randbits(31))
        inputs = make_inputs(ref.module, inputs_seed, device)
        got = floor_counts.count(ref_model, inputs)
        del inputs
        with torch.no_grad():
            for b, saved in buffers:
                b.copy_(saved)
        return got, floor_counts.remember(cache_root, k, got)
    except Exception:  # noqa: BLE001 - counted (and reported) again at the floor
        return None, None


def judge(out: Outcome, result: dict[str, Any], cand_us: float, counts: floor_counts.Counts,
          ref_model: Any, ceil: dict[str, Any], counts_note: str) -> None:
    """The result's roofline (the floor from the counts and the device's ceilings, the share of
    the speed of light) and the below_physical_floor rule on the candidate's median."""
    flops, nbytes = counts.flops, floor_counts.unavoidable_bytes(counts, ref_model)
    floor = roofline.floor_us(flops, nbytes, ceil)
    reject_floor = roofline.floor_us(flops, nbytes, ceil, "floor_bandwidth")
    result["roofline"] = {"flops": flops, "bytes": nbytes, "floor_us": floor,
                          "rejection_floor_us": reject_floor,
                          "floor_bandwidth_bytes_per_s": ceil.get("floor_bandwidth"),
                          "floor_bandwidth_source": ceil.get("floor_bandwidth_source"),
                          "counts_source": counts.source,
                          "bandwidth_bytes_per_s": ceil["bandwidth"],
                          "bandwidth_source": ceil["bandwidth_source"],
                          "bandwidth_s": ceil["bandwidth_s"],
                          "peak_flops": ceil["peak_flops"],
                          "fraction_of_speed_of_light": floor / cand_us}
    if ceil.get("bandwidth_note"):
        result["roofline"]["bandwidth_note"] = ceil["bandwidth_note"]
    verdicts.below_floor(out, cand_us, reject_floor, nbytes, flops,
                         ceil.get("floor_bandwidth", ceil["bandwidth"]),
                         ceil.get("floor_bandwidth_source", "copy"), ceil["bandwidth"])
    if counts_note:
        result["roofline"]["counts_note"] = counts_note
