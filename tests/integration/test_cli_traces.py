"""Capture for the trace export: an optimize session against the local OpenAI-compatible stub
(llm_stub.py) records each LLM call with the attempt it served (`attempt` in llm_calls.request),
and
`openkernel traces export --format jsonl` puts each attempt's prompt, reply, code and tokens in
its row (docs/traces.md). The Parquet side is tests/traces (node, hyparquet).

    /usr/bin/python3 -m pytest -q tests/integration/test_cli_traces.py
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from llm_stub import LlmStub

from locations import BINARY, PYTHON, ROOT
SWISH = ROOT / "examples/swish_chain"

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


def openkernel(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp / "config"),
           "XDG_CACHE_HOME": str(tmp / "cache"), "XDG_DATA_HOME": str(tmp / "data")}
    env.pop("OPENKERNEL_API_KEY", None)
    return subprocess.run([str(BINARY), *args], capture_output=True, text=True, timeout=600,
                          env=env)


def test_model_attempts_export_with_their_prompt_and_reply(tmp_path: Path) -> None:
    good = (SWISH / "candidate.py").read_text()
    reply_1 = "No code this time."
    reply_2 = f"Fused loop.\n```python\n{good}\n```\n"
    diagnosis = json.dumps({"bottleneck": "memory", "evidence": [], "suggestions": [
        {"action": "vectorise", "expected_gain": 0.2}], "expected_gain": 0.2})
    db = tmp_path / "db.sqlite"
    with LlmStub(generator=[reply_1, reply_2], critic=[diagnosis]) as stub:
        p = openkernel(tmp_path, "optimize", "--db", str(db), "--reference",
                       str(SWISH / "reference.py"), "--backend", "cpu", "--model",
                       "openai/stub-model", "--base-url", stub.base_url, "--iterations", "2",
                       "--in-flight", "1", "--json", "--out", str(tmp_path / "out"), "--trials",
                       "2", "--timing-budget", "0.3", "--timeout", "120")
    assert p.returncode == 0, p.stderr
    con = sqlite3.connect(db)
    linked = con.execute("SELECT purpose, json_extract(request, '$.attempt') FROM llm_calls "
                         "ORDER BY id").fetchall()
    assert ("generator", 1) in linked and ("generator", 2) in linked
    assert ("critic", 2) in linked
    out = tmp_path / "ds"
    e = openkernel(tmp_path, "traces", "export", "--db", str(db), "--out", str(out), "--format",
                   "jsonl")
    assert e.returncode == 0, e.stderr
    (raw,) = list((out / "raw").glob("*/session_*.jsonl"))
    rows = [json.loads(line) for line in raw.read_text().splitlines()]
    assert [r["attempt"] for r in rows] == [1, 2]
    first, second = rows
    assert first["verdict"] == "generation_failed" and first["code"] is None
    assert first["response"] == reply_1 and first["reward"] == 0
    assert [m["role"] for m in second["messages"]] == ["system", "user"]
    assert "x * torch.sigmoid(x)" in second["messages"][1]["content"]  # the reference
    assert second["response"] == reply_2
    assert second["code"].strip() == good.strip()
    assert second["llm_calls"] >= 2  # the generator's and the critic's
    assert second["input_tokens"] > 0 and second["output_tokens"] > 0
    assert second["verdict"] == "correct" and second["reward"] is not None
    assert second["diagnosis_bottleneck"] == "memory"
    pairs = [json.loads(line) for line in
             (out / "processed/training_pairs_v1.jsonl").read_text().splitlines()]
    assert [p["prompt_source"] for p in pairs] == ["recorded", "recorded"]
    assert pairs[1]["messages"][-1] == {"role": "assistant", "content": reply_2}
    stats = json.loads((out / "metadata/stats.json").read_text())
    assert stats["attempts"] == 2 and stats["training_pairs"] == 2
