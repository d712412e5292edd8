"""No process a candidate can see holds a credential: `openkernel evaluate` started with an API key
in its environment (OPENAI_API_KEY=sk-openkernel-fake-...), and a candidate
(tests/adversarial/sandbox/cand_proc_walk.py) that walks /proc from inside the sandbox (every
process and thread it can name: environ, cmdline, readable memory) and raises "SANDBOX ESCAPE" if
it finds the key. On the CPU profile (private PID namespace) in the default suite; on the GPU
profile, with nothing shared (the default) and with OPENKERNEL_SANDBOX_GPU_SHARE=ipc,pid, as
gpu-marked cases. A control run without the sandbox, with the key also in a variable whose name
does not look like a secret (so the engine passes it on), must find it: the walk would notice.

    /usr/bin/python3 -m pytest -q tests/integration/test_proc_credentials.py          # CPU
    /usr/bin/python3 -m pytest -q -rs -m gpu tests/integration/test_proc_credentials.py  # GPU
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from locations import BINARY, PYTHON, ROOT
SANDBOX = ROOT / "tests/adversarial/sandbox"
MARK = "sk-openkernel-fake"

pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no openkernel binary at {BINARY}")


def _cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def _bwrap_ok() -> tuple[bool, str]:
    import sys

    sys.path.insert(0, str(ROOT / "python"))
    from openkernel_worker import sandbox

    probe = sandbox.probe("cpu")
    return probe.ok, probe.reason


def walk(tmp_path: Path, *args: str, extra_env: dict[str, str] | None = None,
         ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Evaluates cand_proc_walk.py with a fresh key in the engine's environment; returns the result
    and the walk's own account (None when the candidate never wrote it)."""
    tag = secrets.token_hex(6)
    key = f"{MARK}-{secrets.token_hex(8)}"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENKERNEL_CONFIG", "OPENKERNEL_DB")}
    env.update({"OPENKERNEL_PYTHON": PYTHON, "OPENAI_API_KEY": key, "OPENKERNEL_TEST_TAG": tag,
                "XDG_CONFIG_HOME": str(tmp_path / "config"),
                "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")})
    env.update({k: v.format(key=key) for k, v in (extra_env or {}).items()})
    proc = subprocess.run([str(BINARY), "evaluate", "--json", "--reference",
                           str(SANDBOX / "reference.py"), "--candidate",
                           str(SANDBOX / "cand_proc_walk.py"), "--trials", "2", "--timing-budget",
                           "0.3", "--timeout", "400", "--db", str(tmp_path / "x.db"), *args],
                          capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    account = tmp_path / "cache" / "openkernel" / "native" / f"proc-walk-{tag}.json"
    return result, json.loads(account.read_text()) if account.exists() else None


def assert_contained(result: dict[str, Any], account: dict[str, Any] | None) -> None:
    assert not any("SANDBOX ESCAPE" in r for r in result["reasons"]), result["reasons"]
    # Timing cross-checks may reject on a loaded machine; that has nothing to do with the walk.
    assert result["verdict"] in ("correct", "rejected"), (result["verdict"], result["reasons"])
    assert result["sandbox"]["enabled"] is True
    assert account is not None and account["complete"], account
    assert account["own_environ_read"] >= 1 and account["named"] >= 1, account
    assert any("OPENAI_API_KEY" in n for n in result["sandbox"].get("notes", [])) is False, (
        "the worker received the key: the engine must not pass it on", result["sandbox"])


def test_cpu_profile_no_credential_visible(tmp_path: Path) -> None:
    ok, why = _bwrap_ok()
    if not ok:
        pytest.skip(f"bwrap cannot run here: {why}")
    result, account = walk(tmp_path, "--backend", "cpu", "--threads", "1")
    assert result["sandbox"]["profile"] == "cpu"
    assert_contained(result, account)


def test_control_without_sandbox_finds_the_key(tmp_path: Path) -> None:
    """The key in a variable whose name is not secret-looking reaches the worker, whose environ
    the unsandboxed candidate can read: the walk reports it (so a clean walk means something)."""
    result, _ = walk(tmp_path, "--backend", "cpu", "--threads", "1", "--no-sandbox",
                     extra_env={"OPENKERNEL_TEST_DECOY": "{key}",
                                "OPENKERNEL_TEST_WALK_MEMORY": "0"})  # the host's: too slow
    assert result["verdict"] == "runtime_error", (result["verdict"], result["reasons"])
    assert any("SANDBOX ESCAPE: found the API key in /proc/" in r for r in result["reasons"]), (
        result["reasons"])


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs an NVIDIA GPU (the GPU sandbox profile)")
@pytest.mark.parametrize("share", ["", "ipc,pid"])
def test_gpu_profile_no_credential_visible(tmp_path: Path, share: str) -> None:
    result, account = walk(tmp_path, "--backend", "triton", "--device", "cuda:0",
                           extra_env={"OPENKERNEL_SANDBOX_GPU_SHARE": share})
    assert result["sandbox"]["profile"] == "gpu"
    notes = " ".join(result["sandbox"].get("notes", []))
    assert f"shares {share.replace(',', ', ') or 'nothing'}" in notes, notes
    assert_contained(result, account)
    print(f"GPU profile, shared {share or 'nothing'}: {json.dumps(account)}")
