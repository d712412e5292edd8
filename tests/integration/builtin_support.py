"""What the builtin generator's end-to-end tests (test_builtin_gemm, _conv, _window, _norms) share:
the KernelBench folder, the problem tables' reader and one builtin optimize on the CPU that must
come back `correct` with a candidate that computes the op itself."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from locations import BINARY, PYTHON, ROOT

KERNELBENCH = Path(os.environ.get("OPENKERNEL_KERNELBENCH_DIR")
                   or ROOT.parent / "shared/kernelbench")

# Each test module sets `pytestmark = SKIPS`: without the binary or KernelBench it skips, saying so
# (a module whose tests write their own references too marks the others NEEDS_KERNELBENCH alone).
NEEDS_BINARY = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")
NEEDS_KERNELBENCH = pytest.mark.skipif(not KERNELBENCH.is_dir(),
                                       reason=f"no KernelBench at {KERNELBENCH}")
SKIPS = [NEEDS_BINARY, NEEDS_KERNELBENCH]


def problems(table: Path) -> dict[str, tuple[str, list[str]]]:
    """A problem table's rows (tests/fixtures/generate/*_problems.tsv): name -> (reference under
    KERNELBENCH, --set overrides)."""
    rows = {}
    for line in table.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, ref, sets = line.split("\t")
            rows[name] = (ref.removeprefix("kb:"), sets.split())
    return rows


def optimize_builtin(tmp_path: Path, reference: Path, sets: list[str],
                     vendor: re.Pattern[str]) -> str:
    """One builtin attempt on the CPU; asserts it is correct and computes the op itself (nothing
    `vendor` matches in ModelNew.forward); returns the candidate's source."""
    env = {**os.environ, "OPENKERNEL_PYTHON": PYTHON, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data")}
    env.pop("OPENKERNEL_API_KEY", None)
    args = [str(BINARY), "optimize", "--db", str(tmp_path / "db.sqlite"), "--reference",
            str(reference), "--backend", "cpu", "--model", "builtin", "--iterations", "1",
            "--json", "--out", str(tmp_path / "out"), "--trials", "2", "--timing-budget", "0.3",
            "--timeout", "120"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    report = json.loads([line for line in p.stdout.splitlines() if line.strip()][-1])
    assert report["verdict"] == "correct", json.dumps(report["history"], indent=1)
    assert all(h["generator"] == "builtin" for h in report["history"])
    source = Path(report["best_candidate"]).read_text()
    forward = source[source.index("class ModelNew(Model):"):]
    assert not vendor.search(forward), forward
    return source


def write_reference(path: Path, body: str, weight: str, bias: str, x: str) -> Path:
    """A one-input reference at `path`: a Model with parameters `w` = weight and `b` = bias (Python
    expressions), whose forward is `body` (statements over x, the last a return; continuation
    lines indented by 8), on the input `x`."""
    path.write_text(f"""import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter({weight})
        self.b = nn.Parameter({bias})

    def forward(self, x):
        {body}


def get_inputs():
    return [{x}]


def get_init_inputs():
    return []
""")
    return path
