"""`kernel-code sessions` lists a store's optimisation sessions, newest first, as a table or JSON;
a missing or unreadable store is exit 2 and is not created.

    /usr/bin/python3 -m pytest -q tests/integration/test_kernel_code_sessions.py
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from locations import BINARY

KERNEL_CODE = BINARY.with_name("kernel-code")

pytestmark = pytest.mark.skipif(not KERNEL_CODE.is_file(),
                                reason=f"no kernel-code binary at {KERNEL_CODE}")


def run(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("OPENKERNEL_DB", None)
    return subprocess.run([str(KERNEL_CODE), *args], capture_output=True, text=True, env=env,
                          timeout=60)


def new_store(tmp_path: Path) -> Path:
    """An empty store at the current schema, made by openkernel (which migrates on open)."""
    db = tmp_path / "store.db"
    p = subprocess.run([str(BINARY), "intents", "none", "--db", str(db)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and db.is_file(), p.stderr
    return db


def add_session(db: Path, sid: str, name: str, status: str, created: str, attempts: int,
                best: float | None) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO sessions(id, reference, name, backend, model, mode, status, "
                     "options, out_dir, best_speedup, cost_usd, created_at, updated_at) VALUES "
                     "(?, '/r.py', ?, 'cpu', 'builtin', 'fast', ?, '{}', '/out', ?, 0.5, ?, ?)",
                     (sid, name, status, best, created, created))
        for n in range(1, attempts + 1):
            conn.execute("INSERT INTO attempts(session, number, generator, verdict, correct, "
                         "params, description, wall_s) VALUES (?, ?, 'builtin', 'correct', 1, "
                         "'{}', '', 1.0)", (sid, n))


def test_lists_sessions_newest_first_as_a_table_and_as_json(tmp_path: Path) -> None:
    db = new_store(tmp_path)
    empty = run(["sessions", "--db", str(db)], tmp_path)
    assert empty.returncode == 0 and "no sessions in" in empty.stdout, empty
    add_session(db, "s-old", "relu", "finished", "2026-01-01T10:00:00.000Z", 3, 1.25)
    add_session(db, "s-new", "softmax", "stopped", "2026-01-02T10:00:00.000Z", 1, None)

    table = run(["sessions", "--db", str(db)], tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:5] == ["session", "problem", "backend", "model", "status"], lines
    assert lines[1].split()[:6] == ["s-new", "softmax", "cpu", "builtin", "stopped", "1"], lines
    assert lines[2].split()[:7] == ["s-old", "relu", "cpu", "builtin", "finished", "3", "1.250x"]
    assert "2026-01-01 10:00:00" in lines[2]

    listed = run(["sessions", "--db", str(db), "--json"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    j = json.loads(listed.stdout)
    assert j["db"] == str(db)
    assert [s["id"] for s in j["sessions"]] == ["s-new", "s-old"]
    old = j["sessions"][1]
    assert (old["attempts"], old["best_speedup"], old["status"]) == (3, 1.25, "finished")
    assert j["sessions"][0]["best_speedup"] is None

    one = run(["sessions", "--db", str(db), "--json", "--limit", "1"], tmp_path)
    assert [s["id"] for s in json.loads(one.stdout)["sessions"]] == ["s-new"]


def test_a_missing_or_unreadable_store_is_exit_2_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "store.db"
    p = run(["sessions", "--db", str(missing)], tmp_path)
    assert p.returncode == 2 and "no store at" in p.stderr, p
    assert not missing.exists() and not missing.parent.exists()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    p = run(["sessions", "--db", str(garbage)], tmp_path)
    assert p.returncode == 2 and "cannot read the store" in p.stderr, p
    p = run(["sessions", "--db", str(tmp_path), "--limit", "0"], tmp_path)
    assert p.returncode == 2, p
