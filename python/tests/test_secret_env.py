"""One rule for secret-looking environment variables: the engine's (src/util/secrets.hpp, which
drops them from the worker's environment) and the worker's (sandbox.SECRET_WORDS, which drops
them from the candidate's) name the same words and exemptions."""
from __future__ import annotations

import re
from pathlib import Path

from openkernel_worker import sandbox

HEADER = Path(__file__).resolve().parents[2] / "src" / "util" / "secrets.hpp"


def _array(name: str) -> list[str]:
    text = HEADER.read_text()
    match = re.search(rf"{name}\s*=\s*\{{([^}}]*)\}}", text)
    assert match, f"{name} not found in {HEADER}"
    return re.findall(r'"([^"]*)"', match.group(1))


def test_engine_and_worker_share_the_rule() -> None:
    assert _array("kSecretWords") == list(sandbox.SECRET_WORDS)
    exempt = _array("kSecretExempt")
    assert exempt == ["TORCH_CUDA_ARCH_LIST"]
    assert sandbox.scrub_env({name: "x" for name in exempt}) == {name: "x" for name in exempt}
