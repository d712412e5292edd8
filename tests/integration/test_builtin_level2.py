"""Level 2's tails in the epilogue, end to end on the CPU backend: `openkernel optimize --model
builtin` on KernelBench level 2 problems at reduced sizes (tests/fixtures/generate/
level2_problems.tsv) must come back `correct` with a candidate that launches one kernel, the GEMM
(nn.Linear) or convolution with its pointwise tail in the epilogue, and keeps no PyTorch module
call. The default suite runs a GEMM, a convolution and a 3d transposed convolution whose tail reads
a second input and its own output twice; the rest carry the `slow` marker.

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_level2.py
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from builtin_support import KERNELBENCH, SKIPS, optimize_builtin, problems
from locations import ROOT

TABLE = ROOT / "tests/fixtures/generate/level2_problems.tsv"
CHOSEN = ["l2_12_gemm_mul_leaky", "l2_1_conv_relu_bias", "l2_26_convt3d_add_hardswish"]
VENDOR = re.compile(r"_ok_torch\.(nn\.functional\.|matmul|mm|conv)|F\.(linear|conv)|self\.\w+\(|"
                    r"_ok_attr\(self, ")

pytestmark = SKIPS


def check_one_fused_kernel(source: str) -> None:
    pattern = re.search(r"^# pattern: (\S+)$", source, re.M)
    assert pattern and pattern.group(1).endswith(":epilogue"), source[:400]
    forward = source[source.index("class ModelNew(Model):"):]
    assert len(re.findall(r"_ok_lib\.ok_\w+\(", forward)) == 1, forward


@pytest.mark.parametrize("name", CHOSEN)
def test_level2_tail_runs_in_the_epilogue_and_is_correct(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    check_one_fused_kernel(optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(set(problems(TABLE)) - set(CHOSEN)))
def test_every_listed_level2_problem_is_correct(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    check_one_fused_kernel(optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR))
