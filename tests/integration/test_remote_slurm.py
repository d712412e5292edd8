"""`--eval-host slurm[:ARGS]` against a real single-node SLURM (tests/slurm/local_slurm.sh, on ports
of its own so that it never meets the sweep tests' cluster; skipped with its reason where SLURM
cannot be started): the worker runs in an allocation srun asks for, its package sent down srun's
channel into the node's cache; verdicts equal the local ones; the allocation is gone from `squeue`
after the run, after Ctrl-C and after the engine is killed with SIGKILL, and a job cancelled under an evaluation
is retried once, then recorded as remote_lost (docs/remote.md)."""
from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from locations import BINARY, PYTHON, ROOT
from lost_worker import check_evaluation_losing_its_worker, evaluating

SLURM = ROOT / "tests/slurm/local_slurm.sh"
SWISH = ROOT / "examples/swish_chain"
QUICK = ["--backend", "cpu", "--trials", "2", "--timing-budget", "0.3", "--timeout", "60",
         "--seed", "7", "--json"]
# The user's srun arguments, split as a shell would (the quoted words keep their blank).
HOST = "slurm:--partition=debug --time=30 --comment='openkernel test'"

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    state = tmp_path_factory.mktemp("slurm")
    ports = {"LOCAL_SLURM_CTLD_PORT": str(free_port()), "LOCAL_SLURM_SLURMD_PORT": str(free_port())}
    env = {**os.environ, **ports}
    p = subprocess.run(["bash", str(SLURM), "up", str(state)], capture_output=True, text=True,
                       timeout=900, env=env)
    if p.returncode == 3:
        pytest.skip(f"SLURM cannot be started here: {p.stderr.strip()[-300:]}")
    assert p.returncode == 0, p.stderr
    yield {"SLURM_CONF": p.stdout.strip().split("=", 1)[1]}
    subprocess.run(["bash", str(SLURM), "down", str(state)], capture_output=True, timeout=120,
                   env=env)


def env_for(home: Path, slurm: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"), **slurm)
    env.pop("OPENKERNEL_PYTHON", None)
    return env


def evaluate_args(db: Path, candidate: Path, *extra: str) -> list[str]:
    return ["evaluate", "--db", str(db), "--reference", str(SWISH / "reference.py"),
            "--candidate", str(candidate), "--python", PYTHON, *QUICK, *extra]


def run(home: Path, slurm: dict[str, str], *args: str,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BINARY), *args], capture_output=True, text=True, timeout=timeout,
                          env=env_for(home, slurm))


def our_jobs(slurm: dict[str, str]) -> list[str]:
    """The workers' jobs still pending, running or completing."""
    p = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True,
                       env={**os.environ, **slurm}, timeout=30, check=True)
    return [line for line in p.stdout.splitlines() if " openkernel-worker-" in line]


def no_jobs_within(slurm: dict[str, str], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not our_jobs(slurm):
            return True
        time.sleep(0.5)
    return False


def slurm_workers(home: Path) -> dict[int, str]:
    """Worker processes of this test (their cache is under `home`) by pid: their job id."""
    mark = f"OPENKERNEL_REMOTE_CACHE={home}/.cache/openkernel".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"openkernel_worker" in cmd and mark in env:
            job = [v.split(b"=", 1)[1] for v in env if v.startswith(b"SLURM_JOB_ID=")]
            found[int(entry.name)] = job[0].decode() if job else ""
    return found


def busy_worker(home: Path, timeout_s: float = 120) -> tuple[int, str]:
    """A worker of this test evaluating its slow candidate: (pid, job id)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid, job in slurm_workers(home).items():
            if evaluating(pid, SLOW):
                return pid, job
        time.sleep(0.1)
    raise AssertionError(f"no worker began evaluating {SLOW}")


SLOW = "slow_candidate.py"


def slow_candidate(tmp: Path) -> Path:
    slow = tmp / SLOW
    slow.write_text("import time\ntime.sleep(5)\n" + (SWISH / "candidate.py").read_text())
    return slow


def test_evaluate_in_an_allocation_equals_local(slurm: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    local = run(tmp_path, slurm, *evaluate_args(db, SWISH / "candidate.py"))
    assert local.returncode == 0, local.stderr
    remote = run(tmp_path, slurm, *evaluate_args(db, SWISH / "candidate.py", "--eval-host", HOST))
    assert remote.returncode == 0, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    for key in ("verdict", "correct", "valid", "compiled", "max_abs_error", "max_rel_error",
                "device", "backend", "flags"):
        assert a[key] == b[key], key
    assert b["candidate"]["path"] == str(SWISH / "candidate.py")
    assert b["phases_s"]["transfer"] >= 0
    # The package came down srun's channel into the node's cache, by hash.
    (shipped,) = (tmp_path / ".cache/openkernel").glob("worker-*")
    assert (shipped / "READY").is_file()
    assert no_jobs_within(slurm, 10), our_jobs(slurm)
    # A second run finds the package there (nothing sent) and still equals.
    again = run(tmp_path, slurm, *evaluate_args(db, SWISH / "candidate.py", "--eval-host", HOST))
    assert again.returncode == 0 and json.loads(again.stdout)["verdict"] == a["verdict"]
    assert no_jobs_within(slurm, 10), our_jobs(slurm)


def test_a_bad_srun_argument_is_refused_clearly(slurm: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    quote = run(tmp_path, slurm, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                 "slurm:--comment='open"))
    assert quote.returncode == 2 and "unclosed quote" in quote.stderr
    part = run(tmp_path, slurm, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                "slurm:--partition=nosuch"))
    assert part.returncode == 2 and "did not start" in part.stderr, part.stderr
    assert no_jobs_within(slurm, 10), our_jobs(slurm)


@pytest.mark.slow  # ~30 s; the ssh tests cover optimize over a remote worker by default
def test_optimize_in_an_allocation_equals_local(slurm: dict[str, str], tmp_path: Path) -> None:
    reports = []
    for where in ([], ["--eval-host", HOST]):
        home = tmp_path / ("remote" if where else "local")
        home.mkdir()
        p = run(home, slurm, "optimize", "--db", str(home / "db.sqlite"), "--reference",
                str(SWISH / "reference.py"), "--backend", "cpu", "--model", "builtin",
                "--iterations", "2", "--seed", "7", "--json", "--trials", "2", "--timing-budget",
                "0.3", "--python", PYTHON, "--out", str(home / "out"), *where)
        assert p.returncode == 0, p.stderr
        reports.append(json.loads(p.stdout.splitlines()[-1]))
    local, remote = reports
    assert [h["verdict"] for h in remote["history"]] == [h["verdict"] for h in local["history"]]
    assert [h["params"] for h in remote["history"]] == [h["params"] for h in local["history"]]
    assert remote["verdict"] == local["verdict"] == "correct"
    assert no_jobs_within(slurm, 10), our_jobs(slurm)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_the_allocation_ends_when_the_engine_is_killed(slurm: dict[str, str], tmp_path: Path,
                                                       sig: signal.Signals) -> None:
    engine = subprocess.Popen([str(BINARY), *evaluate_args(tmp_path / "db.sqlite",
                                                           slow_candidate(tmp_path), "--eval-host",
                                                           HOST)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env_for(tmp_path, slurm))
    try:
        worker, job = busy_worker(tmp_path)
        assert our_jobs(slurm) and job
    finally:
        engine.send_signal(sig)  # SIGINT: Ctrl-C
        code = engine.wait(60)
    assert code in ((130, -signal.SIGINT) if sig == signal.SIGINT else (-signal.SIGKILL,))
    assert no_jobs_within(slurm, 10), our_jobs(slurm)
    assert not slurm_workers(tmp_path)


def cancel_jobs(home: Path, slurm: dict[str, str], times: int, cancelled: list[str],
                stop: threading.Event) -> None:
    """scancel the worker's job `times` times, each once its worker evaluates the candidate."""
    while len(cancelled) < times and not stop.is_set():
        try:
            _, job = busy_worker(home, timeout_s=1)
        except AssertionError:
            continue
        if job not in cancelled:
            subprocess.run(["scancel", job], env={**os.environ, **slurm}, timeout=30)
            cancelled.append(job)


@pytest.mark.parametrize("cancels", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_a_cancelled_job_is_retried_once_then_remote_lost(slurm: dict[str, str], tmp_path: Path,
                                                          cancels: int) -> None:
    db = tmp_path / "db.sqlite"
    slow = slow_candidate(tmp_path)
    check_evaluation_losing_its_worker(
        cancels, functools.partial(cancel_jobs, tmp_path, slurm),
        lambda: run(tmp_path, slurm, *evaluate_args(db, slow, "--eval-host", HOST)), db, "slurm:")
    assert no_jobs_within(slurm, 10), our_jobs(slurm)


def test_slurm_chooses_the_gpu_not_the_engines_environment(slurm: dict[str, str],
                                                           tmp_path: Path) -> None:
    """The engine's CUDA_VISIBLE_DEVICES (a sweep slot's --gpus) is not passed to a worker in an
    allocation, whose GPUs SLURM chooses; srun (the real one, through a wrapper that records
    its words) is called without it."""
    log = tmp_path / "srun_words"
    wrapper = tmp_path / "srun"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {log}\nexec srun "$@"\n')
    wrapper.chmod(0o755)
    env = {**env_for(tmp_path, slurm), "CUDA_VISIBLE_DEVICES": "5",
           "OPENKERNEL_SRUN": str(wrapper)}
    p = subprocess.run([str(BINARY), *evaluate_args(tmp_path / "db.sqlite", SWISH / "candidate.py",
                                                    "--eval-host", HOST)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    words = log.read_text().splitlines()
    assert "OPENKERNEL_WORKER_WATCHDOG=1" in words
    assert not [w for w in words if w.startswith("CUDA_VISIBLE_DEVICES")], words
    assert no_jobs_within(slurm, 10), our_jobs(slurm)
