"""`openkernel optimize` records every engine event in the store's `events` table as it happens
(docs/store.md): a second connection follows the session while it runs, sees the same steps the
progress printer shows, and the model's text.

    /usr/bin/python3 -m pytest -q tests/integration/test_optimize_events.py
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from llm_stub import LlmStub

from locations import BINARY, PYTHON, ROOT
SWISH = ROOT / "examples/swish_chain"
QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "120"]
DIAGNOSIS = json.dumps({"bottleneck": "memory", "evidence": ["one read and one write"],
                        "suggestions": [{"action": "vectorise", "expected_gain": 0.1}],
                        "expected_gain": 0.1})
SESSION = "events-1"

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


def new_events(db_path: Path, after: int) -> list[tuple[int, str, int, int, str, str]]:
    """The session's events above id `after`, read on a connection of our own; none while the
    database or its events table does not exist yet."""
    if not db_path.exists():
        return []
    try:
        with sqlite3.connect(db_path, timeout=10) as db:
            return db.execute("SELECT id, kind, number, total, text, payload FROM events "
                              "WHERE session = ? AND id > ? ORDER BY id", (SESSION, after)).fetchall()
    except sqlite3.OperationalError:  # created but not migrated yet
        return []


def test_a_second_connection_follows_the_session_live(tmp_path: Path) -> None:
    reply = "One fused loop.\n```python\n" + (SWISH / "candidate.py").read_text() + "\n```\n"
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("OPENKERNEL_API_KEY", None)
    db_path = tmp_path / "db.sqlite"
    seen: list[tuple[int, str, int, int, str, str]] = []
    seen_while_running = 0
    with LlmStub(generator=[reply], critic=[DIAGNOSIS], latency_s=0.5) as stub:
        p = subprocess.Popen([str(BINARY), "optimize", "--db", str(db_path), "--session", SESSION,
                              "--reference", str(SWISH / "reference.py"), "--backend", "cpu",
                              "--model", "openai/stub-model", "--base-url", stub.base_url,
                              "--iterations", "2", "--in-flight", "1", "--json",
                              "--out", str(tmp_path / "out"), *QUICK],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 300
        while p.poll() is None and time.monotonic() < deadline:
            fresh = new_events(db_path, seen[-1][0] if seen else 0)
            if p.poll() is None:
                seen_while_running += len(fresh)
            seen += fresh
            time.sleep(0.05)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    seen += new_events(db_path, seen[-1][0] if seen else 0)
    kinds = [kind for _, kind, *_ in seen]
    # Followed live: the session's first steps were visible before it ended.
    assert seen_while_running >= 3, (seen_while_running, kinds)
    assert kinds[0] == "started" and kinds[1] == "strategy", kinds
    assert kinds[-1] == "stopped" and seen[-1][4] == "iterations", seen[-1]
    for kind in ("generating", "model_text", "evaluating", "attempt_finished", "search_decision"):
        assert kind in kinds, (kind, kinds)
    assert [e[0] for e in seen] == sorted(e[0] for e in seen)
    # The model's reply to each generation, whole (the stub does not stream).
    texts = [(number, text) for _, kind, number, _, text, _ in seen if kind == "model_text"]
    assert texts == [(1, reply), (2, reply)], texts
    finished = [json.loads(payload) for _, kind, _, _, _, payload in seen
                if kind == "attempt_finished"]
    assert [f["attempt"]["number"] for f in finished] == [1, 2]
    assert finished[0]["attempt"]["verdict"] == "correct"
    assert finished[-1]["best_speedup"] is not None and finished[-1]["cost_usd"] >= 0
    # The printer shows the same steps.
    assert err.count("generating (") == kinds.count("generating"), err
    assert err.count("evaluating: ") == kinds.count("evaluating"), err
    assert err.count("  search: ") == kinds.count("search_decision"), err
    report = json.loads([line for line in out.splitlines() if line.strip()][-1])
    assert report["session"] == SESSION
