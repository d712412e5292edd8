"""The physical floor's counts (roofline.py): the reference's FLOPs and unavoidable bytes, kept per
worker and on disk, so that an evaluation does not run the reference under the op counter again.

The counts depend only on the reference: its source and overrides, the shapes and dtypes of its
inputs and parameters, the device kind and torch's version (which picks the aten ops counted),
not on the values drawn (a reference whose work depends on its values, such as nonzero, was
always counted on one draw). The key holds all of that except the inputs' signature, which is
known only once inputs are drawn: the entry stores the signature it was counted on, and `usable`
accepts it only for inputs with the same signature (the evaluation's trial inputs). What is
stored is the FLOP count and the inputs' and outputs' bytes; the parameters' bytes are summed
from the evaluation's own model each time (roofline.unavoidable_bytes, in parts).

On disk an entry lives in CACHE_DIR/ceilings/counts-<hash of the key>.json beside the bandwidth
(bandwidth_cache.py), under the same rules: outside every path a candidate's sandbox may write,
used only when the file belongs to this user and nobody else may write it or its folder, parses,
carries this key and sane numbers; written atomically (0600, folder 0700). Anything else is
counted again and rewritten.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any

from . import private_json
from .compare import flatten

VERSION = 1
MAX_FLOPS = 10**22  # a sanity bound: beyond any reference one evaluation could run
MAX_BYTES = 1 << 50

_MEMO: dict[str, "Counts"] = {}  # per worker: key digest -> counts


@dataclass(frozen=True)
class Counts:
    flops: int
    input_bytes: int
    output_bytes: int
    input_signature: list[Any]  # signature() of the inputs counted on (input_bytes follows)
    source: str = "counted"  # "counted", "worker" (this worker's memo) or "cached" (disk)


def signature(values: Any) -> list[Any]:
    """Shapes and dtypes of tensors, the type of anything else: what the counts depend on."""
    import torch

    out: list[Any] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append([list(v.shape), str(v.dtype)])
        else:
            out.append(type(v).__name__)
    return out


def tensor_bytes(values: Any) -> int:
    import torch

    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def parameter_bytes(model: Any) -> int:
    import torch

    if not isinstance(model, torch.nn.Module):
        return 0
    return sum(p.numel() * p.element_size() for p in model.parameters())


def key(source_hash: str, overrides: dict[str, Any], device: str, model: Any) -> dict[str, Any]:
    import torch

    params = (signature(model.parameters()) if isinstance(model, torch.nn.Module) else [])
    return {"reference": source_hash, "overrides": {k: repr(v) for k, v in overrides.items()},
            "device": device.split(":")[0], "torch": torch.__version__, "parameters": params}


def digest(k: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(k, sort_keys=True).encode()).hexdigest()[:24]


def entry_path(cache_dir: str, k: dict[str, Any]) -> str:
    return os.path.join(cache_dir, "ceilings", f"counts-{digest(k)}.json")


def count(model: Any, inputs: list[Any]) -> Counts:
    """Runs the reference once under the op counter (inspect_problem.count_flops)."""
    from .inspect_problem import count_flops

    flops, outputs, _ = count_flops(model, inputs)
    out_bytes = tensor_bytes(flatten(outputs))
    del outputs
    return Counts(int(flops), int(tensor_bytes(inputs)), int(out_bytes), signature(inputs))


def _sane(n: Any, limit: int) -> bool:
    return isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= limit


def read_entry(path: str, k: dict[str, Any]) -> tuple[Counts | None, str]:
    """(counts, "") for a trustworthy entry with this key, else (None, why not)."""
    data, why = private_json.read_entry(path, 1 << 20, VERSION, k, "counts entry", "reference")
    if data is None:
        return None, why
    flops, sig = data.get("flops"), data.get("inputs")
    in_bytes, out_bytes = data.get("input_bytes"), data.get("output_bytes")
    if not (_sane(flops, MAX_FLOPS) and _sane(in_bytes, MAX_BYTES)
            and _sane(out_bytes, MAX_BYTES) and isinstance(sig, list)):
        return None, "counts entry ignored: implausible values"
    return Counts(flops, in_bytes, out_bytes, sig, "cached"), ""


def write_entry(path: str, k: dict[str, Any], counts: Counts) -> str:
    """Writes the entry atomically (0600, folder 0700); returns a note when it could not."""
    why = private_json.write(path, {"version": VERSION, "key": k, "flops": counts.flops,
                                    "input_bytes": counts.input_bytes,
                                    "output_bytes": counts.output_bytes,
                                    "inputs": counts.input_signature})
    return f"counts not cached: {why}" if why else ""


def lookup(cache_dir: str | None, k: dict[str, Any]) -> Counts | None:
    """This worker's counts for `k`, else a trustworthy disk entry (kept in the memo too)."""
    d = digest(k)
    if d in _MEMO:
        m = _MEMO[d]
        return Counts(m.flops, m.input_bytes, m.output_bytes, m.input_signature, "worker")
    if not cache_dir:
        return None
    got, _ = read_entry(entry_path(cache_dir, k), k)
    if got is not None:
        _MEMO[d] = got
    return got


def remember(cache_dir: str | None, k: dict[str, Any], counts: Counts) -> str:
    """Keeps fresh counts in the memo and, given a cache directory, on disk; a note if not."""
    _MEMO[digest(k)] = counts
    return write_entry(entry_path(cache_dir, k), k, counts) if cache_dir else ""


def usable(counts: Counts | None, inputs_signature: list[Any] | None) -> bool:
    """Whether `counts` apply to inputs of this signature (None: unknown, never)."""
    return (counts is not None and inputs_signature is not None
            and counts.input_signature == inputs_signature)


def unavoidable_bytes(counts: Counts, model: Any) -> int:
    """roofline.unavoidable_bytes from the counts: inputs, outputs and parameters, once each."""
    return int(counts.input_bytes + counts.output_bytes + parameter_bytes(model))
