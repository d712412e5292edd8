"""`openkernel score` and `openkernel compare` on small hand-written TSVs: exit codes, JSON keys.

    OPENKERNEL_BIN=build/release/bin/openkernel /usr/bin/python3 -m pytest -q tests/integration/test_cli_score.py
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from locations import BINARY

pytestmark = pytest.mark.skipif(not BINARY.is_file(),
                                reason=f"no openkernel binary at {BINARY}; build it or set "
                                       f"OPENKERNEL_BIN")

COLUMNS = ["level", "problem_id", "name", "backend", "model", "correct", "runtime_us", "eager_us",
           "compile_us", "speedup_eager", "speedup_compile", "attempts", "cost_usd", "verdict",
           "flags"]
THRESHOLDS = {"0.0", "1.0", "1.2", "1.5", "2.0"}
TOP_KEYS = {"n", "correct", "correct_rate", "fast_p", "geomean_speedup",
            "geomean_speedup_fallback"}


def tsv(tmp_path: Path, rows: list[list[str]], name: str = "r.tsv",
        columns: list[str] = COLUMNS) -> Path:
    path = tmp_path / name
    path.write_text("\t".join(columns) + "\n" + "".join("\t".join(r) + "\n" for r in rows))
    return path


def row(level: int, problem: int, correct: bool, eager: str, compile_: str = "") -> list[str]:
    return [str(level), str(problem), "P", "cuda", "m", "true" if correct else "false", "10", "20",
            "", eager, compile_, "1", "", "correct" if correct else "incorrect", ""]


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def test_score_json_keys_and_values(tmp_path: Path) -> None:
    # fast_1 eager: 2.0 and 1.5 are correct and > 1.0 -> 2/4; geomean (2 * 1.5 * 0.75)^(1/3)
    path = tsv(tmp_path, [row(1, 1, True, "2.0", "1.2"), row(1, 2, True, "1.5"),
                          row(1, 3, True, "0.75"), row(1, 4, False, "9.0")])
    r = run("score", path, "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert TOP_KEYS <= set(j)
    assert "levels" not in j
    assert j["n"] == 4 and j["correct"] == 3 and j["correct_rate"] == 0.75
    for b in ("eager", "compile"):
        assert set(j["fast_p"][b]) == THRESHOLDS
        assert b in j["geomean_speedup"] and b in j["geomean_speedup_fallback"]
    assert j["fast_p"]["eager"]["1.0"] == 0.5
    assert j["fast_p"]["compile"]["1.0"] == 0.25
    assert j["geomean_speedup"]["eager"] == pytest.approx((2 * 1.5 * 0.75) ** (1 / 3))
    assert j["geomean_speedup_fallback"]["eager"] == pytest.approx((2 * 1.5 * 0.75) ** (1 / 4))
    assert len(j["ci"]["fast_1.0"]["eager"]) == 2


def test_score_mixed_levels_and_human_report(tmp_path: Path) -> None:
    path = tsv(tmp_path, [row(1, 1, True, "2.0"), row(2, 1, True, "0.5"), row(2, 2, False, "")])
    j = json.loads(run("score", path, "--json").stdout)
    assert set(j["levels"]) == {"1", "2"}
    assert TOP_KEYS <= set(j["levels"]["2"])
    assert j["levels"]["2"]["n"] == 2
    r = run("score", path)
    assert r.returncode == 0, r.stderr
    assert "fast_1.0" in r.stdout and "bootstrap" in r.stdout and "level" in r.stdout


@pytest.mark.parametrize("rows,columns,needle", [
    ([row(1, 1, True, "2.0"), row(1, 1, False, "")], COLUMNS, "level 1 problem 1 (lines 2, 3)"),
    ([row(1, 1, True, "abc")], COLUMNS, ":2: column speedup_eager"),
    ([["1", "1", "P", "cuda", "m", "maybe", *[""] * 9]], COLUMNS, "column correct"),
    ([["1", "1"]], ["level", "problem_id"], "lacks column(s) name"),
    ([], COLUMNS, "no result rows"),
])
def test_score_bad_input_exits_2(tmp_path: Path, rows: list[list[str]], columns: list[str],
                                 needle: str) -> None:
    r = run("score", tsv(tmp_path, rows, columns=columns), "--json")
    assert r.returncode == 2, r
    assert needle in r.stderr
    assert r.stdout == ""


def test_score_missing_file_exits_2(tmp_path: Path) -> None:
    assert run("score", tmp_path / "nope.tsv").returncode == 2
    assert run("score").returncode == 2


def test_compare_json_markdown_text(tmp_path: Path) -> None:
    path = tsv(tmp_path, [row(1, 1, True, "2.0", "1.1"), row(1, 2, False, "")])
    r = run("compare", path, "--json", "--hardware", "H200")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert TOP_KEYS <= set(j["ours"])
    assert j["comparisons"]
    for c in j["comparisons"]:
        assert c["metric"] and c["published"]["source"] and c["published"]["hardware"]
        assert c["ours"]["hardware"] == "H200"
    leaderboard = [c for c in j["comparisons"]
                   if c["system"].startswith("KernelBench leaderboard") and c["level"] == 1]
    assert leaderboard and leaderboard[0]["ours"]["value"] == 0.5
    md = run("compare", path, "--markdown")
    assert md.returncode == 0 and md.stdout.startswith("| metric |")
    text = run("compare", path)
    assert text.returncode == 0 and "source" in text.stdout and "hardware" in text.stdout
    assert run("compare", path, "--json", "--markdown").returncode == 2


def test_compare_bad_baselines_exits_2(tmp_path: Path) -> None:
    path = tsv(tmp_path, [row(1, 1, True, "2.0")])
    bad = tmp_path / "bad.json"
    bad.write_text("{\"systems\": [{\"figures\": 3}]}")
    r = run("compare", path, "--baselines", bad)
    assert r.returncode == 2 and "baselines" in r.stderr
