"""`openkernel optimize --in-flight K` against a model that takes a second per reply
(llm_stub.py with latency_s): generations overlap while the evaluator works, attempts are still
recorded in issue order, and the evaluator is busier than with one generation in flight.
bench/device_busy.py measures the same thing at length.

    /usr/bin/python3 -m pytest -q -m slow tests/integration/test_search_concurrency.py
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
SWISH = ROOT / "examples/swish_chain"
QUICK = ["--trials", "2", "--timing-budget", "0.3", "--timeout", "120"]
LATENCY_S = 1.0
ITERATIONS = 6
DIAGNOSIS = json.dumps({"bottleneck": "memory", "evidence": ["one read and one write per element"],
                        "suggestions": [{"action": "vectorise the fused loop",
                                         "expected_gain": 0.1}], "expected_gain": 0.1})

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")]


def run(tmp: Path, in_flight: int) -> tuple[dict[str, Any], list[tuple[str, float, float]],
                                            list[tuple[int, int | None]]]:
    """optimize with the stub (fixed correct candidate, valid diagnosis, LATENCY_S per reply);
    returns the report, the stub's timeline and the recorded attempts (number, evaluation id)
    in the order they were written."""
    reply = "One fused loop.\n```python\n" + (SWISH / "candidate.py").read_text() + "\n```\n"
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp / "config"),
           "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_DATA_HOME": str(tmp / "data")}
    env.pop("OPENKERNEL_API_KEY", None)
    with LlmStub(generator=[reply], critic=[DIAGNOSIS], latency_s=LATENCY_S) as stub:
        p = subprocess.run([str(BINARY), "optimize", "--db", str(tmp / "db.sqlite"),
                            "--reference", str(SWISH / "reference.py"), "--backend", "cpu",
                            "--model", "openai/stub-model", "--base-url", stub.base_url,
                            "--iterations", str(ITERATIONS), "--in-flight", str(in_flight),
                            "--json", "--out", str(tmp / "out"), *QUICK],
                           capture_output=True, text=True, timeout=300, env=env)
        timeline = list(stub.timeline)
    assert p.returncode == 0, p.stderr
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("{"), p.stdout
    report = json.loads(lines[-1])
    with sqlite3.connect(tmp / "db.sqlite") as db:
        rows = db.execute("SELECT number, evaluation_id FROM attempts WHERE session = ? "
                          "ORDER BY id", (report["session"],)).fetchall()
    return report, timeline, rows


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans open at one instant (an end sorts before a start at the same time)."""
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    most = now = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def test_generations_overlap_and_keep_the_evaluator_busier(tmp_path: Path) -> None:
    report, timeline, rows = run(tmp_path / "k4", 4)
    assert report["attempts"] == ITERATIONS
    assert [h["number"] for h in report["history"]] == list(range(1, ITERATIONS + 1))
    assert all(h["verdict"] == "correct" for h in report["history"]), report["history"]
    # Recorded one by one in issue order, each with its own evaluation, evaluated in that order.
    assert [n for n, _ in rows] == list(range(1, ITERATIONS + 1))
    evaluation_ids = [e for _, e in rows]
    assert None not in evaluation_ids and evaluation_ids == sorted(evaluation_ids)
    search = report["search"]
    assert search["in_flight"] == 4 and search["evaluations"] == ITERATIONS
    generator = [(s, e) for purpose, s, e in timeline if purpose == "generator"]
    assert len(generator) == ITERATIONS
    assert most_at_once(generator) >= 2, timeline  # requests were open at the same time

    one, timeline_one, rows_one = run(tmp_path / "k1", 1)
    assert [n for n, _ in rows_one] == list(range(1, ITERATIONS + 1))
    assert most_at_once([(s, e) for p, s, e in timeline_one if p == "generator"]) == 1
    assert one["search"]["in_flight"] == 1
    assert search["device_busy_fraction"] > one["search"]["device_busy_fraction"], (search,
                                                                                   one["search"])
