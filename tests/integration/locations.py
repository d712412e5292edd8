"""Where the integration tests find things, in one place: the repository, its fixtures, the built
`openkernel` binary (OPENKERNEL_BIN overrides) and the Python with torch and pytest that runs the
worker (OPENKERNEL_PYTHON overrides; CMake passes /usr/bin/python3)."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BINARY = Path(os.environ.get("OPENKERNEL_BIN") or ROOT / "build/release/bin/openkernel")
PYTHON = os.environ.get("OPENKERNEL_PYTHON") or "/usr/bin/python3"
