"""The builtin generator's window family end to end on the CPU backend: `openkernel optimize --model
builtin` on KernelBench level 1's pooling, argmax/argmin and scan problems (41-46, 51, 52, 89-93) at
reduced sizes (the overrides of tests/fixtures/generate/window_problems.tsv) must come back
`correct`, with a candidate that computes the op itself (no torch pooling, cumsum, cumprod, flip,
cat or argmax call in ModelNew.forward); and PyTorch's corner semantics (ceil_mode, padding not
counted, divisor_override, ties and NaNs in argmax/argmin, scans along a middle dim) on references
written here.

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_window.py        # default subset
    /usr/bin/python3 -m pytest -q -m slow tests/integration/test_builtin_window.py  # the others
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from builtin_support import KERNELBENCH, SKIPS, optimize_builtin, problems
from locations import ROOT

TABLE = ROOT / "tests/fixtures/generate/window_problems.tsv"
# One of each kernel kind and absorbed form in the default suite; the rest are marked slow.
CHOSEN = ["max_pool_3d", "avg_pool_1d", "argmin", "cumsum_reverse", "cumsum_exclusive",
          "masked_cumsum"]
SLOW = pytest.mark.slow  # each case is one optimize (~10 s on 2 busy cores): a few by default
VENDOR = re.compile(r"torch\.(cumsum|cumprod|flip|cat|argmax|argmin|narrow)\(|functional|"
                    r"self\.(maxpool|avg_pool)\(|\.(cumsum|cumprod|flip|argmax|argmin)\(")

pytestmark = SKIPS

ALL = sorted(problems(TABLE))


@pytest.mark.parametrize("name", [n if n in CHOSEN else pytest.param(n, marks=SLOW) for n in ALL])
def test_builtin_window_problem_is_correct_on_the_cpu(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR)


def write_reference(tmp_path: Path, forward: str, inputs: str, params: str = "x") -> Path:
    ref = tmp_path / "reference.py"
    ref.write_text(f"""import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, {params}):
        return {forward}


def get_inputs():
{inputs}


def get_init_inputs():
    return []
""")
    return ref


# PyTorch's pooling corners: a ceil_mode window hanging over the end, padding left out of the
# count, a divisor override, a max window over padding with NaNs in the input.
@pytest.mark.parametrize("forward,shape", [
    ("F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)",
     "3, 9, 11"),
    pytest.param("F.avg_pool3d(x, (2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0), "
                 "divisor_override=5)", "2, 3, 6, 9, 11", marks=SLOW),
    pytest.param("F.max_pool2d(x, 3, stride=2, padding=1, dilation=2, ceil_mode=True)",
                 "2, 3, 9, 11", marks=SLOW),
])
def test_pooling_corners_are_pytorchs(tmp_path: Path, forward: str, shape: str) -> None:
    inputs = (f"    x = torch.randn({shape})\n    x.view(-1)[7] = float('nan')\n    return [x]")
    optimize_builtin(tmp_path, write_reference(tmp_path, forward, inputs), [], VENDOR)


# argmax/argmin with ties everywhere (small integers) and NaNs: the first index of the best, the
# first NaN; along the last dim (rows) and a middle dim (columns); and scans along a middle dim.
@pytest.mark.parametrize("forward", [
    pytest.param("torch.argmax(x, dim=2)", marks=SLOW), "torch.argmin(x, dim=1)",
    pytest.param("torch.argmax(x)", marks=SLOW), "torch.cumprod(x.flip(1), dim=1).flip(1)",
    pytest.param("torch.cumsum(x, dim=0)", marks=SLOW),
])
def test_ties_nans_and_middle_dims(tmp_path: Path, forward: str) -> None:
    nan = "" if "cum" in forward else "    x[1, 3, 5] = float('nan')\n    x[1, 7, 5] = float('nan')\n"
    inputs = (f"    x = torch.randint(-2, 3, (3, 40, 37)).float() * 0.5\n{nan}    return [x]")
    optimize_builtin(tmp_path, write_reference(tmp_path, forward, inputs), [], VENDOR)
