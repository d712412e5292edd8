"""The honest corpus's pytest set-up; the cases live in honest_cases.py, the runner in
test_honest.py."""
from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped (with a reason) without")
