"""The device's measured copy bandwidth (roofline.py's physical floor), kept on disk between worker
processes, so that a one-off `openkernel evaluate` does not measure it again (seconds on a GPU).

An entry lives in CACHE_DIR/ceilings/<hash of the key>.json, under the worker's cache directory
but outside every path a candidate's sandbox may write (sandbox.py binds only the compile caches
writable). Its key names the hardware and what the number depends on: for a GPU its model name,
UUID, memory size and the driver's version; for the CPU its model, logical CPUs, memory and the
threads torch copies with. An entry is used only if the file belongs to this user and nobody
else may write it or its folder, parses, carries this key and plausible numbers, and a short
spot check now (a copy of SPOT_BYTES, a fraction of a second) agrees within SPOT_TOLERANCE with
the spot check stored beside the full measurement. Otherwise the bandwidth is measured in full
and the entry rewritten. A candidate run without the sandbox (`--no-sandbox`) could write the
file, as it could write anything of the user's.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from typing import Any, Callable

from . import private_json

VERSION = 1
SPOT_TOLERANCE = 0.05  # re-measure when the spot check differs from the stored one by more
PLAUSIBLE = (1e8, 1e15)  # bytes/s: from a slow VM to well beyond any device's memory
SPOT_RATIO = (0.1, 10.0)  # stored spot / stored full measurement (other sizes; 5.3 under load)


def _driver_version() -> str:
    """The NVIDIA kernel module's version without nvidia-smi, else the CUDA driver API's."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            first = f.readline()
        for word in first.split():
            if word[:1].isdigit() and "." in word:
                return word
    except OSError:
        pass
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0:
            return f"cuda-{version.value}"
    except (OSError, AttributeError):
        pass
    return "unknown"


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def device_key(device: str) -> dict[str, Any]:
    """What a bandwidth measurement on `device` depends on."""
    import torch

    if device.startswith("cuda"):
        p = torch.cuda.get_device_properties(torch.device(device))
        uuid = getattr(p, "uuid", None)
        return {"kind": "cuda", "name": p.name, "uuid": str(uuid) if uuid is not None else None,
                "memory": int(p.total_memory), "driver": _driver_version(),
                "cuda": torch.version.cuda}
    from .device import cpu_name

    return {"kind": "cpu", "name": cpu_name(), "cpus": os.cpu_count(), "memory": _total_memory(),
            "threads": torch.get_num_threads()}


def entry_path(cache_dir: str, key: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return os.path.join(cache_dir, "ceilings", f"bandwidth-{digest}.json")


def _plausible(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and PLAUSIBLE[0] <= value <= PLAUSIBLE[1])


def read_entry(path: str, key: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(entry, "") for a trustworthy entry with this key, else (None, why not)."""
    data, why = private_json.read_entry(path, 1 << 16, VERSION, key, "cache entry", "device")
    if data is None:
        return None, why
    bw, spot = data.get("bandwidth"), data.get("spot")
    if not (_plausible(bw) and _plausible(spot)) or not (
            SPOT_RATIO[0] <= spot / bw <= SPOT_RATIO[1]):
        return None, "cache entry ignored: implausible values"
    return data, ""


def write_entry(path: str, key: dict[str, Any], bandwidth: float, spot: float) -> str:
    """Writes the entry atomically (0600, folder 0700); returns a note when it could not."""
    why = private_json.write(path, {"version": VERSION, "key": key, "bandwidth": bandwidth,
                                    "spot": spot, "measured_at": time.time()})
    return f"bandwidth not cached: {why}" if why else ""


def cached_bandwidth(cache_dir: str, key: dict[str, Any], full: Callable[[], float],
                     spot: Callable[[], float],
                     settle: Callable[[], Any] | None = None) -> dict[str, Any]:
    """The bandwidth for `key`: {"bandwidth", "source" ("cached" or "measured"), "spot"?,
    "note"?}. `full` measures it in full, `spot` runs the short spot check; `settle`, when
    given, runs before a full measurement (which is kept on disk for later workers): it waits
    until nothing else on the machine is starting up."""
    path = entry_path(cache_dir, key)
    entry, why = read_entry(path, key)
    now = None
    if entry is not None:
        now = spot()
        drift = now / entry["spot"] - 1.0
        if abs(drift) <= SPOT_TOLERANCE:
            return {"bandwidth": float(entry["bandwidth"]), "source": "cached", "spot": now,
                    "spot_drift": round(drift, 4)}
        why = f"spot check {drift:+.1%} off the cached entry's: measured again"
    if settle is not None:
        settle()
        now = None  # a spot check taken beside a start-up is not kept with a settled measurement
    bandwidth = full()
    now = spot() if now is None else now
    out: dict[str, Any] = {"bandwidth": bandwidth, "source": "measured", "spot": now}
    note = "; ".join(n for n in (why if why != "no entry" else "",
                                 write_entry(path, key, bandwidth, now)) if n)
    if note:
        out["note"] = note
    return out
