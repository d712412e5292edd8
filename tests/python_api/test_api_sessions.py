"""openkernel.optimize with its events, sweep, score and problems.load, against what the CLI and
the store say for the same run."""
from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

import openkernel
from conftest import BINARY, FIXTURES, QUICK, SWISH

BENCH = FIXTURES / "minibench"
COLUMNS = ["level", "problem_id", "name", "backend", "model", "correct", "runtime_us", "eager_us",
           "compile_us", "speedup_eager", "speedup_compile", "attempts", "cost_usd", "verdict",
           "flags"]


def test_optimize_reports_and_streams_the_events_the_store_records(tmp_path: Path) -> None:
    events: list[openkernel.Event] = []
    db = tmp_path / "db.sqlite"
    report = openkernel.optimize(reference=SWISH / "reference.py", model="builtin", iterations=1,
                                 backend="cpu", out=str(tmp_path / "out"), db=str(db), seed=5,
                                 no_compile_baseline=True, on_event=events.append, **QUICK)
    assert isinstance(report, openkernel.Report)
    assert report.status == "finished" and report.attempts == 1 and report.model == "builtin"
    assert report.to_dict() == json.loads(Path(report.report_json).read_text())
    assert len(report.history) == 1 and report.history[0].number == 1
    kinds = [e.kind for e in events]
    assert kinds[0] == "started" and kinds[-1] == "stopped"
    assert {"generating", "evaluating", "attempt_finished"} <= set(kinds)
    finished = next(e for e in events if e.kind == "attempt_finished")
    assert finished.attempt is not None and finished.attempt["verdict"] == report.history[0].verdict
    assert finished.standing is not None and finished.standing.recorded == 1
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT kind, number, total, text, payload FROM events WHERE session = ? "
                         "ORDER BY id", (report.session,)).fetchall()
    assert [(e.kind, e.number, e.total, e.text, e.payload) for e in events] == \
        [(k, n, t, x, json.loads(p)) for k, n, t, x, p in rows]


def test_a_callback_that_raises_stops_the_session_resumably(tmp_path: Path) -> None:
    class Stop(Exception):
        pass

    def on_event(e: openkernel.Event) -> None:
        if e.kind == "strategy":
            raise Stop("enough")

    db = tmp_path / "db.sqlite"
    with pytest.raises(Stop, match="enough"):
        openkernel.optimize(reference=SWISH / "reference.py", model="builtin", iterations=3,
                            backend="cpu", out=str(tmp_path / "out"), db=str(db), session="s-1",
                            no_compile_baseline=True, on_event=on_event, **QUICK)
    report = json.loads((tmp_path / "out/report.json").read_text())
    assert report["status"] == "interrupted" and report["attempts"] < 3


def test_optimize_bad_input(tmp_path: Path) -> None:
    with pytest.raises(openkernel.BadInput, match="reference not found"):
        openkernel.optimize(reference=tmp_path / "nope.py", model="builtin", db=str(tmp_path / "d"))
    with pytest.raises(openkernel.BadInput, match="--iterations must be positive"):
        openkernel.optimize(reference=SWISH / "reference.py", iterations=-1,
                            db=str(tmp_path / "d"))
    with pytest.raises(openkernel.BadInput, match="mode: 'slow' is not one of fast, deep"):
        openkernel.optimize(reference=SWISH / "reference.py", mode="slow")


def test_sweep_summary_and_score_equal_the_cli(tmp_path: Path) -> None:
    progress: list[dict[str, Any]] = []
    out = tmp_path / "results/mini.tsv"
    summary = openkernel.sweep(level=1, problems=[4], output=out, backend="cpu", model="builtin",
                               iterations=1, kernelbench_dir=str(BENCH), db=str(tmp_path / "db"),
                               on_event=progress.append, **QUICK)
    # Problem 4's reference always fails: the run finishes with a row that says so (docs/sweep.md).
    assert summary["planned"] == 1 and summary["ran"] == 1 and summary["failed"] == 0
    assert summary["output"] == str(out) and not summary["interrupted"]
    assert [p["kind"] for p in progress][0] == "planned"
    finished = [p for p in progress if p["kind"] == "finished"]
    assert [p["task"]["number"] for p in finished] == [4]
    assert finished[0]["row"]["name"] == "Broken" and finished[0]["row"]["correct"] is False
    cli = subprocess.run([str(BINARY), "score", str(out), "--json"], capture_output=True,
                         text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    assert openkernel.score(out) == json.loads(cli.stdout) == summary["score"]
    with pytest.raises(openkernel.BadInput, match="--gpus needs a GPU backend"):
        openkernel.sweep(level=1, problems="1", output=out, backend="cpu", gpus=[0],
                         kernelbench_dir=str(BENCH), db=str(tmp_path / "db"))
    with pytest.raises(openkernel.BadInput):
        openkernel.sweep(level=1, problems="3-1", output=out, kernelbench_dir=str(BENCH))


def test_sweep_takes_no_skills_and_prompt_budget_tokens_as_the_cli(tmp_path: Path) -> None:
    out = tmp_path / "r/ns.tsv"
    db = tmp_path / "db"
    summary = openkernel.sweep(level=1, problems=[4], output=out, backend="cpu", model="builtin",
                               iterations=1, kernelbench_dir=str(BENCH), db=str(db),
                               no_skills=True, prompt_budget_tokens=2000, **QUICK)
    assert summary["ran"] == 1, summary
    with sqlite3.connect(db) as c:
        (options,) = c.execute("SELECT options FROM sessions").fetchone()
    assert json.loads(options)["skills"] is False
    assert json.loads(options)["prompt_budget_tokens"] == 2000
    with pytest.raises(openkernel.BadInput, match="--prompt-budget-tokens must be at least 1000"):
        openkernel.sweep(level=1, problems="1", output=tmp_path / "r/bad.tsv", backend="cpu",
                         kernelbench_dir=str(BENCH), db=str(db), prompt_budget_tokens=5)
    assert not (tmp_path / "r/bad").exists()


def test_score_equals_the_cli_and_bad_files_raise(tmp_path: Path) -> None:
    path = tmp_path / "r.tsv"
    rows = [[1, 1, "A", "cuda", "m", "true", 10, 20, "", 2.0, 1.2, 1, "", "correct", ""],
            [1, 2, "B", "cuda", "m", "false", "", 20, "", "", "", 1, "", "incorrect", ""]]
    path.write_text("\t".join(COLUMNS) + "\n" +
                    "".join("\t".join(map(str, r)) + "\n" for r in rows))
    cli = subprocess.run([str(BINARY), "score", str(path), "--json"], capture_output=True,
                         text=True, timeout=60)
    assert openkernel.score(path) == json.loads(cli.stdout)
    assert openkernel.score(str(path))["n"] == 2
    with pytest.raises(openkernel.BadInput, match="file not found"):
        openkernel.score(tmp_path / "missing.tsv")
    (tmp_path / "bad.tsv").write_text("level\tname\n1\tx\n")
    with pytest.raises(openkernel.BadInput, match="bad.tsv"):
        openkernel.score(tmp_path / "bad.tsv")


def test_problems_load_and_list() -> None:
    p = openkernel.problems.load(1, 3, kernelbench_dir=str(BENCH))
    assert (p.level, p.problem, p.name) == (1, 3, "SwishChain")
    assert p.path == str(BENCH / "level1/3_SwishChain.py")
    assert p.source == Path(p.path).read_text()
    listed = openkernel.problems.list(1, kernelbench_dir=str(BENCH))
    assert [x["problem"] for x in listed] == [1, 2, 3, 4]
    by_path = openkernel.problems.load(reference=str(SWISH / "reference.py"))
    assert by_path.level is None and by_path.name == "reference"
    with pytest.raises(openkernel.BadInput, match="99"):
        openkernel.problems.load(1, 99, kernelbench_dir=str(BENCH))
    with pytest.raises(openkernel.BadInput):
        openkernel.problems.load(1, 1, kernelbench_dir="/nonexistent")
