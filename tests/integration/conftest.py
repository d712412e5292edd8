"""Integration tests run the built `openkernel` binary; see test_cli_evaluate.py."""
from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: takes long; deselect with -m 'not slow'")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped (with a reason) without")
    config.addinivalue_line("markers", "cases(*names): the CLI runs a test reads, started in "
                                       "parallel before the first test")
