"""Deep profiles inside `openkernel optimize`, end to end on the CPU (docs/profiling.md, "In
optimize"): a recorded stand-in for Nsight Compute (python/tests/data/profiling/fake_ncu: it starts
the profiled forward of the real CPU candidate as ncu would and prints a recorded raw page) with
OPENKERNEL_PROFILE_ON_CPU=1, so the worker's real path runs (profile op, sandbox, report copy,
import, parse, cache). A low-occupancy page makes the heuristic critic's diagnosis an occupancy
move; in fast mode the best is profiled at the session's end (its evaluation row gains the profile,
the report's numbers stay the evaluation's); the model critic (llm_stub.py) asks for a profile and
is asked again with the metrics; with no ncu the session finishes with the flags as evidence.

    /usr/bin/python3 -m pytest -q tests/integration/test_optimize_profile.py
"""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from llm_stub import LlmStub
from locations import BINARY, FIXTURES, ROOT
from test_cli_optimize import QUICK, fenced, optimize

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")
PROFILING = ROOT / "python/tests/data/profiling"
SWISH = ROOT / "examples/swish_chain"


def stand_in(tmp_path: Path, monkeypatch, raw: str | None = "low_occupancy_raw.csv") -> None:
    """OPENKERNEL_NCU at the recorded stand-in (or at nothing) and the CPU switch, for the session's
    engine and worker alike."""
    tools = tmp_path / "nsight"
    tools.mkdir()
    if raw is not None:
        shutil.copy(PROFILING / "fake_ncu", tools / "ncu")
        shutil.copy(PROFILING / raw, tools / "raw.csv")
    monkeypatch.setenv("OPENKERNEL_NCU", str(tools / "ncu"))
    monkeypatch.setenv("OPENKERNEL_PROFILE_ON_CPU", "1")


def diagnoses(tmp_path: Path, session: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(tmp_path / "db.sqlite")
    rows = db.execute("SELECT diagnosis FROM attempts WHERE session=? ORDER BY number",
                      (session,)).fetchall()
    return [json.loads(r[0]) if r[0] else {} for r in rows]


def rms_norm_session(tmp_path: Path, mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A correct one-attempt session of the builtin model on the RMS norm fixture in `mode`: its
    report and its evaluation's stored result JSON."""
    p, report = optimize(tmp_path, "--reference", str(FIXTURES / "optimize/rms_norm.py"),
                         "--backend", "cpu", "--model", "builtin", "--mode", mode,
                         "--iterations", "1", "--seed", "7", "--json", "--out",
                         str(tmp_path / "out"), *QUICK)
    assert p.returncode == 0, p.stderr
    assert report is not None and report["verdict"] == "correct", report
    db = sqlite3.connect(tmp_path / "db.sqlite")
    result = json.loads(db.execute("SELECT result FROM evaluations WHERE id=?",
                                   (report["history"][0]["evaluation_id"],)).fetchone()[0])
    return report, result


def test_deep_mode_profiles_each_new_best_before_the_heuristic_critic(tmp_path: Path,
                                                                      monkeypatch) -> None:
    stand_in(tmp_path, monkeypatch)
    report, result = rms_norm_session(tmp_path, "deep")
    assert report["history"][0]["bottleneck"] == "occupancy"
    d = diagnoses(tmp_path, report["session"])[0]
    assert d["metrics"]["achieved_occupancy_pct"] == 18.5
    assert d["metrics"]["occupancy_limiter"] == "registers"
    assert any("cut registers per thread" in s["action"] for s in d["suggestions"])
    assert any("swish_kernel" in e and "achieved occupancy" in e for e in d["evidence"]), d
    prof = result["profile"]
    assert prof["tier"] == "deep" and prof["kernel_table"] is not None  # basic keys kept
    assert Path(prof["report_file"]).is_file() and prof["tool"]["profile_s"] >= 0


def test_fast_mode_profiles_the_best_at_the_end_and_keeps_its_numbers(tmp_path: Path,
                                                                      monkeypatch) -> None:
    # the final profile adds the deep tier to the best's evaluation (row and summary) and leaves
    # what the report reads from the evaluation as the evaluation measured it
    stand_in(tmp_path, monkeypatch)
    report, result = rms_norm_session(tmp_path, "fast")
    assert report["stop_reason"] == "iterations"
    assert result["profile"]["tier"] == "deep" and result["profile"]["kernel_table"] is not None
    assert isinstance(result["runtime_us"]["stderr"], float)
    assert report["runtime_stderr_us"] == result["runtime_us"]["stderr"]
    assert report["eager_runtime_us"] == result["ref_runtime_us"]["median"]
    assert report["eager_runtime_stderr_us"] == result["ref_runtime_us"]["stderr"]
    assert report["flags"] == [f if isinstance(f, str) else f["name"] for f in result["flags"]]
    d = diagnoses(tmp_path, report["session"])[0]
    assert d["metrics"]["achieved_occupancy_pct"] == 18.5  # the final reading, recorded


ASK = json.dumps({"bottleneck": "latency", "evidence": ["cannot tell without counters"],
                  "suggestions": [{"action": "profile it", "expected_gain": 0.1}],
                  "expected_gain": 0.1, "profile_request": True})
FINAL = json.dumps({"bottleneck": "occupancy", "evidence": ["18.5% achieved occupancy"],
                    "suggestions": [{"action": "fewer registers per thread",
                                     "expected_gain": 0.3}], "expected_gain": 0.3})


def model_session(tmp_path: Path, *extra: str) -> tuple[Any, dict[str, Any] | None, list[str]]:
    good = (SWISH / "candidate.py").read_text()
    with LlmStub(generator=[fenced("Fused C++ loop.", good)], critic=[ASK, FINAL]) as stub:
        p, report = optimize(tmp_path, "--reference", str(SWISH / "reference.py"), "--backend",
                             "cpu", "--model", "openai/stub-model", "--base-url", stub.base_url,
                             "--iterations", "1", "--json", "--out", str(tmp_path / "out"),
                             *QUICK, *extra)
        return p, report, stub.prompts("critic")


def test_the_model_critic_asks_for_a_profile_and_reads_its_metrics(tmp_path: Path,
                                                                   monkeypatch) -> None:
    stand_in(tmp_path, monkeypatch)
    p, report, prompts = model_session(tmp_path)
    assert p.returncode == 0, p.stderr
    assert report is not None and report["verdict"] == "correct", report
    assert len(prompts) == 2  # asked once more, with the profile
    assert "achieved_occupancy_pct" not in prompts[0]
    second = prompts[1]
    assert "achieved_occupancy_pct" in second and "18.5" in second and "swish_kernel" in second
    assert "cut registers per thread" in second  # the rule-based reading it is shown
    assert '"tier": "deep"' in second
    assert report["history"][0]["bottleneck"] == "occupancy"
    assert diagnoses(tmp_path, report["session"])[0]["source"] == "model"


def test_no_ncu_leaves_flags_as_evidence_and_the_session_whole(tmp_path: Path,
                                                              monkeypatch) -> None:
    stand_in(tmp_path, monkeypatch, raw=None)
    p, report, prompts = model_session(tmp_path)
    assert p.returncode == 0, p.stderr
    assert report is not None and report["verdict"] == "correct", report
    assert len(prompts) == 2 and "profiler_missing" in prompts[1]
    assert "OPENKERNEL_NCU" in prompts[1]


def test_no_profile_once_the_device_budget_is_spent(tmp_path: Path, monkeypatch) -> None:
    """--budget-device-s counts profiles as device time: past it the critic's request is not
    granted (one diagnosis, no metrics) and no deep profile is taken at all."""
    stand_in(tmp_path, monkeypatch)
    p, report, prompts = model_session(tmp_path, "--mode", "deep", "--budget-device-s", "0.001")
    assert p.returncode == 0, p.stderr
    assert report is not None and report["verdict"] == "correct", report
    assert report["stop_reason"] == "device_time"
    assert len(prompts) == 1 and "achieved_occupancy_pct" not in prompts[0]
    assert "deep_profile" not in p.stderr
    db = sqlite3.connect(tmp_path / "db.sqlite")
    tiers = [json.loads(r[0]).get("profile", {}).get("tier")
             for r in db.execute("SELECT result FROM evaluations").fetchall()]
    assert tiers and "deep" not in tiers, tiers
