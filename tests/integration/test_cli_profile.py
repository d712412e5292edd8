"""`openkernel evaluate --profile` end to end on the CPU: a deeper tier asked for where it cannot
run gives the basic profile with a flag, never a failed evaluation; an unknown tier is a usage
error (docs/profiling.md, docs/cli.md)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from locations import BINARY, FIXTURES
from test_cli_evaluate import QUICK, REFERENCE, environment

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


def evaluate(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BINARY), "evaluate", "--reference", str(FIXTURES / REFERENCE),
                           "--candidate", str(FIXTURES / "cand_correct.py"),
                           "--db", str(tmp_path / "store.db"), *extra],
                          capture_output=True, text=True, env=environment(tmp_path), timeout=300)


def test_deep_on_the_cpu_degrades_with_a_flag(tmp_path: Path) -> None:
    proc = evaluate(tmp_path, *QUICK, "--profile", "deep")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert r["verdict"] == "correct"
    p = r["profile"]
    assert (p["tier"], p["requested_tier"]) == ("basic", "deep")
    assert p["flags"][0]["flag"] == "no_gpu" and "CPU" in p["flags"][0]["message"]
    assert p["kernel_table"] is not None  # the basic profile stays
    text = evaluate(tmp_path, *[a for a in QUICK if a != "--json"], "--profile", "proton")
    assert text.returncode == 0, text.stderr
    assert "profile   basic tier" in text.stdout and "profile no_gpu:" in text.stdout


def test_default_profile_names_its_tier(tmp_path: Path) -> None:
    proc = evaluate(tmp_path, *QUICK)
    assert proc.returncode == 0, proc.stderr
    p = json.loads(proc.stdout)["profile"]
    assert p["tier"] == "basic" and "requested_tier" not in p


def test_unknown_tier_is_a_usage_error(tmp_path: Path) -> None:
    proc = evaluate(tmp_path, *QUICK, "--profile", "full")
    assert proc.returncode == 2
    assert "--profile" in proc.stderr and "full" in proc.stderr
