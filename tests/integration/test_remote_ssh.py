"""`--eval-host ssh://...` against a real OpenSSH server on loopback (docs/remote.md).

The module starts Debian's sshd on loopback with a throwaway key (loopback_sshd.py, which says how)
and skips, saying why, only when sshd cannot be started here.
"""
from __future__ import annotations

import functools
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from locations import BINARY, PYTHON, ROOT
from lost_worker import check_evaluation_losing_its_worker, descendants, evaluating
from loopback_sshd import Server, check_login_time, free_port, serve

SWISH = ROOT / "examples/swish_chain"
HERE = Path(__file__).resolve().parent
QUICK = ["--backend", "cpu", "--trials", "2", "--timing-budget", "0.3", "--timeout", "60",
         "--seed", "7", "--json"]

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    for server in serve(tmp_path_factory.mktemp("sshd")):
        if isinstance(server, str):
            pytest.skip(server)
        yield server


def openkernel(server: Server, home: Path, *args: str,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BINARY), *args], capture_output=True, text=True, timeout=timeout,
                          env=server.env(home))


def evaluate_args(db: Path, candidate: Path, *extra: str) -> list[str]:
    return ["evaluate", "--db", str(db), "--reference", str(SWISH / "reference.py"),
            "--candidate", str(candidate), "--python", PYTHON, *QUICK, *extra]


def test_evaluate_over_ssh_equals_local(sshd: Server, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    local = openkernel(sshd, tmp_path, *evaluate_args(db, SWISH / "candidate.py"))
    assert local.returncode == 0, local.stderr
    remote = openkernel(sshd, tmp_path, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                       sshd.url))
    assert remote.returncode == 0, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    for key in ("verdict", "correct", "valid", "compiled", "max_abs_error", "max_rel_error",
                "device", "backend", "flags"):
        assert a[key] == b[key], key
    # The engine's paths come back in place of the host's staged copies.
    assert b["problem"]["path"] == str(SWISH / "reference.py")
    assert b["candidate"]["path"] == str(SWISH / "candidate.py")
    assert b["problem"]["source_hash"] == a["problem"]["source_hash"]
    assert b["phases_s"]["transfer"] >= 0 and "transfer" not in a["phases_s"]
    # Shipped once, by hash; the sources kept by content on the host.
    shipped = list(sshd.remote_cache.glob("worker-*"))
    assert len(shipped) == 1 and (shipped[0] / "READY").is_file()
    assert (shipped[0] / "python/openkernel_worker/__main__.py").is_file()
    assert (shipped[0] / "data/skills/elementwise_ops.json").is_file()
    assert {p.name for p in sshd.remote_cache.glob("sources/*/*.py")} == {"reference.py",
                                                                           "candidate.py"}
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT verdict, candidate_id FROM evaluations ORDER BY id").fetchall()
    assert len(rows) == 2 and rows[0] == rows[1]  # same verdict, same candidate row


@pytest.mark.parametrize("login", ["exit 0", "sleep 3"])
def test_a_slow_login_fails_the_server_at_once_saying_why(tmp_path: Path, login: str) -> None:
    # The check times the server's own ssh wrapper; here a stand-in for it that logs in quickly or
    # slowly, against a 1 s limit.
    wrapper = tmp_path / "ssh"
    wrapper.write_text(f"#!/bin/sh\n{login}\n")
    wrapper.chmod(0o755)
    server = Server(tmp_path, free_port(), None)
    if login == "exit 0":
        check_login_time(server, limit_s=1)
        return
    with pytest.raises(RuntimeError, match=r"one login on the loopback sshd took 3 s .*startup"):
        check_login_time(server, limit_s=1)


def test_eval_host_refused_clearly(sshd: Server, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    bad = openkernel(sshd, tmp_path, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                    "ssh://-oProxyCommand=x"))
    assert bad.returncode == 2 and "cannot start with '-'" in bad.stderr
    scheme = openkernel(sshd, tmp_path, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                       "http://gpu1"))
    assert scheme.returncode == 2 and "only ssh:// hosts and slurm" in scheme.stderr
    closed = openkernel(sshd, tmp_path, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                       f"ssh://127.0.0.1:{free_port()}"))
    assert closed.returncode == 2 and "cannot reach the evaluation host" in closed.stderr


def remote_workers(server: Server) -> list[int]:
    """Worker processes started by this sshd (their environment names its host cache)."""
    mark = f"OPENKERNEL_REMOTE_CACHE={server.remote_cache}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            if b"openkernel_worker" in cmd and mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def has_children(pid: int) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    except OSError:
        return False


def kill_workers(server: Server, older: set[int], name: str, times: int, killed: list[int],
                 stop: threading.Event, delay_s: float = 1.0) -> None:
    """Kills the remote worker `times` times, each `delay_s` after it began evaluating the
    candidate file `name`. Workers in `older` (those running before the test's engine started)
    are left alone: an earlier test's worker may still be shutting down after its engine exited,
    and killing it instead of the engine's own would leave one loss fewer."""
    while len(killed) < times and not stop.is_set():
        for pid in remote_workers(server):
            if pid not in killed and pid not in older and evaluating(pid, name):
                time.sleep(delay_s)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # it ended meanwhile: not a loss
                    continue
                killed.append(pid)
        time.sleep(0.1)


@pytest.mark.parametrize("kills", [1, 2])
def test_worker_lost_mid_evaluation(sshd: Server, tmp_path: Path, kills: int) -> None:
    slow = tmp_path / "slow_candidate.py"
    slow.write_text("import time\ntime.sleep(4)\n" + (SWISH / "candidate.py").read_text())
    db = tmp_path / "db.sqlite"
    check_evaluation_losing_its_worker(
        kills, functools.partial(kill_workers, sshd, set(remote_workers(sshd)), slow.name),
        lambda: openkernel(sshd, tmp_path, *evaluate_args(db, slow, "--eval-host", sshd.url)), db,
        sshd.url)


def running(pid: int) -> bool:
    try:
        return (Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z")
    except OSError:
        return False


def gone_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(running(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def busy_remote_worker(server: Server, name: str | None = None,
                       timeout_s: float = 120) -> list[int]:
    """A remote worker evaluating the candidate file `name` (any worker with a child process
    when None), and everything below it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in remote_workers(server):
            if evaluating(pid, name) if name else has_children(pid):
                return [pid, *descendants(pid)]
        time.sleep(0.1)
    raise AssertionError(f"no remote worker began evaluating {name}" if name else
                         "no remote worker started a candidate")


def test_a_dropped_channel_leaves_no_worker_on_the_host(sshd: Server, tmp_path: Path) -> None:
    # The engine's ssh is killed mid-evaluation: the host's worker and its candidate stop (the
    # worker's watchdog; the engine's stop command before its retry), and the retry's worker
    # ends with the engine.
    slow = tmp_path / "slow_candidate.py"
    slow.write_text("import time\ntime.sleep(5)\n" + (SWISH / "candidate.py").read_text())
    engine = subprocess.Popen([str(BINARY), *evaluate_args(tmp_path / "db.sqlite", slow,
                                                           "--eval-host", sshd.url)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=sshd.env(tmp_path))
    first = busy_remote_worker(sshd, slow.name)
    for pid in descendants(engine.pid):
        if Path(f"/proc/{pid}/comm").read_text().strip() == "ssh":
            os.kill(pid, signal.SIGKILL)
    assert gone_within(first, 5), [p for p in first if running(p)]
    out, err = engine.communicate(timeout=300)
    assert engine.returncode == 0, err
    assert json.loads(out)["verdict"] == "correct"
    assert gone_within(remote_workers(sshd), 5)


def test_a_killed_engine_leaves_no_worker_on_the_host(sshd: Server, tmp_path: Path) -> None:
    slow = tmp_path / "slow_candidate.py"
    slow.write_text("import time\ntime.sleep(30)\n" + (SWISH / "candidate.py").read_text())
    engine = subprocess.Popen([str(BINARY), *evaluate_args(tmp_path / "db.sqlite", slow,
                                                           "--eval-host", sshd.url)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=sshd.env(tmp_path))
    worker = busy_remote_worker(sshd, slow.name)
    engine.kill()
    engine.wait()
    assert gone_within(worker + remote_workers(sshd), 5), [p for p in worker if running(p)]


def optimize(server: Server, home: Path, *extra: str, python: str = PYTHON) -> dict:
    p = openkernel(server, home, "optimize", "--db", str(home / "db.sqlite"), "--reference",
                   str(SWISH / "reference.py"), "--backend", "cpu", "--model", "builtin",
                   "--iterations", "2", "--seed", "7", "--json", "--trials", "2",
                   "--timing-budget", "0.3", "--python", python, "--out", str(home / "out"),
                   *extra, timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_optimize_over_ssh_equals_local(sshd: Server, tmp_path: Path) -> None:
    (tmp_path / "local").mkdir()
    (tmp_path / "remote").mkdir()
    local = optimize(sshd, tmp_path / "local")
    remote = optimize(sshd, tmp_path / "remote", "--eval-host", sshd.url)
    assert [h["verdict"] for h in remote["history"]] == [h["verdict"] for h in local["history"]]
    assert [h["params"] for h in remote["history"]] == [h["params"] for h in local["history"]]
    assert remote["verdict"] == local["verdict"] == "correct"


def test_optimize_goes_on_after_losing_the_host_twice(sshd: Server, tmp_path: Path) -> None:
    # The host's Python is a stand-in (lossy_python.py) that loses the first two workers with an
    # evaluation in flight: the first attempt's, then its retry on the fresh worker.
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nexec {PYTHON} {HERE / 'lossy_python.py'} "
                      f"{tmp_path / 'launches'} 2 {PYTHON} \"$@\"\n")
    python.chmod(0o755)
    report = optimize(sshd, tmp_path, "--eval-host", sshd.url, python=str(python))
    assert (tmp_path / "launches").read_text() == "3"  # two lost, the third kept
    first, second = report["history"]
    assert first["verdict"] == "evaluator_error" and "twice" in first["error"], first
    assert second["verdict"] == "correct", second  # on the worker started after the loss
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        rows = db.execute("SELECT a.verdict, e.verdict, e.flags FROM attempts a JOIN evaluations e "
                          "ON e.id = a.evaluation_id ORDER BY a.number").fetchall()
    assert rows[0] == ("evaluator_error", "evaluator_error", '["remote_lost"]')


def attempts(db: Path) -> list[tuple]:
    try:
        with sqlite3.connect(db, timeout=30) as c:
            return c.execute("SELECT a.number, a.verdict, a.evaluation_id, a.path, e.flags "
                             "FROM attempts a LEFT JOIN evaluations e ON e.id = a.evaluation_id "
                             "ORDER BY a.number").fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []


def test_optimize_resumes_after_the_host_was_lost(tmp_path: Path) -> None:
    # A host of its own goes down mid-session (its sshd stops, its worker is killed): the attempt
    # is recorded as remote_lost and the session stops; with the host back, --resume finishes the
    # session and everything recorded before is kept as it was.
    (tmp_path / "host").mkdir()
    (tmp_path / "home").mkdir()
    home, db = tmp_path / "home", tmp_path / "home/db.sqlite"
    down = serve(tmp_path / "host")
    server = next(down)
    if isinstance(server, str):
        pytest.skip(server)
    common = ["--db", str(db), "--json", "--python", PYTHON, "--eval-host", server.url]
    engine = subprocess.Popen(
        [str(BINARY), "optimize", "--reference", str(SWISH / "reference.py"), "--backend", "cpu",
         "--model", "builtin", "--iterations", "3", "--seed", "7", "--trials", "2",
         "--timing-budget", "0.3", "--out", str(home / "out"),
         "--stop-at-sol", "2", *common],  # all 3 attempts, however loaded the machine
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=server.env(home))
    deadline = time.monotonic() + 300
    while not attempts(db) and time.monotonic() < deadline:
        time.sleep(0.2)
    busy_remote_worker(server)
    down.close()  # the listener stops: no fresh worker can connect
    for pid in remote_workers(server):
        os.kill(pid, signal.SIGKILL)
    out, err = engine.communicate(timeout=300)
    stopped = json.loads(out.splitlines()[-1])
    assert stopped["stop_reason"] == "error" and "could not be restarted" in stopped["error"], err
    before = attempts(db)
    assert before[-1][1] == "evaluator_error" and before[-1][4] == '["remote_lost"]', before
    assert len(before) < 3 and all(a[1] == "correct" for a in before[:-1]), before
    with sqlite3.connect(db) as c:
        (session,) = c.execute("SELECT id FROM sessions").fetchone()
    up = serve(tmp_path / "host")
    assert not isinstance(next(up), str)
    try:
        p = openkernel(server, home, "optimize", "--resume", session, *common, timeout=600)
    finally:
        up.close()
    assert p.returncode == 0, p.stderr
    after = attempts(db)
    assert after[:len(before)] == before and len(after) == 3, after
    report = json.loads(p.stdout.splitlines()[-1])
    assert report["verdict"] == "correct" and len(report["history"]) == 3
    assert report["session"] == stopped["session"] and report["stop_reason"] == "iterations"


MINIBENCH = Path(__file__).resolve().parent / "fixtures/minibench"


def test_baseline_over_ssh_from_the_config_file(sshd: Server, tmp_path: Path) -> None:
    config = tmp_path / ".config/openkernel/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'eval_host = "{sshd.url}"\n')
    p = openkernel(sshd, tmp_path, "baseline", "--db", str(tmp_path / "db.sqlite"), "--level", "1",
                   "--problems", "1", "--kernelbench-dir", str(MINIBENCH), "--backend", "cpu",
                   "--timing-budget", "0.3", "--no-compile", "--python", PYTHON, "--json")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout.strip().splitlines()[-1])["baselines"]
    assert row["problem_id"] == 1 and row["eager_us"] > 0
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        (result,) = db.execute("SELECT result FROM baselines").fetchone()
    # Evaluated over ssh; the engine's path, not the host's staged copy, is what the store keeps.
    assert json.loads(result)["phases_s"]["transfer"] >= 0
    assert json.loads(result)["problem"]["path"].startswith(str(MINIBENCH))


@pytest.mark.slow  # ~20 s; the flag's path to each slot's optimize
def test_sweep_spreads_problems_over_eval_hosts(sshd: Server, tmp_path: Path) -> None:
    # The one loopback host named twice: two slots, each problem's optimize evaluating over ssh.
    p = openkernel(sshd, tmp_path, "sweep", "--db", str(tmp_path / "db.sqlite"), "--level", "1",
                   "--problems", "1-2", "--kernelbench-dir", str(MINIBENCH), "--backend", "cpu",
                   "--model", "builtin", "--iterations", "1", "--trials", "2", "--timing-budget",
                   "0.3", "--python", PYTHON, "--output", str(tmp_path / "r/s.tsv"), "--json",
                   "--eval-host", sshd.url, "--eval-host", sshd.url, timeout=900)
    assert p.returncode in (0, 1), p.stderr
    starts = [line for line in p.stderr.splitlines() if " start " in line]
    assert len(starts) == 2 and all(sshd.url in line for line in starts), p.stderr
    rows = (tmp_path / "r/s.tsv").read_text().splitlines()[1:]
    assert len(rows) == 2
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        n = db.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
    assert n >= 2
