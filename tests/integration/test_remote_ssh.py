"""`--eval-host ssh://...` against a real OpenSSH server on loopback (docs/remote.md).

The module starts Debian's sshd on a free port of 127.0.0.1 with its own configuration, host key and
authorized key in a temporary folder, as the current user. sshd refuses to start as root without
its privilege-separation folder /run/sshd; where that is missing and we are root, sshd runs in a
private mount namespace with a fresh tmpfs on /run (`unshare --mount`), leaving the machine's /run
alone. The engine reaches it through OPENKERNEL_SSH, a wrapper running `ssh -F` with the test's own
client configuration (key, known hosts), so the user's ~/.ssh is neither read nor written; the
server's SetEnv points the host side's cache (the shipped worker, the staged files) into the same
temporary folder. Skips, saying why, only when sshd cannot be started here.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from locations import BINARY, PYTHON, ROOT

SSHD = "/usr/sbin/sshd"
SWISH = ROOT / "examples/swish_chain"
QUICK = ["--backend", "cpu", "--trials", "2", "--timing-budget", "0.3", "--timeout", "60",
         "--seed", "7", "--json"]

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


class Server:
    def __init__(self, root: Path, port: int, proc: subprocess.Popen[bytes]) -> None:
        self.root, self.port, self.proc = root, port, proc
        self.url = f"ssh://127.0.0.1:{port}"
        self.remote_cache = root / "remote-cache/openkernel"

    def env(self, home: Path) -> dict[str, str]:
        env = dict(os.environ, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
                   XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
                   OPENKERNEL_SSH=str(self.root / "ssh"))
        env.pop("OPENKERNEL_PYTHON", None)
        return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_configs(root: Path, port: int) -> None:
    for key in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / key)],
                       check=True)
    shutil.copy(root / "user_key.pub", root / "authorized_keys")
    (root / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {root}/host_key\n"
        f"AuthorizedKeysFile {root}/authorized_keys\nPidFile {root}/sshd.pid\nUsePAM no\n"
        "StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nAllowTcpForwarding no\nX11Forwarding no\n"
        f"SetEnv XDG_CACHE_HOME={root}/remote-cache\n")
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    (root / "ssh_config").write_text(
        f"Host *\n  User {user}\n  IdentityFile {root}/user_key\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {root}/known_hosts\n  StrictHostKeyChecking accept-new\n"
        "  LogLevel ERROR\n")
    wrapper = root / "ssh"
    wrapper.write_text(f"#!/bin/sh\nexec ssh -F {root}/ssh_config \"$@\"\n")
    wrapper.chmod(0o755)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not os.access(SSHD, os.X_OK) or shutil.which("ssh") is None:
        pytest.skip(f"no OpenSSH server at {SSHD} or no ssh client (scripts/setup.sh --tests)")
    root = tmp_path_factory.mktemp("sshd")
    port = free_port()
    write_configs(root, port)
    argv = [SSHD, "-D", "-e", "-f", str(root / "sshd_config")]
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        argv = ["unshare", "--mount", "sh", "-c",
                "mount -t tmpfs -o mode=0755 tmpfs /run && mkdir -m 0755 /run/sshd && exec "
                + " ".join(argv)]
    log = open(root / "sshd.log", "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    if proc.poll() is not None:
        pytest.skip(f"sshd cannot start here: {(root / 'sshd.log').read_text()[-500:]}")
    yield Server(root, port, proc)
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)


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


def test_eval_host_refused_clearly(sshd: Server, tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    bad = openkernel(sshd, tmp_path, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                    "ssh://-oProxyCommand=x"))
    assert bad.returncode == 2 and "cannot start with '-'" in bad.stderr
    slurm = openkernel(sshd, tmp_path, *evaluate_args(db, SWISH / "candidate.py", "--eval-host",
                                                      "slurm"))
    assert slurm.returncode == 2 and "not supported yet" in slurm.stderr
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


def kill_workers(server: Server, times: int, killed: list[int], stop: threading.Event,
                 delay_s: float = 1.0) -> None:
    """Kills the remote worker `times` times, each `delay_s` after it started a candidate
    process."""
    while len(killed) < times and not stop.is_set():
        for pid in remote_workers(server):
            if pid not in killed and has_children(pid):
                time.sleep(delay_s)
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.1)


@pytest.mark.parametrize("kills", [1, 2])
def test_worker_lost_mid_evaluation(sshd: Server, tmp_path: Path, kills: int) -> None:
    slow = tmp_path / "slow_candidate.py"
    slow.write_text("import time\ntime.sleep(4)\n" + (SWISH / "candidate.py").read_text())
    db = tmp_path / "db.sqlite"
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_workers, args=(sshd, kills, killed, stop))
    killer.start()
    try:
        p = openkernel(sshd, tmp_path, *evaluate_args(db, slow, "--eval-host", sshd.url))
    finally:
        stop.set()
        killer.join()
    assert len(killed) == kills
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT verdict, flags, reasons FROM evaluations").fetchall()
    assert len(rows) == 1
    if kills == 1:  # retried once on a fresh worker: the verdict as usual
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["verdict"] == "correct" and rows[0][0] == "correct"
    else:  # lost twice: recorded as the evaluator's failure, never as the candidate's
        assert p.returncode == 3, p.stderr
        assert "lost the evaluation worker on " + sshd.url in p.stderr
        assert rows[0][0] == "evaluator_error" and json.loads(rows[0][1]) == ["remote_lost"]
        assert "twice" in json.loads(rows[0][2])[0]


def optimize(server: Server, home: Path, *extra: str) -> dict:
    p = openkernel(server, home, "optimize", "--db", str(home / "db.sqlite"), "--reference",
                   str(SWISH / "reference.py"), "--backend", "cpu", "--model", "builtin",
                   "--iterations", "2", "--seed", "7", "--json", "--trials", "2",
                   "--timing-budget", "0.3", "--python", PYTHON, "--out", str(home / "out"),
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
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_workers, args=(sshd, 2, killed, stop, 0.2))
    killer.start()
    try:
        report = optimize(sshd, tmp_path, "--eval-host", sshd.url)
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 2
    first, second = report["history"]
    assert first["verdict"] == "evaluator_error" and "twice" in first["error"], first
    assert second["verdict"] == "correct", second  # on the worker started after the loss
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        rows = db.execute("SELECT a.verdict, e.verdict, e.flags FROM attempts a JOIN evaluations e "
                          "ON e.id = a.evaluation_id ORDER BY a.number").fetchall()
    assert rows[0] == ("evaluator_error", "evaluator_error", '["remote_lost"]')


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
