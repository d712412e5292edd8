"""evaluate.CandidateProcess: nested `build` requests and writes to a candidate that does not read.

Replays what a review reproduced: a candidate that writes build lines outside a load (during
trials or timing) had them served; ~1000 unread build lines made the worker recurse into
RecursionError (an internal error, not a verdict) or block forever writing the replies. Now a
build outside a load is a protocol violation (the candidate is killed: CandidateDied, a
runtime_error), at most MAX_BUILDS_PER_LOAD are served per load, and every write honours the
deadline.
"""
from __future__ import annotations

import os
import selectors
import subprocess
import sys
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from openkernel_worker import evaluate
from openkernel_worker.evaluate import CandidateDied, CandidateProcess, CandidateTimeout


def _fake(script: str) -> CandidateProcess:
    """A CandidateProcess around `python -c script` (no sandbox: the script is ours)."""
    cand = CandidateProcess.__new__(CandidateProcess)
    cand.proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, start_new_session=True)
    cand._buf = b""
    cand._sel = selectors.DefaultSelector()
    assert cand.proc.stdout is not None
    os.set_blocking(cand.proc.stdout.fileno(), False)
    cand._sel.register(cand.proc.stdout, selectors.EVENT_READ)
    cand.served = []
    cand.launch = SimpleNamespace(exit_code=lambda code: code)
    return cand


def _flood(n: int) -> str:
    """n build lines, then a reply; never reads its stdin (the replies pile up)."""
    return ("import sys, time\n"
            f"for _ in range({n}): sys.stdout.write('{{\"op\": \"build\", \"build_dir\": \"x\"}}\\n')\n"
            "sys.stdout.write('{\"ok\": true}\\n'); sys.stdout.flush(); time.sleep(60)\n")


class _Builder:
    def serve(self, request: dict[str, Any], roots: list[str]) -> dict[str, Any]:
        return {"ok": False, "message": "m" * 2000}  # replies big enough to fill the pipe


def _in_thread(fn: Any, limit_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            out["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(limit_s)
    assert not t.is_alive(), "the worker blocked"
    return out


def test_build_outside_a_load_kills_the_candidate() -> None:
    cand = _fake(_flood(1))
    try:
        with pytest.raises(CandidateDied, match="protocol"):
            cand.receive(20)
        assert cand.proc.poll() is not None and not cand.served
    finally:
        cand.kill()


def test_a_flood_of_build_requests_is_capped() -> None:
    cand = _fake(_flood(1000))
    cand.builder = _Builder()
    try:
        cand.send({"op": "load"})
        got = _in_thread(lambda: cand.receive(5), 20)
        err = got.get("error")
        assert isinstance(err, (CandidateDied, CandidateTimeout)), got  # not RecursionError
        assert len(cand.served) <= evaluate.MAX_BUILDS_PER_LOAD
        assert cand.proc.poll() is not None
    finally:
        cand.kill()


def test_send_honours_its_deadline() -> None:
    cand = _fake("import time; time.sleep(60)")  # never reads
    try:
        t0 = time.monotonic()
        got = _in_thread(lambda: cand.send({"op": "x", "pad": "p" * (4 << 20)}, 1.0), 20)
        assert isinstance(got.get("error"), CandidateTimeout), got
        assert time.monotonic() - t0 < 10
        assert cand.proc.poll() is not None
    finally:
        cand.kill()


def test_builds_within_a_load_are_served() -> None:
    cand = _fake("import sys\n"
                 "sys.stdout.write('{\"op\": \"build\", \"build_dir\": \"x\"}\\n'); "
                 "sys.stdout.flush()\n"
                 "sys.stdin.readline(); line = sys.stdin.readline()\n"  # the load, the reply
                 "sys.stdout.write('{\"ok\": true, \"got\": %d}\\n' % len(line)); "
                 "sys.stdout.flush()\n")
    cand.builder = _Builder()
    try:
        cand.send({"op": "load"})
        reply = cand.receive(20)
        assert reply["ok"] and reply["got"] > 2000 and len(cand.served) == 1
    finally:
        cand.kill()
