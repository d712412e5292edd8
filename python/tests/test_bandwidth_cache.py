"""bandwidth_cache.py: the measured bandwidth kept on disk between workers, behind a spot check.
Measurements are stand-ins (counted callables) except in the last test, which measures the CPU."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from openkernel_worker import bandwidth_cache as bc
from openkernel_worker import roofline

KEY: dict[str, Any] = {"kind": "cuda", "name": "NVIDIA H200", "uuid": "GPU-1", "memory": 1 << 37,
                       "driver": "580.159.04", "cuda": "13.0"}


class Meter:
    """Stand-in measurements: `full` and `spot` return the values set, counting calls."""

    def __init__(self, full: float = 4.0e12, spot: float = 3.9e12) -> None:
        self.full_value, self.spot_value = full, spot
        self.full_calls = self.spot_calls = 0

    def full(self) -> float:
        self.full_calls += 1
        return self.full_value

    def spot(self) -> float:
        self.spot_calls += 1
        return self.spot_value

    def get(self, cache: Path, key: dict[str, Any] = KEY) -> dict[str, Any]:
        return bc.cached_bandwidth(str(cache), key, self.full, self.spot)


def test_measured_then_cached(tmp_path: Path) -> None:
    m = Meter()
    first = m.get(tmp_path)
    assert first["source"] == "measured" and first["bandwidth"] == 4.0e12 and "note" not in first
    path = Path(bc.entry_path(str(tmp_path), KEY))
    assert path.is_file() and (path.stat().st_mode & 0o777) == 0o600
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    m.full_value = 9.9e12  # a new full measurement would say otherwise: it must not run
    second = m.get(tmp_path)
    assert second["source"] == "cached" and second["bandwidth"] == 4.0e12
    assert m.full_calls == 1 and m.spot_calls == 2


def test_settle_runs_before_every_full_measurement_only(tmp_path: Path) -> None:
    """A boot process still starting (evaluate._ceilings): the spot check may run beside it, a
    full measurement (kept on disk) only after `settle`; the spot kept with it is taken after."""
    m, order = Meter(), []
    full, spot = m.full, m.spot
    m.full = lambda: (order.append("full"), full())[1]  # type: ignore[method-assign]
    m.spot = lambda: (order.append("spot"), spot())[1]  # type: ignore[method-assign]

    def settle() -> None:
        order.append("settle")

    def get() -> dict[str, Any]:
        return bc.cached_bandwidth(str(tmp_path), KEY, m.full, m.spot, settle)

    assert get()["source"] == "measured" and order == ["settle", "full", "spot"]
    order.clear()
    assert get()["source"] == "cached" and order == ["spot"]  # agreed: nothing waits
    order.clear()
    m.spot_value = 2.0e12  # disagrees: measured again, settled first, spot taken again after
    assert get()["source"] == "measured" and order == ["spot", "settle", "full", "spot"]


def test_key_change_measures_again(tmp_path: Path) -> None:
    m = Meter()
    m.get(tmp_path)
    for change in ({"driver": "590.1"}, {"uuid": "GPU-2"}, {"name": "NVIDIA H100"}):
        other = {**KEY, **change}
        assert bc.entry_path(str(tmp_path), other) != bc.entry_path(str(tmp_path), KEY)
        assert m.get(tmp_path, other)["source"] == "measured", change
    assert m.full_calls == 4


def test_spot_check_disagreement_measures_again(tmp_path: Path) -> None:
    m = Meter()
    m.get(tmp_path)
    m.spot_value *= 1.04  # within 5%: cached
    assert m.get(tmp_path)["source"] == "cached"
    m.spot_value = 3.9e12 * 0.90  # 10% slower: measured again, and the entry rewritten
    m.full_value = 3.6e12
    again = m.get(tmp_path)
    assert again["source"] == "measured" and again["bandwidth"] == 3.6e12
    assert "spot check" in again["note"]
    assert m.get(tmp_path)["bandwidth"] == 3.6e12 and m.full_calls == 2


@pytest.mark.parametrize("content", [
    b"not json", b"", b"[]", b'{"version": 1}',
    json.dumps({"version": 1, "key": KEY, "bandwidth": 1e30, "spot": 1e30}).encode(),  # absurd
    json.dumps({"version": 1, "key": KEY, "bandwidth": 4e12, "spot": 4e9}).encode(),  # 1/1000
    json.dumps({"version": 1, "key": KEY, "bandwidth": "4e12", "spot": 4e12}).encode(),
    json.dumps({"version": 1, "key": KEY, "bandwidth": True, "spot": 4e12}).encode(),
    json.dumps({"version": 1, "key": {**KEY, "uuid": "GPU-9"}, "bandwidth": 4e14,
                "spot": 4e14}).encode(),  # another device's entry under this name
    json.dumps({"version": 99, "key": KEY, "bandwidth": 4e12, "spot": 3.9e12}).encode(),
])
def test_corrupt_or_foreign_entry_is_ignored_and_rewritten(tmp_path: Path, content: bytes) -> None:
    path = Path(bc.entry_path(str(tmp_path), KEY))
    path.parent.mkdir(mode=0o700, parents=True)
    path.write_bytes(content)
    os.chmod(path, 0o600)
    m = Meter()
    got = m.get(tmp_path)
    assert got["source"] == "measured" and got["bandwidth"] == 4.0e12
    assert "cache entry ignored" in got["note"]
    assert json.loads(path.read_text())["bandwidth"] == 4.0e12
    assert m.get(tmp_path)["source"] == "cached"


def test_an_entry_others_may_write_is_not_trusted(tmp_path: Path) -> None:
    m = Meter()
    m.get(tmp_path)
    path = Path(bc.entry_path(str(tmp_path), KEY))
    os.chmod(path, 0o666)
    got = m.get(tmp_path)
    assert got["source"] == "measured" and "writable by others" in got["note"]
    os.chmod(path.parent, 0o777)
    got = m.get(tmp_path)
    assert got["source"] == "measured" and "not this user's alone" in got["note"]
    assert "not cached" in got["note"]  # nor is anything written into such a folder


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    path = Path(bc.entry_path(str(tmp_path), KEY))
    path.parent.mkdir(mode=0o700, parents=True)
    target = tmp_path / "planted.json"
    target.write_text(json.dumps({"version": 1, "key": KEY, "bandwidth": 4e14, "spot": 3.9e12}))
    path.symlink_to(target)
    got = Meter().get(tmp_path)
    assert got["source"] == "measured" and "not a regular file" in got["note"]


def test_the_cache_is_outside_what_the_sandbox_binds_writable(tmp_path: Path) -> None:
    from openkernel_worker.evaluate import Evaluation

    ev = Evaluation.__new__(Evaluation)
    ev.opts = type("O", (), {"cache_dir": str(tmp_path), "threads": 0})()
    ev.device = "cpu"
    entry = bc.entry_path(ev.cache_root(), KEY)
    env = Evaluation.candidate_env(ev)
    for var in ("TORCH_EXTENSIONS_DIR", "TRITON_CACHE_DIR", "OPENKERNEL_NATIVE_CACHE"):
        assert not entry.startswith(env[var].rstrip("/") + "/"), var


def test_cpu_ceilings_use_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real CPU measurement: measured, then (in a fresh worker's memory) cached after the
    spot check, or measured again if this machine's load moved the spot check past 5%."""
    monkeypatch.setattr(roofline, "_CACHE", {})
    first = roofline.ceilings("cpu", str(tmp_path))
    assert first["bandwidth_source"] == "measured" and first["bandwidth"] > 1e8
    again = roofline.ceilings("cpu", str(tmp_path))
    assert again["bandwidth_source"] == "worker" and again["bandwidth"] == first["bandwidth"]
    monkeypatch.setattr(roofline, "_CACHE", {})
    later = roofline.ceilings("cpu", str(tmp_path))
    assert later["bandwidth_source"] in ("cached", "measured")
    if later["bandwidth_source"] == "cached":
        assert later["bandwidth"] == first["bandwidth"]
    else:
        assert "spot check" in later["bandwidth_note"]
