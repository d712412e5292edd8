"""The builtin generator's norm, reduction and loss problems end to end on the CPU backend:
`openkernel optimize --model builtin` on KernelBench level 1's BatchNorm, InstanceNorm, GroupNorm,
Frobenius norm, LayerNorm, Sum, MinGPT GELU, MSE, cross-entropy, Huber, KL divergence, triplet
margin and hinge problems at reduced sizes (tests/fixtures/generate/norm_problems.tsv) must come
back `correct`, with a candidate that computes the norm or loss itself (no module call,
torch.nn.functional or torch reduction in ModelNew.forward). Frobenius, LayerNorm, MSE, Huber, KL,
hinge and cross-entropy over many rows keep rows long enough for the split reductions (partials,
then a finishing kernel) and their first candidate must use one. The Triton candidates of every
problem at full size must parse; the CUDA kernels must compile with nvcc (slow).

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_norms.py
"""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builtin_support import KERNELBENCH, SKIPS, optimize_builtin, problems
from locations import BINARY, ROOT

TABLE = ROOT / "tests/fixtures/generate/norm_problems.tsv"
# One norm with a grouped view, two split reductions, two losses (one with an int64 target): the
# default suite; the rest slow.
CHOSEN = {"group_norm", "frobenius", "layer_norm", "triplet", "cross_entropy"}
# The problems whose first candidate splits a reduction at these sizes.
SPLIT = {"frobenius", "layer_norm", "mse", "huber", "kl_div", "hinge", "cross_entropy_rows"}
VENDOR = re.compile(r"self\.(bn|inorm|gn|ln|loss_fn)\(|_ok_torch\.nn|torch\.nn\.functional|"
                    r"\bF\.|torch\.(norm|sum|mean|clamp|tanh|pow)\(")

pytestmark = SKIPS


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in CHOSEN else pytest.mark.slow)
                                  for n in problems(TABLE)])
def test_builtin_norm_problem_is_correct_on_the_cpu(tmp_path: Path, name: str) -> None:
    ref, sets = problems(TABLE)[name]
    source = optimize_builtin(tmp_path, KERNELBENCH / ref, sets, VENDOR)
    split = re.search(r'"plan":\{"split":(\d+)\}', source)
    assert (split is not None and int(split.group(1)) > 1) == (name in SPLIT), source[:400]


def test_training_mode_norms_are_correct_on_the_cpu(tmp_path: Path) -> None:
    """BatchNorm without running statistics (per-channel statistics of the batch), an affine
    InstanceNorm and a GroupNorm with non-trivial weights, chained."""
    ref = tmp_path / "norms.py"
    ref.write_text("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(4, track_running_stats=False)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.gn = nn.GroupNorm(2, 4)
        for p in self.parameters():
            nn.init.uniform_(p, 0.5, 1.5)

    def forward(self, x):
        return self.gn(self.inorm(self.bn(x)) * 2.0)


def get_inputs():
    return [torch.rand(3, 4, 8, 6) * 3.0]


def get_init_inputs():
    return []
""")
    optimize_builtin(tmp_path, ref, [], VENDOR)


def test_norms_of_a_matrix_are_correct_on_the_cpu(tmp_path: Path) -> None:
    """BatchNorm1d (batch statistics) and GroupNorm on a rank-2 input read it as [N, C]."""
    ref = tmp_path / "matrix_norms.py"
    ref.write_text("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8, track_running_stats=False)
        self.gn = nn.GroupNorm(2, 8)
        for p in self.parameters():
            nn.init.uniform_(p, 0.5, 1.5)

    def forward(self, x):
        return self.gn(self.bn(x) * 2.0)


def get_inputs():
    return [torch.rand(6, 8) * 3.0]


def get_init_inputs():
    return []
""")
    optimize_builtin(tmp_path, ref, [], VENDOR)


def test_cross_entropy_options_are_correct_on_the_cpu(tmp_path: Path) -> None:
    """cross_entropy with ignored rows (the default ignore_index -100, excluded from the mean), the
    three reductions, and classes along dim 1 of [N, C, d] with another ignore_index."""
    ref = tmp_path / "cross_entropy.py"
    ref.write_text("""import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x, t, s, u):
        spatial = F.cross_entropy(s, u, reduction="none", ignore_index=1)
        return spatial * F.cross_entropy(x, t) + F.cross_entropy(x, t, reduction="sum")


def get_inputs():
    t = torch.randint(0, 40, (24,))
    t[::5] = -100
    return [torch.randn(24, 40) * 3.0, t, torch.randn(4, 12, 7), torch.randint(0, 12, (4, 7))]


def get_init_inputs():
    return []
""")
    source = optimize_builtin(tmp_path, ref, [], VENDOR)
    assert "int64_t" in source, source[:400]


GENERATE = BINARY.parent / "generate_candidates"
NVCC = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def full_size_candidates(tmp_path: Path, name: str, backend: str) -> list[Path]:
    """The problem at its real size (analyze on the meta device, in this process), through
    generate_candidates."""
    sys.path.insert(0, str(ROOT / "python"))
    from openkernel_worker.analyze import analyze

    ref = KERNELBENCH / problems(TABLE)[name][0]
    ir = tmp_path / "ir.json"
    ir.write_text(json.dumps(analyze(str(ref), {})))
    out = tmp_path / backend
    p = subprocess.run([str(GENERATE), str(ir), str(ref), backend, str(out), "4"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return sorted(out.glob("candidate_*.py"))


@pytest.mark.skipif(not GENERATE.is_file(), reason=f"no generate_candidates at {GENERATE}")
@pytest.mark.parametrize("name", list(problems(TABLE)))
def test_full_size_triton_candidates_parse(tmp_path: Path, name: str) -> None:
    found = full_size_candidates(tmp_path, name, "triton")
    assert found
    for c in found:
        ast.parse(c.read_text(), str(c))


@pytest.mark.slow
@pytest.mark.skipif(not GENERATE.is_file(), reason=f"no generate_candidates at {GENERATE}")
@pytest.mark.skipif(not Path(NVCC).is_file(), reason="no nvcc")
@pytest.mark.parametrize("name", list(problems(TABLE)))
def test_full_size_cuda_kernels_compile(tmp_path: Path, name: str) -> None:
    found = full_size_candidates(tmp_path, name, "cuda")
    assert found
    source = found[0].read_text()
    kernels = source.split('_OK_SOURCE = r"""', 1)[1].split('"""', 1)[0]
    cu = tmp_path / "kernels.cu"
    cu.write_text(kernels)
    p = subprocess.run([NVCC, "-c", "-std=c++17", "-o", str(tmp_path / "kernels.o"), str(cu)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
