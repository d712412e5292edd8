"""kernel-code's terminal UI in a real terminal: each test starts a tmux server of its own, types
keys with send-keys and reads the screen with capture-pane (docs/kernel-code.md). The runs are
small on purpose (the builtin generator on the CPU, a small elementwise reference, few
iterations, short timing) so that the suite stays within a couple of minutes on two cores.

    /usr/bin/python3 -m pytest -q tests/integration/test_tui.py
"""
from __future__ import annotations

import datetime
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from locations import BINARY, PYTHON, ROOT

KERNEL_CODE = BINARY.with_name("kernel-code")
QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "120"]
# A small elementwise chain: the builtin generator's first points are correct and quick to build.
REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.clamp(x * torch.sigmoid(x) * self.scale, -1.0, 4.0)


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return [1.5]
'''
# The panels' titles (src/tui/panel_*.cpp): each must stay on screen at every size.
PANELS = ("Agent", "Trajectory", "Profiling", "Experiment log", "Kernel diff")

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None,
                       reason="tmux is not installed (scripts/setup.sh --tests installs it): the "
                              "terminal UI is tested in a real terminal through tmux"),
    pytest.mark.skipif(not KERNEL_CODE.is_file(), reason=f"no kernel-code binary at {KERNEL_CODE}"),
]


class Tmux:
    """One tmux server (its own socket) with one window running a shell."""

    def __init__(self, tmp: Path, width: int, height: int, env: dict[str, str]) -> None:
        self.socket = f"okt-{uuid.uuid4().hex[:10]}"
        self.tmp = tmp
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height),
                  f"env {exports} bash --norc --noprofile")
        self.tmux("set-option", "-g", "status", "off")
        self.wait_for(lambda s: s.strip().endswith(("$", "#")), "a shell prompt")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=True, timeout=30).stdout

    def run(self, command: str) -> Path:
        """Types `command` into the shell; its exit code goes to the returned file."""
        rc = self.tmp / f"rc-{uuid.uuid4().hex[:8]}"
        self.keys(f"clear; {command}; echo $? > {rc}", "Enter")
        return rc

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def screen_with_colours(self) -> str:
        return self.tmux("capture-pane", "-p", "-e", "-t", "t")

    def display(self, fmt: str) -> str:
        return self.tmux("display-message", "-p", "-t", "t", fmt).strip()

    def resize(self, width: int, height: int) -> None:
        self.tmux("resize-window", "-t", "t", "-x", str(width), "-y", str(height))

    def wait_for(self, ok: Callable[[str], bool], what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen()
            if ok(s):
                return s
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} within {timeout} s; the screen:\n{s}")
            time.sleep(0.1)

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def exit_code(rc: Path, timeout: float = 120) -> int:
    deadline = time.monotonic() + timeout
    while not rc.exists() or not rc.read_text().strip():
        assert time.monotonic() < deadline, f"the command did not end within {timeout} s"
        time.sleep(0.1)
    return int(rc.read_text())


def assert_restored(t: Tmux) -> None:
    """Normal screen, cursor visible, the tty's modes sane (canonical, echo, signals, CR/NL)."""
    assert t.display("#{alternate_on}") == "0"
    assert t.display("#{cursor_flag}") == "1"
    modes = t.tmp / "stty"
    t.keys(f"stty -a > {modes}", "Enter")
    deadline = time.monotonic() + 10
    while not modes.exists() or "icanon" not in modes.read_text():
        assert time.monotonic() < deadline, "stty did not answer"
        time.sleep(0.1)
    flags = set(modes.read_text().split())
    assert {"icanon", "echo", "isig", "icrnl", "opost", "onlcr"} <= flags, flags


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "reference.py").write_text(REFERENCE)
    return {"OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data"),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
            "TERM": "screen", "PS1": "$ "}


@pytest.fixture
def tmux_at(tmp_path: Path, env: dict[str, str]) -> Iterator[Callable[..., Tmux]]:
    started: list[Tmux] = []

    def start(width: int = 120, height: int = 40, **extra: str) -> Tmux:
        t = Tmux(tmp_path, width, height, {**env, **extra})
        started.append(t)
        return t

    yield start
    for t in started:
        t.kill()


def optimize_command(tmp: Path, *args: str, program: Path = KERNEL_CODE) -> str:
    return " ".join(shlex.quote(a) for a in [
        str(program), "optimize", "--db", str(tmp / "db.sqlite"), "--reference",
        str(tmp / "reference.py"), "--backend", "cpu", "--model", "builtin", "--seed", "7",
        "--out", str(tmp / "out"), *QUICK, *args])


def query(tmp: Path, sql: str, *params: object) -> list[tuple]:
    db = tmp / "db.sqlite"
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=10) as c:
            return c.execute(sql, params).fetchall()
    except sqlite3.OperationalError:  # created but not migrated yet
        return []


def recorded(tmp: Path, session: str) -> list[tuple[int, str, float | None]]:
    return query(tmp, "SELECT number, verdict, speedup FROM attempts WHERE session = ? "
                      "ORDER BY number", session)


def fits(screen: str, width: int, height: int) -> bool:
    lines = screen.splitlines()
    return len(lines) <= height and max(len(x) for x in lines) <= width


def readable(screen: str) -> None:
    for title in PANELS:
        assert title in screen, f"{title} is not on the screen:\n{screen}"


def test_optimize_shows_attempts_diff_resizes_and_q_leaves_it_resumable(
        tmp_path: Path, tmux_at: Callable[..., Tmux], env: dict[str, str]) -> None:
    t = tmux_at(120, 40)
    rc = t.run(optimize_command(tmp_path, "--iterations", "6", "--session", "tui-1"))
    # Attempts appear in the experiment log with their verdicts and speedups.
    t.wait_for(lambda s: len(recorded(tmp_path, "tui-1")) >= 2, "two recorded attempts", 240)
    first = recorded(tmp_path, "tui-1")[0]
    screen = t.wait_for(lambda s: "correct" in s and f"{first[2]:.2f}x" in s,
                        "a verdict and a speedup in the log", 10)
    readable(screen)
    # Selecting the first attempt shows its kernel in the diff (against the best, or alone when it
    # is the best): its template parameters' line, which differs between attempts.
    t.keys("Home")
    source = Path(query(tmp_path, "SELECT path FROM attempts WHERE session = ? AND number = 1",
                        "tui-1")[0][0]).read_text()
    params = next(x for x in source.splitlines() if x.startswith("# params:"))[:40]
    t.wait_for(lambda s: "Kernel diff · #1 " in s and params in s,
               "the selected attempt's kernel in the diff", 10)
    # Every panel stays readable at 80x24 and at 200x60.
    for width, height in ((80, 24), (200, 60)):
        t.resize(width, height)
        t.wait_for(lambda s: fits(s, width, height) and all(p in s for p in PANELS),
                   f"every panel at {width}x{height}", 10)
    # q ends the UI (exit 0) and leaves the terminal clean; the session resumes.
    t.keys("q")
    assert exit_code(rc) == 0
    assert_restored(t)
    done = len(recorded(tmp_path, "tui-1"))
    status = query(tmp_path, "SELECT status FROM sessions WHERE id = ?", "tui-1")[0][0]
    assert done == 6 or status == "interrupted", (done, status)
    p = subprocess.run([str(BINARY), "optimize", "--db", str(tmp_path / "db.sqlite"), "--resume",
                        "tui-1", "--iterations", str(done + 1), "--json"],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, **env})
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert [h["number"] for h in report["history"]] == list(range(1, done + 2))
    # A session run from kernel-code (and resumed from the CLI) exports like any other: one trace
    # row per attempt, with the verdicts the store recorded (docs/traces.md).
    out = tmp_path / "traces"
    x = subprocess.run([str(BINARY), "traces", "export", "--db", str(tmp_path / "db.sqlite"),
                        "--out", str(out), "--format", "jsonl"], capture_output=True, text=True,
                       timeout=300, env={**os.environ, **env})
    assert x.returncode == 0, x.stderr
    raw = list(out.glob("raw/*/session_tui-1.jsonl"))
    assert len(raw) == 1, sorted(str(f) for f in out.rglob("*"))
    rows = [json.loads(line) for line in raw[0].read_text().splitlines() if line.strip()]
    assert [r["attempt"] for r in rows] == list(range(1, done + 2))
    assert [r["verdict"] for r in rows] == [h["verdict"] for h in report["history"]]
    assert all(r["session_id"] == "tui-1" and r["backend"] == "cpu" for r in rows)


def test_pause_resume_and_stop_steer_the_run(tmp_path: Path, tmux_at: Callable[..., Tmux]) -> None:
    t = tmux_at(120, 40)
    rc = t.run(optimize_command(tmp_path, "--iterations", "20", "--session", "tui-2",
                                "--stop-at-sol", "10"))
    t.wait_for(lambda s: len(recorded(tmp_path, "tui-2")) >= 1, "a recorded attempt", 240)
    controls = ("SELECT text FROM events WHERE session = ? AND kind = 'control' ORDER BY id")
    t.keys("p")
    t.wait_for(lambda s: query(tmp_path, controls, "tui-2")[-1:] == [("paused",)],
               "a paused control event", 30)
    t.wait_for(lambda s: "paused" in s.lower(), "paused on the status bar", 10)
    # While paused no generation is issued: the attempts in flight end, then nothing new.
    time.sleep(3)
    issued = query(tmp_path, "SELECT COUNT(*) FROM events WHERE session = ? AND "
                             "kind = 'generating'", "tui-2")[0][0]
    time.sleep(3)
    assert query(tmp_path, "SELECT COUNT(*) FROM events WHERE session = ? AND "
                           "kind = 'generating'", "tui-2")[0][0] == issued
    t.keys("p")
    t.wait_for(lambda s: query(tmp_path, controls, "tui-2")[-1:] == [("running",)],
               "a running control event", 30)
    t.keys("s")
    stopped = "SELECT text FROM events WHERE session = ? AND kind = 'stopped'"
    t.wait_for(lambda s: query(tmp_path, stopped, "tui-2") == [("stopped",)],
               "the run stopped", 240)
    assert len(recorded(tmp_path, "tui-2")) < 20
    t.keys("q")
    assert exit_code(rc) == 0
    assert_restored(t)


def test_sigterm_and_ctrl_c_restore_the_terminal(tmp_path: Path,
                                                 tmux_at: Callable[..., Tmux]) -> None:
    t = tmux_at(100, 30)
    rc = t.run(optimize_command(tmp_path, "--iterations", "4", "--session", "tui-3"))
    t.wait_for(lambda s: len(recorded(tmp_path, "tui-3")) >= 1, "a recorded attempt", 240)
    os.kill(kernel_code_pid(t), 15)
    assert exit_code(rc) == 143
    assert_restored(t)
    assert query(tmp_path, "SELECT status FROM sessions WHERE id = ?", "tui-3") == [
        ("interrupted",)]
    # A resume in the UI shows the earlier runs' attempts too (from the store's events).
    first = recorded(tmp_path, "tui-3")[0]
    rc = t.run(optimize_command(tmp_path, "--resume", "tui-3"))
    t.wait_for(lambda s: log_row(s, 1, first[1]), "the earlier run's attempt", 30)
    t.keys("C-c")
    assert exit_code(rc) == 130
    assert_restored(t)


def test_an_engine_error_closes_the_ui_and_is_printed(tmp_path: Path,
                                                      tmux_at: Callable[..., Tmux]) -> None:
    t = tmux_at(100, 30)
    rc = t.run(optimize_command(tmp_path, "--iterations", "1").replace(
        shlex.quote(str(tmp_path / "reference.py")), shlex.quote(str(tmp_path / "missing.py"))))
    assert exit_code(rc) == 2
    assert_restored(t)
    assert "reference not found" in t.screen() and "missing.py" in t.screen()
    assert not list((tmp_path / "cache/openkernel/kernel-code").glob("*.log"))  # printed whole


def kernel_code_pid(t: Tmux) -> int:
    shell = int(t.display("#{pane_pid}"))
    out = subprocess.run(["pgrep", "-P", str(shell), "-x", "kernel-code"], capture_output=True,
                         text=True, timeout=10).stdout.split()
    assert out, "no kernel-code process under the pane's shell"
    return int(out[0])


def utc(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def test_watch_shows_a_new_attempt_within_2_s(tmp_path: Path, tmux_at: Callable[..., Tmux],
                                              env: dict[str, str]) -> None:
    run = subprocess.Popen(shlex.split(optimize_command(tmp_path, "--iterations", "3", "--session",
                                                        "tui-4", program=BINARY)),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, **env})
    try:
        deadline = time.monotonic() + 60
        while not query(tmp_path, "SELECT id FROM sessions WHERE id = 'tui-4'"):
            assert time.monotonic() < deadline and run.poll() is None, "the session did not start"
            time.sleep(0.05)
        t = tmux_at(120, 40)
        rc = t.run(" ".join([shlex.quote(str(KERNEL_CODE)), "watch", "tui-4", "--db",
                             shlex.quote(str(tmp_path / "db.sqlite"))]))
        t.wait_for(lambda s: "Experiment log" in s, "the UI", 30)
        shown: dict[int, float] = {}  # attempt number -> when the screen first showed it
        finished = ("SELECT number, time FROM events WHERE session = 'tui-4' AND "
                    "kind = 'attempt_finished' ORDER BY id")
        deadline = time.monotonic() + 300
        while len(shown) < 3 and time.monotonic() < deadline:
            screen, now = t.screen(), time.time()
            for number, verdict, _ in recorded(tmp_path, "tui-4"):
                if number not in shown and log_row(screen, number, verdict):
                    shown[number] = now
            time.sleep(0.05)
        events = dict(query(tmp_path, finished))
        assert set(shown) == {1, 2, 3}, (shown, t.screen())
        late = {n: shown[n] - utc(events[n]) for n in shown}
        assert all(d < 2.0 for d in late.values()), late
        run.wait(timeout=120)
        t.keys("q")
        assert exit_code(rc) == 0
        assert_restored(t)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def log_row(screen: str, number: int, verdict: str) -> bool:
    """The experiment log shows attempt `number` with its verdict: `│   3 correct ...` (a star
    marks the best)."""
    return re.search(rf"│\W{{0,2}} *{number} {verdict} ", screen) is not None


def test_watch_is_light_on_a_finished_session_and_honours_no_color_and_ascii(
        tmp_path: Path, tmux_at: Callable[..., Tmux], env: dict[str, str]) -> None:
    p = subprocess.run(shlex.split(optimize_command(tmp_path, "--iterations", "2", "--session",
                                                    "tui-5", program=BINARY)) + ["--json"],
                       capture_output=True, text=True, timeout=600, env={**os.environ, **env})
    assert p.returncode == 0, p.stderr
    watch = " ".join(shlex.quote(a) for a in [str(KERNEL_CODE), "watch", "tui-5", "--db",
                                             str(tmp_path / "db.sqlite")])
    t = tmux_at(120, 40)
    rc = t.run(watch)
    screen = t.wait_for(lambda s: "Experiment log" in s and "correct" in s, "the session", 30)
    assert colours(t.screen_with_colours()), "no colour on the screen"
    # Idle: the clocks tick, nothing else changes; under 5% of a core.
    pid = kernel_code_pid(t)
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    before, start = cpu(), time.monotonic()
    time.sleep(4)
    used = (cpu() - before) / (time.monotonic() - start)
    assert used < 0.05, f"{used:.1%} of a core while idle"
    t.keys("q")
    assert exit_code(rc) == 0
    # NO_COLOR: attributes only; a locale that is not UTF-8: ASCII only.
    t = tmux_at(120, 40, NO_COLOR="1", LANG="C", LC_ALL="C")
    rc = t.run(watch)
    screen = t.wait_for(lambda s: "Experiment log" in s and "correct" in s, "the session", 30)
    assert not colours(t.screen_with_colours())
    assert all(ord(c) < 128 for c in screen), [c for c in screen if ord(c) >= 128][:10]
    t.keys("q")
    assert exit_code(rc) == 0
    assert_restored(t)


def colours(screen: str) -> set[str]:
    """The colours that the screen's SGR sequences set (39 and 49, the defaults, are not)."""
    found: set[str] = set()
    for params in re.findall(r"\x1b\[([0-9;]*)m", screen):
        codes = params.split(";")
        for i, code in enumerate(codes):
            if code in ("38", "48"):  # 256-colour or RGB: a colour, whatever follows
                found.add(";".join(codes[i:]))
                break
            if code.isdigit() and (30 <= int(code) <= 37 or 40 <= int(code) <= 47 or
                                   90 <= int(code) <= 97 or 100 <= int(code) <= 107):
                found.add(code)
    return found


def test_refusals(tmp_path: Path, env: dict[str, str]) -> None:
    e = {**os.environ, **env}
    p = subprocess.run(shlex.split(optimize_command(tmp_path, "--iterations", "1")),
                       capture_output=True, text=True, timeout=60, env=e)
    assert p.returncode == 2 and "openkernel optimize" in p.stderr, p.stderr
    p = subprocess.run(shlex.split(optimize_command(tmp_path, "--iterations", "1", "--json")),
                       capture_output=True, text=True, timeout=60, env=e)
    assert p.returncode == 2 and "--json" in p.stderr and "openkernel optimize" in p.stderr
    p = subprocess.run([str(KERNEL_CODE), "watch", "s-none", "--db", str(tmp_path / "db.sqlite")],
                       capture_output=True, text=True, timeout=60, env=e)
    assert p.returncode == 2 and "s-none" in p.stderr, p.stderr
