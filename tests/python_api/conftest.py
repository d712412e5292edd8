"""The Python API's tests (docs/python.md): `import openkernel` from the build
($OPENKERNEL_PYTHON_API, default build/release/python, the folder CMake assembles the package in),
against the CLI ($OPENKERNEL_BIN) on the integration tests' CPU fixtures. Each session gets its own
config, data and cache folders, so no user setting or store is touched.

    /usr/bin/python3 -m pytest -q tests/python_api
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
API_DIR = Path(os.environ.get("OPENKERNEL_PYTHON_API") or ROOT / "build/release/python")
BINARY = Path(os.environ.get("OPENKERNEL_BIN") or ROOT / "build/release/bin/openkernel")
PYTHON = os.environ.get("OPENKERNEL_PYTHON") or "/usr/bin/python3"
FIXTURES = ROOT / "tests/integration/fixtures"
SWISH = ROOT / "examples/swish_chain"
# Short evaluations: enough to reach a verdict and a timing on two cores.
QUICK = {"trials": 2, "timing_budget": 0.3, "timeout": 120.0}

sys.path.insert(0, str(API_DIR))
_home = tempfile.mkdtemp(prefix="openkernel-api-tests-")
for _name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
    os.environ[_name] = os.path.join(_home, _name.lower())
os.environ["OPENKERNEL_PYTHON"] = PYTHON
os.environ.pop("OPENKERNEL_API_KEY", None)


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "slow: takes long; deselect with -m 'not slow'")
