"""prebuild.py: the build worker's `prebuild` request and the lock it shares with evaluations.

Fast: which candidates are pre-built, the per-source lock (exclusive, timed wait), the build
summary, bad request fields, a busy lock, stale torch batons. Slow (they compile a CPU
load_inline candidate): a pre-build followed by the evaluation, which must find every unit in the
cache and give the same verdict; an evaluation that starts while the pre-build holds the lock
waits for it (phases_s.prebuild_wait) and then builds nothing.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from openkernel_worker import prebuild
from openkernel_worker.problem import BadInput

from test_inline_build import GOOD, needs_build

PLAIN = """
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.relu() * self.scale
"""


@pytest.fixture(autouse=True)
def _build_server_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-builds here fill the build server's cache, which is opt-in (docs/evaluation.md)."""
    monkeypatch.setenv("OPENKERNEL_INLINE_BUILD", "1")


def _request(reference: str, candidate: str, cache: str, **extra: Any) -> dict[str, Any]:
    return {"op": "prebuild", "reference": reference, "candidate": candidate, "backend": "cpu",
            "timeout_s": 600, "cache_dir": cache, **extra}


def test_wants_build() -> None:
    assert prebuild.wants_build(GOOD)
    assert prebuild.wants_build("import torch.utils.cpp_extension as ce\next = ce.load(...)")
    assert not prebuild.wants_build(PLAIN)


def test_lock_is_exclusive_and_waits(tmp_path: Path) -> None:
    a = prebuild.BuildLock(str(tmp_path), "k1")
    b = prebuild.BuildLock(str(tmp_path), "k1")
    other = prebuild.BuildLock(str(tmp_path), "k2")
    assert a.try_acquire()
    assert not b.try_acquire()
    assert other.try_acquire()  # another source is independent
    t0 = time.monotonic()
    assert b.acquire(0.2) is None  # gives up after its timeout
    assert time.monotonic() - t0 >= 0.2
    threading.Timer(0.3, a.release).start()
    waited = b.acquire(5.0)
    assert waited is not None and 0.25 <= waited < 5.0
    b.release()
    other.release()
    assert a.acquire(0.0) == pytest.approx(0.0, abs=0.05)
    a.release()


def test_summarize_builds() -> None:
    served = [{"ok": True, "seconds": 1.5, "units": [{"result": "built"}, {"result": "hit"}]},
              {"ok": True, "seconds": 0.25, "units": [{"result": "hit_direct"}]},
              {"ok": False, "message": "unsupported"}]
    assert prebuild.summarize_builds(served) == {
        "requests": 3, "failed": 1, "units": {"built": 1, "hit": 1, "hit_direct": 1},
        "seconds": 1.75, "failures": ["unsupported"]}
    assert prebuild.summarize_builds([])["requests"] == 0


def test_bad_fields_are_bad_input(write: Callable[[str, str], str], tiny_reference: str,
                                  tmp_path: Path) -> None:
    cand = write("cand.py", GOOD)
    with pytest.raises(BadInput, match="cuda_arch"):
        prebuild.prebuild(_request(tiny_reference, cand, str(tmp_path), cuda_arch="9.0; rm -rf"))
    with pytest.raises(BadInput, match="not a file"):
        prebuild.prebuild(_request(str(tmp_path / "missing.py"), cand, str(tmp_path)))


def test_nothing_to_build_is_skipped(write: Callable[[str, str], str], tiny_reference: str,
                                     tmp_path: Path) -> None:
    cand = write("plain.py", PLAIN)
    out = prebuild.prebuild(_request(tiny_reference, cand, str(tmp_path)))
    assert out["status"] == "skipped"
    empty = write("empty.py", "")
    assert prebuild.prebuild(_request(tiny_reference, empty, str(tmp_path)))["status"] == "skipped"


def test_busy_source_is_left_alone(write: Callable[[str, str], str], tiny_reference: str,
                                   tmp_path: Path) -> None:
    cand = write("cand.py", GOOD)
    lock = prebuild.BuildLock(str(tmp_path), prebuild.source_key(Path(cand).read_text()))
    assert lock.try_acquire()
    try:
        out = prebuild.prebuild(_request(tiny_reference, cand, str(tmp_path)))
    finally:
        lock.release()
    assert out["status"] == "busy"
    assert not (tmp_path / "torch_extensions").exists()  # no candidate process ran


def test_stale_batons_are_removed(tmp_path: Path) -> None:
    ext = tmp_path / "ext"
    (ext / "okname").mkdir(parents=True)
    (ext / "okname" / "lock").write_text("")
    (ext / "okname" / "main.cpp").write_text("")
    assert prebuild.remove_stale_batons(str(ext)) == 1
    assert sorted(os.listdir(ext / "okname")) == ["main.cpp"]


# Compiles (slow)


def _evaluate(reference: str, candidate: str, cache: str) -> dict[str, Any]:
    from openkernel_worker.evaluate import evaluate

    return evaluate({"reference": reference, "candidate": candidate, "backend": "cpu",
                     "trials": 2, "timing_budget_s": 0.2, "timeout_s": 600, "seed": 1,
                     "cache_dir": cache})


@pytest.mark.slow
@needs_build
def test_prebuild_then_evaluation_hits(write: Callable[[str, str], str], tiny_reference: str,
                                       tmp_path: Path) -> None:
    cand = write("cand.py", GOOD.replace("okinline_test", "okprebuild_test"))
    cache = str(tmp_path / "cache")
    out = prebuild.prebuild(_request(tiny_reference, cand, cache))
    assert out["status"] == "built", out
    assert out["builds"]["units"].get("built", 0) + out["builds"]["units"].get("hit", 0) >= 1
    assert not list(Path(cache, "torch_extensions").rglob("lock"))
    # A baton left by a process killed mid-build (Ctrl-C) must not make the evaluation wait.
    build_dirs = [p for p in Path(cache, "torch_extensions").glob("*/*") if p.is_dir()]
    assert build_dirs
    (build_dirs[0] / "lock").write_text("")
    r = _evaluate(tiny_reference, cand, cache)
    assert r["verdict"] == "correct", r.get("reasons")
    units = r["inline_build"]["units"]
    assert units and set(units) <= {"hit_direct", "hit"}, r["inline_build"]  # nothing rebuilt
    assert "prebuild_wait" not in r["phases_s"]


@pytest.mark.slow
@needs_build
def test_evaluation_waits_for_a_running_prebuild(write: Callable[[str, str], str],
                                                 tiny_reference: str, tmp_path: Path) -> None:
    cand = write("cand.py", GOOD.replace("okinline_test", "okprebuild_wait"))
    cache = str(tmp_path / "cache")
    results: dict[str, Any] = {}
    t = threading.Thread(target=lambda: results.update(
        pre=prebuild.prebuild(_request(tiny_reference, cand, cache))))
    t.start()
    lock = prebuild.BuildLock(cache, prebuild.source_key(Path(cand).read_text()))
    deadline = time.monotonic() + 30
    while lock.try_acquire():  # until the pre-build holds it
        lock.release()
        assert time.monotonic() < deadline and t.is_alive(), results
        time.sleep(0.02)
    r = _evaluate(tiny_reference, cand, cache)
    t.join()
    assert results["pre"]["status"] == "built", results
    assert r["verdict"] == "correct", r.get("reasons")
    assert r["phases_s"]["prebuild_wait"] > 0.1
    assert set(r["inline_build"]["units"]) <= {"hit_direct", "hit"}, r["inline_build"]


def test_lock_held_too_long_is_the_environments_problem(write: Callable[[str, str], str],
                                                       tiny_reference: str,
                                                       tmp_path: Path) -> None:
    """A build of the same source that holds the lock past timeout_s: the evaluation reports the
    environment instead of loading anyway (which could cost the candidate a second timeout)."""
    from openkernel_worker.evaluate import EnvironmentProblem, evaluate

    cand = write("cand.py", GOOD.replace("okinline_test", "okprebuild_stuck"))
    cache = str(tmp_path / "cache")
    lock = prebuild.BuildLock(cache, prebuild.source_key(Path(cand).read_text()))
    assert lock.try_acquire()
    try:
        t0 = time.monotonic()
        with pytest.raises(EnvironmentProblem, match="build lock"):
            evaluate({"reference": tiny_reference, "candidate": cand, "backend": "cpu",
                      "trials": 1, "timeout_s": 4, "seed": 1, "cache_dir": cache})
        assert time.monotonic() - t0 < 60
        assert not list(Path(cache, "torch_extensions").rglob("*.so"))  # nothing was built
    finally:
        lock.release()
