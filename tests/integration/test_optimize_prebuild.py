"""Pre-builds in `openkernel optimize` (docs/search.md, "Pre-builds") on the CPU, with a local
model (llm_stub.py) answering load_inline C++ kernels of the same problem, several in flight.

Slow (each distinct kernel compiles, ~20-30 s here): the candidates waiting for the device are
built by the build worker, their evaluations find every unit in the cache (the result's
`inline_build`) and end correct; no process of the session is left afterwards, nor after Ctrl-C
in the middle of a pre-build.

    /usr/bin/python3 -m pytest -q -m slow tests/integration/test_optimize_prebuild.py
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from llm_stub import LlmStub

from locations import BINARY, FIXTURES, PYTHON, ROOT
SWISH = ROOT / "examples/swish_chain"
QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "300"]
CRITIC = json.dumps({"bottleneck": "memory", "evidence": ["one pass"],
                     "suggestions": [{"action": "vectorise", "expected_gain": 0.1}],
                     "expected_gain": 0.1})

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")]


def variants(tag: str, n: int) -> list[str]:
    """n distinct load_inline kernels (the grain size differs), one extension name."""
    base = (FIXTURES / "cand_swish_load_inline.py").read_text()
    assert "4096" in base
    return [f"Kernel {tag}{i}.\n```python\n" + base.replace("4096", str(1024 * (i + 2) + 7))
            + f"\n# {tag}{i}\n```\n" for i in range(n)]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdgcache")  # shared: the header is precompiled once


def session_env(tmp: Path, cache: Path) -> dict[str, str]:
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp / "config"),
           "XDG_CACHE_HOME": str(cache), "XDG_DATA_HOME": str(tmp / "data"),
           "OPENKERNEL_TEST_TAG": str(tmp), "OPENKERNEL_INLINE_BUILD": "1"}  # opt-in server
    env.pop("OPENKERNEL_API_KEY", None)
    return env


def args(tmp: Path, base_url: str, iterations: int) -> list[str]:
    return [str(BINARY), "optimize", "--db", str(tmp / "db.sqlite"), "--reference",
            str(SWISH / "reference.py"), "--backend", "cpu", "--model", "openai/stub-model",
            "--base-url", base_url, "--iterations", str(iterations), "--in-flight", "3",
            "--prebuild", "on", "--json", "--out", str(tmp / "out"), *QUICK]


def session_processes(tmp: Path) -> list[str]:
    """Live processes started for the session: tagged in their environment, or naming its
    folders on their command line (bwrap binds them)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            try:
                env = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            except OSError:
                env = ""
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and (f"OPENKERNEL_TEST_TAG={tmp}" in env or str(tmp) in cmd):
            found.append(f"{pid}: {cmd[:200]}")
    return found


def gone(tmp: Path, within_s: float = 15.0) -> list[str]:
    deadline = time.monotonic() + within_s
    while (left := session_processes(tmp)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def builds(db: Path, session: str) -> dict[int, Any]:
    rows = sqlite3.connect(db).execute(
        "SELECT a.number, e.result FROM attempts a JOIN evaluations e ON e.id = a.evaluation_id "
        "WHERE a.session = ?", (session,)).fetchall()
    return {n: json.loads(r) for n, r in rows}


def test_prebuilds_feed_the_evaluations(tmp_path: Path, cache: Path) -> None:
    with LlmStub(generator=variants("a", 3), critic=[CRITIC]) as stub:
        p = subprocess.run(args(tmp_path, stub.base_url, 3), capture_output=True, text=True,
                           timeout=1500, env=session_env(tmp_path, cache))
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert [h["verdict"] for h in report["history"]] == ["correct"] * 3, p.stderr
    pre = report["search"]["prebuild"]
    assert pre["slots"] >= 1 and pre["submitted"] >= 1, pre
    assert pre["status"].get("built", 0) >= 1, (pre, p.stderr)
    results = builds(tmp_path / "db.sqlite", report["session"])
    units = {n: r["inline_build"]["units"] for n, r in results.items() if r.get("inline_build")}
    assert len(units) == 3, results.keys()
    # A pre-built candidate's evaluation compiles nothing: every unit came from the cache.
    all_hits = [n for n, u in units.items() if u and set(u) <= {"hit", "hit_direct"}]
    assert len(all_hits) >= pre["status"]["built"], (units, pre)
    assert not gone(tmp_path), "processes left after the session"


def test_ctrl_c_during_a_prebuild_leaves_nothing(tmp_path: Path, cache: Path) -> None:
    with LlmStub(generator=variants("b", 3), critic=[CRITIC]) as stub:
        proc = subprocess.Popen(args(tmp_path, stub.base_url, 3), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=session_env(tmp_path, cache))
        deadline = time.monotonic() + 300
        while not any("openkernel-prebuild-" in p for p in session_processes(tmp_path)):
            assert proc.poll() is None and time.monotonic() < deadline, "no pre-build started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert json.loads(out.strip().splitlines()[-1])["status"] == "interrupted"
    assert not gone(tmp_path), "processes left after Ctrl-C"
    # A killed build may leave torch's baton; the next holder of the source's lock removes it
    # (python/tests/test_prebuild.py checks that an evaluation then does not wait on it).
