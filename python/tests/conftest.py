"""Shared helpers for the worker's unit tests: the package on sys.path and tiny problem files."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# An elementwise reference on a [8, 16] tensor with a module-level size and an init argument.
TINY_REFERENCE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


rows = 8
cols = 16


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [2.0]
"""


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], str]:
    """Writes dedented text to tmp_path/name and returns the path as a string."""

    def _write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)

    return _write


@pytest.fixture
def tiny_reference(write: Callable[[str, str], str]) -> str:
    return write("reference.py", TINY_REFERENCE)
