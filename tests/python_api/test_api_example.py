"""examples/python_evaluate.py runs as documented (docs/python.md) and says what it found."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import API_DIR, ROOT


def test_the_example_script_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(API_DIR)}
    p = subprocess.run([sys.executable, str(ROOT / "examples/python_evaluate.py"), "--backend",
                        "cpu", "--db", str(tmp_path / "db.sqlite")], capture_output=True,
                       text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("example: correct, speedup"), p.stdout
    batch = [line.split()[1] for line in lines if line.startswith("batch:")]
    assert batch == ["correct", "rejected", "incorrect"], p.stdout
    assert "reward -1.0" in lines[-2] and "reward 0.0" in lines[-1]
    assert "(spare process)" in lines[-1]
