"""stage.py: the files the engine sends to a worker on another host (docs/remote.md)."""
from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

from openkernel_worker.__main__ import handle


def entry(name: str, raw: bytes, digest: str | None = None, data: str | None = None) -> dict:
    return {"name": name, "sha256": digest or hashlib.sha256(raw).hexdigest(),
            "data": base64.b64encode(raw).decode() if data is None else data}


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENKERNEL_REMOTE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_stage_keeps_files_by_content(root: Path) -> None:
    ref, cand = b"import torch\n", b"\xff not utf-8 \x00 bytes"
    r = handle({"op": "stage", "files": [entry("ref.py", ref), entry("cand.py", cand)]})
    assert r["ok"], r
    assert r["result"]["cache_dir"] == str(root)
    paths = [Path(p) for p in r["result"]["paths"]]
    assert paths[0] == root / "sources" / hashlib.sha256(ref).hexdigest() / "ref.py"
    assert [p.read_bytes() for p in paths] == [ref, cand]  # exact bytes, defects included
    assert (paths[0].stat().st_mode & 0o777) == 0o600
    assert (paths[0].parent.stat().st_mode & 0o777) == 0o700
    # Sent again: the copy is reused; a copy changed on disk is replaced.
    paths[1].write_bytes(b"tampered")
    again = handle({"op": "stage", "files": [entry("ref.py", ref), entry("cand.py", cand)]})
    assert again["result"]["paths"] == r["result"]["paths"]
    assert paths[1].read_bytes() == cand
    assert not [p for p in root.rglob(".stage-*")]


def test_stage_without_files_tells_the_cache(root: Path) -> None:
    r = handle({"op": "stage"})
    assert r == {"ok": True, "result": {"cache_dir": str(root), "paths": []}}


@pytest.mark.parametrize("bad, says", [
    (entry("../evil.py", b"x"), "plain file name"),
    (entry("a/b.py", b"x"), "plain file name"),
    (entry("..", b"x"), "plain file name"),
    (entry("ok.py", b"x", digest="ABC"), "64 lowercase hex"),
    (entry("ok.py", b"x", digest="0" * 64), "do not hash"),
    (entry("ok.py", b"x", data="***"), "not base64"),
    ({"name": "ok.py"}, "64 lowercase hex"),
    ("text", "must be an object"),
])
def test_stage_refuses_malformed_entries(root: Path, bad: object, says: str) -> None:
    r = handle({"op": "stage", "files": [bad]})
    assert not r["ok"] and r["error"]["kind"] == "bad_input", r
    assert says in r["error"]["message"]
    assert not root.exists() or not list(root.rglob("*.py"))


def test_stage_refuses_too_many_files(root: Path) -> None:
    r = handle({"op": "stage", "files": [entry(f"f{i}.py", b"x") for i in range(17)]})
    assert not r["ok"] and "at most 16" in r["error"]["message"]


def test_stage_unwritable_cache_is_environment(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("OPENKERNEL_REMOTE_CACHE", str(blocker))
    r = handle({"op": "stage", "files": [entry("ok.py", b"x")]})
    assert not r["ok"] and r["error"]["kind"] == "environment", r
    assert os.fspath(blocker) in r["error"]["message"]
