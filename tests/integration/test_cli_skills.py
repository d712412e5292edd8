"""`openkernel skills` and the library in optimize, through the CLI: the seeds of a fresh store,
export and import round trips, refused files (exit 2, the store unchanged), prune, and a model
session's winning technique on one problem in the prompt of the next session on a similar one
(the local model stub, llm_stub.py), with `--no-skills` leaving it out.

    /usr/bin/python3 -m pytest -q tests/integration/test_cli_skills.py
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from llm_stub import LlmStub

from locations import BINARY, PYTHON, ROOT

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")
SWISH = ROOT / "examples/swish_chain"
QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "120"]


def env(tmp: Path) -> dict[str, str]:
    e = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp / "config"),
         "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_DATA_HOME": str(tmp / "data")}
    e.pop("OPENKERNEL_API_KEY", None)
    return e


def ok(tmp: Path, *args: str | Path, db: str = "db.sqlite",
       timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BINARY), *map(str, args), "--db", str(tmp / db)],
                          capture_output=True, text=True, timeout=timeout, env=env(tmp))


def table(tmp: Path, db: str = "db.sqlite") -> list[tuple[Any, ...]]:
    con = sqlite3.connect(tmp / db)
    rows = con.execute("SELECT * FROM skills ORDER BY id").fetchall()
    rows += con.execute("SELECT * FROM skill_evidence ORDER BY id").fetchall()
    con.close()
    return rows


def test_fresh_store_lists_seeds_and_export_import_round_trips(tmp_path: Path) -> None:
    p = ok(tmp_path, "skills", "list", "--json")
    assert p.returncode == 0, p.stderr
    seeds = json.loads(p.stdout)["skills"]
    assert len(seeds) >= 6 and all(s["provenance"] == "seed" for s in seeds)
    assert {s["signature"]["backend"] for s in seeds} == {"cpu", "triton", "cuda"}
    out = tmp_path / "lib.json"
    p = ok(tmp_path, "skills", "export", "--out", out)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["format"] == "openkernel-skills" and doc["version"] == 1
    p = ok(tmp_path, "skills", "import", out, "--json", db="other.sqlite")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["added"] == len(seeds)
    again = tmp_path / "again.json"
    assert ok(tmp_path, "skills", "export", "--out", again, db="other.sqlite").returncode == 0
    strip = lambda d: {k: v for k, v in d.items() if k != "exported_at"}  # noqa: E731
    assert strip(json.loads(again.read_text())) == strip(doc)
    p = ok(tmp_path, "skills", "show", seeds[0]["id"][:10])
    assert p.returncode == 0 and seeds[0]["id"] in p.stdout, p.stderr


@pytest.mark.parametrize("content,needle", [
    ("{not json", "is not JSON"),
    ('{"format": "openkernel-skills", "version": 9, "skills": []}', "version 9"),
    ('{"format": "something", "version": 1, "skills": []}', "not a skills file"),
    ('{"format": "openkernel-skills", "version": 1, "skills": [{"id": "sk-1"}]}', "skill 1"),
])
def test_bad_files_exit_2_and_change_nothing(tmp_path: Path, content: str, needle: str) -> None:
    assert ok(tmp_path, "skills", "list").returncode == 0
    before = table(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    p = ok(tmp_path, "skills", "import", bad)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr and "openkernel: error:" in p.stderr
    assert table(tmp_path) == before
    missing = ok(tmp_path, "skills", "import", tmp_path / "nope.json")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert ok(tmp_path, "skills", "show", "sk-none").returncode == 2
    assert ok(tmp_path, "skills", "prune", "--min-confidence", "2").returncode == 2


def test_prune_removes_only_skills_below_the_floor(tmp_path: Path) -> None:
    assert ok(tmp_path, "skills", "list").returncode == 0
    p = ok(tmp_path, "skills", "prune", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["removed"] == []  # seeds sit at 0.5
    p = ok(tmp_path, "skills", "prune", "--min-confidence", "0.6", "--json")
    assert len(json.loads(p.stdout)["removed"]) >= 6
    assert json.loads(ok(tmp_path, "skills", "list", "--json").stdout)["skills"] == []


def optimize(tmp: Path, stub: LlmStub, *args: str) -> dict[str, Any]:
    p = ok(tmp, "optimize", "--model", "openai/stub-model", "--base-url", stub.base_url,
           "--backend", "cpu", "--iterations", "1", "--in-flight", "1", "--json", *QUICK, *args,
           timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_winning_technique_reaches_the_prompt_of_a_similar_problem(tmp_path: Path) -> None:
    good = (SWISH / "candidate.py").read_text()
    win = f"SWISH-FUSION: one fused OpenMP loop over the tensor.\n```python\n{good}\n```\n"
    diagnosis = json.dumps({"bottleneck": "memory", "evidence": ["one pass"], "suggestions": [],
                            "expected_gain": 0.0})
    with LlmStub(generator=[win], critic=[diagnosis]) as stub:
        a = optimize(tmp_path, stub, "--reference", str(SWISH / "reference.py"), "--set",
                     "dim=1024", "--out", str(tmp_path / "a"))
        b = optimize(tmp_path, stub, "--reference", str(SWISH / "reference.py"), "--set",
                     "dim=2048", "--out", str(tmp_path / "b"))
        c = optimize(tmp_path, stub, "--reference", str(SWISH / "reference.py"), "--set",
                     "dim=2048", "--out", str(tmp_path / "c"), "--no-skills")
        prompts = stub.prompts("generator")
    assert a["verdict"] == "correct", a
    learned = a["search"]["skills"]["learned"]
    assert learned and learned["new"], a["search"]
    assert "SWISH-FUSION" not in prompts[0].split("Skills learnt in earlier sessions")[-1]
    assert "SWISH-FUSION: one fused OpenMP loop" in prompts[1]
    assert learned["id"] in prompts[1]
    used = {u["id"]: u for u in b["search"]["skills"]["used"]}
    # helped when B's kernel beat eager, neutral when the loaded CPU timed it slower: never pending
    assert used[learned["id"]]["outcome"] in ("helped", "neutral")
    assert "Skills learnt in earlier sessions" not in prompts[2]  # --no-skills
    assert "skills" not in c["search"]
    show = ok(tmp_path, "skills", "show", learned["id"], "--json")
    evidence = json.loads(show.stdout)["evidence"]
    assert {e["session"] for e in evidence} == {a["session"], b["session"]}
    intents = ok(tmp_path, "intents", b["session"])
    assert learned["id"] in intents.stdout and used[learned["id"]]["outcome"] in intents.stdout
    assert "## Skills" in (tmp_path / "b/report.md").read_text()


def test_a_builtin_session_starts_where_a_similar_one_won(tmp_path: Path) -> None:
    def builtin(out: str, *args: str) -> dict[str, Any]:
        p = ok(tmp_path, "optimize", "--reference", str(SWISH / "reference.py"), "--backend",
               "cpu", "--model", "builtin", "--search", "prior", "--json", "--seed", "1",
               "--out", str(tmp_path / out), *QUICK, *args, timeout=600)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.strip().splitlines()[-1])
    a = builtin("a", "--set", "dim=1024", "--iterations", "8", "--stop-at-sol", "2")
    best = a["history"][a["best_attempt"] - 1]["params"]
    learned = a["search"]["skills"]["learned"]
    assert learned is not None, a["search"]
    b = builtin("b", "--set", "dim=2048", "--iterations", "1")
    first = {k: v for k, v in b["history"][0]["params"].items() if k != "intent"}
    assert first == {k: v for k, v in best.items() if k != "intent"}
    assert b["search"]["skills"]["used"][0]["id"] == learned["id"]
    # The skill is a seeded intent of B's world model, tested by B's first attempt, with the
    # skill's outcome once B finished; `intents` names it.
    tree = json.loads(ok(tmp_path, "intents", b["session"], "--json").stdout)
    seeded = [i for i in tree["intents"] if i["source"] == "skill"]
    mine = [i for i in seeded if i["action"]["skill"] == learned["id"]]
    assert len(mine) == 1, seeded
    assert mine[0]["parent"] == 0 and mine[0]["evidence"] == [1], mine[0]
    assert mine[0]["action"]["point"] == 0
    outcome = b["search"]["skills"]["used"][0]["outcome"]
    assert mine[0]["action"]["outcome"] == outcome and f"skill {outcome}" in mine[0]["note"]
    assert 0 < mine[0]["confidence"] <= 1
    text = ok(tmp_path, "intents", b["session"]).stdout
    assert f"skill {learned['id']}" in text
