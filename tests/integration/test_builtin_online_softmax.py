"""Online softmax in the builtin generator's CUDA row kernels, run without a GPU: a row sum of
exp(x - max) (softmax, log_softmax, logsumexp) taken in the max's pass against a
running max (plan.hpp's KernelGroup::online), compiled by g++ against the CPU model of CUDA's
execution (cuda_emulate.py) and compared with PyTorch, on rows wider than a block's threads with
-inf entries, a large offset (exp(x) alone would overflow), rows along a strided dim, and for
logsumexp rows of -inf and of +inf (PyTorch's -inf and +inf, not NaN).

    /usr/bin/python3 -m pytest -q tests/integration/test_builtin_online_softmax.py
"""
from __future__ import annotations

from pathlib import Path

import pytest

from builtin_support import write_reference
from test_builtin_cuda_conv import GENERATE, candidates, run_candidates

pytestmark = pytest.mark.skipif(not GENERATE.is_file(),
                                reason=f"no generate_candidates at {GENERATE}")

# Rows of 3000 (the threads stride over each: a running max that grows inside a thread), about
# one entry in 20 -inf, values around 60 with a spread of 8.
ROWS = ("torch.where(torch.rand({shape}) < 0.05, torch.tensor(float('-inf')), "
        "torch.randn({shape}) * 8 + 60)")
CASES = {
    "softmax": ("return torch.softmax(x, dim=1)", "6, 3000"),
    "log_softmax": ("return torch.log_softmax(x * 0.5, dim=1)", "6, 3000"),
    "logsumexp": ("return torch.logsumexp(x, dim=1)", "6, 3000"),
    "softmax_strided": ("return torch.softmax(x, dim=1)", "3, 700, 5"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_online_sums_match_torch_on_the_cpu_model(tmp_path: Path, name: str) -> None:
    body, shape = CASES[name]
    x = ROWS.format(shape=f"({shape})")
    ref = write_reference(tmp_path / "reference.py", body, "torch.zeros(1)", "torch.zeros(1)", x)
    files, params = candidates(tmp_path, ref, {})
    online = [k for k, f in enumerate(files) if "fmaxf(a" in f.read_text()
              and "* expf(a" in f.read_text()]
    assert online, "some candidate takes the sum against a running max"
    run_candidates(ref, {}, files, params, online[:2], atol=1e-5)


def test_logsumexp_of_infinite_rows_is_infinite_not_nan(tmp_path: Path) -> None:
    # Row 0 all -inf (PyTorch: -inf), row 1 with one +inf (PyTorch: +inf), row 2 finite.
    x = ("torch.cat([torch.full((1, 3000), float('-inf')), "
         "torch.randn(1, 3000).index_fill(1, torch.tensor([1234]), float('inf')), "
         "torch.randn(1, 3000)])")
    ref = write_reference(tmp_path / "reference.py", "return torch.logsumexp(x, dim=1)",
                          "torch.zeros(1)", "torch.zeros(1)", x)
    files, params = candidates(tmp_path, ref, {})
    online = [k for k, f in enumerate(files) if "*= expf(p" in f.read_text()]
    assert online, "logsumexp's sum is rescaled by exp(M - shift)"
    run_candidates(ref, {}, files, params, online[:2], atol=1e-5)
