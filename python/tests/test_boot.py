"""The worker's start (boot.py): with the evaluate request announced in OPENKERNEL_WORKER_EXPECT a
real worker starts the candidate process before its first request (before it imports torch),
hands it to that evaluation only ("boot"), and reports its own start-up timeline once; a wrong or
malformed announcement costs nothing but the process, which is dropped."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openkernel_worker import boot, watchdog
from test_evaluate import CORRECT
from test_watchdog import alive, wait_for_candidate

PKG = str(Path(__file__).resolve().parents[1])
# Honest, and fails if the announcement reached the candidate's environment.
NO_ANNOUNCEMENT = "import os\nassert '" + boot.EXPECT_ENV + "' not in os.environ\n" + CORRECT


def request(tmp_path: Path, rid: int, **fields: Any) -> dict[str, Any]:
    from conftest import TINY_REFERENCE

    ref = tmp_path / "reference.py"
    ref.write_text(TINY_REFERENCE)
    cand = tmp_path / "candidate.py"
    cand.write_text(NO_ANNOUNCEMENT)
    return {"id": rid, "op": "evaluate", "reference": str(ref), "candidate": str(cand),
            "backend": "cpu", "trials": 2, "timing_budget_s": 0.2, "timeout_s": 120,
            "threads": 1, "cache_dir": str(tmp_path / "cache"), **fields}


def start_worker(announced: str | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=PKG, PYTHONDONTWRITEBYTECODE="1")
    env.pop(watchdog.ENV, None)
    env.pop(boot.EXPECT_ENV, None)
    if announced is not None:
        env[boot.EXPECT_ENV] = announced
    w = subprocess.Popen([sys.executable, "-u", "-m", "openkernel_worker"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    return w


def ask(w: subprocess.Popen[bytes], req: dict[str, Any]) -> dict[str, Any]:
    assert w.stdin is not None and w.stdout is not None
    w.stdin.write((json.dumps(req) + "\n").encode())
    w.stdin.flush()
    reply = json.loads(w.stdout.readline())
    assert reply.get("ok"), reply
    return reply["result"]


def hello(w: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert w.stdout is not None
    greeting = json.loads(w.stdout.readline())
    assert greeting["type"] == "hello" and greeting["ok"]
    return greeting


def candidates_of(pid: int) -> list[int]:
    return [p for p in watchdog.descendants(pid) if alive(p) and
            b"openkernel_worker.candidate" in Path(f"/proc/{p}/cmdline").read_bytes()]


def gone(pids: list[int], within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


def finish(w: subprocess.Popen[bytes]) -> None:
    assert w.stdin is not None
    w.stdin.close()
    assert w.wait(timeout=60) == 0


def test_the_announced_evaluation_takes_the_process_started_at_boot(tmp_path: Path) -> None:
    req = request(tmp_path, 1)
    w = start_worker(json.dumps(req))
    try:
        # Started before the request (before the worker's greeting, which follows torch's import).
        wait_for_candidate(w.pid)
        hello(w)
        first = ask(w, req)
        assert first["verdict"] == "correct", first["reasons"]
        assert first["candidate_process"] == "boot"
        warm = first["process_warm_s"]
        assert warm["spawned_before_s"] > 0  # its head start, reported beside its own steps
        assert {"torch_import", "start_to_ready"} <= warm.keys()
        steps = first["worker_start_s"]  # the worker's timeline, seconds since its exec
        order = ["main", "candidate_spawned", "torch_imported", "hello_sent", "request"]
        assert list(steps) == order
        assert all(steps[a] <= steps[b] for a, b in zip(order, order[1:]))
        # Used once: the same request again gets a new process, and no second timeline.
        second = ask(w, {**req, "id": 2})
        assert second["verdict"] == "correct"
        assert second["candidate_process"] == "fresh"
        assert "spawned_before_s" not in second["process_warm_s"]
        assert second["worker_start_s"] is None
        finish(w)
    finally:
        w.kill()


def test_another_request_drops_the_boot_process(tmp_path: Path) -> None:
    req = request(tmp_path, 1)
    w = start_worker(json.dumps({**req, "trials": 3}))  # another launch key than the request's
    try:
        booted = wait_for_candidate(w.pid)
        hello(w)
        r = ask(w, req)
        assert r["verdict"] == "correct", r["reasons"]
        assert r["candidate_process"] == "fresh"
        assert gone(booted)  # killed, not kept for later
        finish(w)
    finally:
        w.kill()


def test_another_request_first_drops_the_boot_process(tmp_path: Path) -> None:
    """What another request runs (a baseline's timing, a bandwidth measurement) must not meet
    the boot process's start-up, and the evaluation that comes later gets a process of its own."""
    req = request(tmp_path, 2)
    w = start_worker(json.dumps(req))
    try:
        booted = wait_for_candidate(w.pid)
        hello(w)
        assert ask(w, {"id": 1, "op": "inspect", "reference": req["reference"]})["flops"] > 0
        assert gone(booted)
        r = ask(w, req)
        assert r["verdict"] == "correct" and r["candidate_process"] == "fresh"
        finish(w)
    finally:
        w.kill()


def test_a_malformed_announcement_is_ignored(tmp_path: Path) -> None:
    req = request(tmp_path, 1)
    for announced in ("{not json", json.dumps({**req, "trials": "many"})):
        w = start_worker(announced)
        try:
            hello(w)
            assert candidates_of(w.pid) == []
            r = ask(w, req)
            assert r["verdict"] == "correct" and r["candidate_process"] == "fresh"
            finish(w)
        finally:
            w.kill()


def test_no_boot_process_from_a_python_without_torch(tmp_path: Path) -> None:
    """The engine tries each Python until one imports torch; one without it starts nothing."""
    env = dict(os.environ, PYTHONPATH=PKG, PYTHONDONTWRITEBYTECODE="1",
               **{boot.EXPECT_ENV: json.dumps(request(tmp_path, 1))})
    hide = ("import sys, importlib.machinery as m\n"
            "class Hide(m.PathFinder):\n"
            "    @classmethod\n"
            "    def find_spec(cls, name, path=None, target=None):\n"
            "        return None if name == 'torch' else super().find_spec(name, path, target)\n"
            "sys.meta_path = [f for f in sys.meta_path if f is not m.PathFinder] + [Hide]\n")
    spawned = ("from openkernel_worker import boot\n"
               "boot.start_early()\n"
               "from openkernel_worker.candidate_process import SPARE\n"
               "print(len(SPARE.procs))\n")
    for script, expected in ((hide + spawned, "0"), (spawned, "1")):  # the second: the control
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected


def test_no_boot_process_where_the_gpu_sandbox_shares_the_pid_namespace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared-PID profile hides the worker's threads as they are when a process starts; at
    the worker's start most are still to come, so no process is started then."""
    from openkernel_worker.candidate_process import SPARE

    req = json.dumps(request(tmp_path, 1, backend="cuda"))
    try:
        monkeypatch.setenv("OPENKERNEL_SANDBOX_GPU_SHARE", "ipc,pid")
        monkeypatch.setenv(boot.EXPECT_ENV, req)
        boot.start_early()
        assert SPARE.procs == [] and boot.EXPECT_ENV not in os.environ
        monkeypatch.setenv("OPENKERNEL_SANDBOX_GPU_SHARE", "ipc")  # the control
        monkeypatch.setenv(boot.EXPECT_ENV, req)
        boot.start_early()
        assert [(p.boot, p.device) for p in SPARE.procs] == [(True, "cuda:0")]
        assert boot.EXPECT_ENV not in os.environ
        proc = SPARE.procs[0]
        assert proc.gpu_in_flight()  # its device stage asked for at once, a stage of its own
        proc.wait_device_stages(120)  # what the first measurement waits for (without a GPU
        assert not proc.gpu_in_flight()  # here, the stage reports its failure)
    finally:
        SPARE.clear()


@pytest.mark.parametrize("fields,started", [
    ({}, 1),  # the control: a CPU evaluation starts its process
    ({"backend": "fortran"}, 0),
    ({"backend": "cuda", "device": "tpu:0"}, 0),
    ({"backend": "cuda", "device": "cuda:x"}, 0),
    ({"op": "stage"}, 0),
])
def test_an_announcement_that_could_not_evaluate_starts_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any],
        started: int) -> None:
    """An unknown backend, a device the backend cannot mean, or another op: no boot process (the
    request, when it comes, says what is wrong itself), and the announcement is not inherited."""
    from openkernel_worker.candidate_process import SPARE

    try:
        monkeypatch.setenv(boot.EXPECT_ENV, json.dumps({**request(tmp_path, 1), **fields}))
        boot.start_early()
        assert len(SPARE.procs) == started and boot.EXPECT_ENV not in os.environ
    finally:
        SPARE.clear()
