"""Proton's output (Triton's profiler: a hatchet JSON file) to per-kernel metrics for the proton
tier (docs/profiling.md).

The file is a JSON list whose first element is the call tree: nodes `{"frame": {"name", "type"},
"metrics": {...}, "children": [...]}` from a ROOT; kernels are the nodes whose metrics carry a
device time ("time (ns)") with a `device_type`. Metrics Proton adds from a kernel's launch
metadata ("flops", "flops16", "flops32", "bytes") are kept when present. Later elements, when
present, describe the devices. The same kernel name under several scopes is summed into one
entry. Pure functions.
"""
from __future__ import annotations

import math
import re
from typing import Any

TIME_KEYS = ("time (ns)", "time(ns)", "time_ns")
EXTRA = ("flops", "flops8", "flops16", "flops32", "flops64", "bytes")


MANGLED = re.compile(r"_Z[A-Za-z0-9_$.]+")  # an Itanium C++ ABI symbol (nvcc's kernel names)
MAX_MANGLED = 4096


def is_mangled(name: str) -> bool:
    return len(name) <= MAX_MANGLED and MANGLED.fullmatch(name) is not None


class ReportError(ValueError):
    """Not a Proton hatchet file; the message says what is wrong."""


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _time_ns(metrics: dict[str, Any]) -> float | None:
    for k in TIME_KEYS:
        v = _num(metrics.get(k))
        if v is not None:
            return v
    return None


def _walk(node: Any, found: dict[str, dict[str, Any]], depth: int = 0) -> None:
    if not isinstance(node, dict) or depth > 256:
        return
    metrics = node.get("metrics") if isinstance(node.get("metrics"), dict) else {}
    frame = node.get("frame") if isinstance(node.get("frame"), dict) else {}
    name = str(frame.get("name", ""))
    t = _time_ns(metrics)
    children = node.get("children") if isinstance(node.get("children"), list) else []
    if t is not None and "device_type" in metrics and not children and name != "ROOT":
        short = name if is_mangled(name) else name[:300]  # a mangled one is demangled whole
        k = found.setdefault(name, {"name": short, "count": 0, "duration_us": 0.0})
        k["count"] += int(_num(metrics.get("count")) or 1)
        k["duration_us"] += t / 1e3
        for key in EXTRA:
            v = _num(metrics.get(key))
            if v is not None:
                k[key] = k.get(key, 0.0) + v
    for child in children:
        _walk(child, found, depth + 1)


def parse_hatchet(data: Any) -> list[dict[str, Any]]:
    """Every kernel of a Proton tree, longest first; ReportError when `data` is not one."""
    tree = data[0] if isinstance(data, list) and data else data
    if not isinstance(tree, dict) or "frame" not in tree:
        raise ReportError("not a Proton hatchet tree (no root frame)")
    found: dict[str, dict[str, Any]] = {}
    _walk(tree, found)
    kernels = sorted(found.values(), key=lambda k: -k["duration_us"])
    for k in kernels:
        seconds = k["duration_us"] * 1e-6
        if seconds > 0 and "flops" in k:
            k["flops_per_s"] = k["flops"] / seconds
        if seconds > 0 and "bytes" in k:
            k["bytes_per_s"] = k["bytes"] / seconds
    return kernels


def demangled(kernels: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    """`kernels` with each mangled name that `names` maps to a readable one replaced (the mangled
    one kept as `mangled_name`)."""
    for k in kernels:
        readable = names.get(k["name"], "").strip()
        if readable and readable != k["name"]:
            k["mangled_name"] = k["name"]
            k["name"] = readable[:300]
    return kernels
