"""The GPU profile's PID-namespace rules, tried on the CPU (no GPU needed: the profile's options do
not depend on one): a holder process with an API key in its environment, memory and command
line, and a thread, runs tests/adversarial/sandbox/cand_proc_walk.py's /proc walk in bwrap with
the GPU profile's options. Shared PID namespace: the holder (an ancestor) and its threads are
hidden, so the walk finds nothing, while a sibling process that is not an ancestor and has the
key on its command line is found: /proc/PID/cmdline needs no ptrace access, unlike environ and
mem, which the sandbox's user namespace without capabilities cannot read outside itself. That is
what sharing costs. Nothing shared (the default): the sibling is out of sight too."""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openkernel_worker import sandbox

PKG_ROOT = Path(__file__).resolve().parents[1]
WALKER = PKG_ROOT.parent / "tests" / "adversarial" / "sandbox" / "cand_proc_walk.py"
PROBE = sandbox.probe("cpu")

HOLDER = textwrap.dedent("""
    import json, os, subprocess, sys, threading
    sys.path.insert(0, sys.argv[1])
    import torch  # noqa: F401 - its directories must be bound for the walker
    from openkernel_worker import sandbox
    key = os.environ["HOLDER_KEY"]
    kept = [key.encode() * 2]  # the key in this process's memory too
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()  # a thread: /proc/TID
    scratch, cache = sys.argv[2], sys.argv[3]
    walker = os.path.join(scratch, "walker.py")  # the sandbox sees scratch, not the repository
    with open(sys.argv[4]) as src, open(walker, "w") as dst:
        dst.write(src.read())
    env = sandbox.scrub_env(dict(os.environ))
    env.update({"OPENKERNEL_NATIVE_CACHE": cache, "TMPDIR": "/tmp"})
    args = sandbox.bwrap_args("gpu", scratch=scratch, env=env, writable=[cache])
    code = ("import importlib.util, json, sys; spec = importlib.util.spec_from_file_location("
            "'walker', sys.argv[1]); m = importlib.util.module_from_spec(spec); "
            "spec.loader.exec_module(m)\\n"
            "try:\\n  print(json.dumps(m.walk()))\\n"
            "except RuntimeError as e:\\n  print(json.dumps({'escape': str(e)}))")
    r = subprocess.run([sandbox.find_bwrap(), *args, "--", sys.executable, "-c", code, walker],
                       env=env, capture_output=True, text=True, timeout=600)
    print(r.stdout.strip().splitlines()[-1] if r.stdout.strip() else
          json.dumps({"failed": r.stderr[-2000:]}))
""")


def run_walk(tmp_path: Path, share: str, sibling: bool) -> dict:
    key = f"sk-openkernel-fake-{secrets.token_hex(8)}"
    scratch, cache = tmp_path / "scratch", tmp_path / "cache"
    scratch.mkdir(exist_ok=True)
    cache.mkdir(exist_ok=True)
    env = dict(os.environ, HOLDER_KEY=key, OPENKERNEL_SANDBOX_GPU_SHARE=share,
               PYTHONPATH=str(PKG_ROOT), OPENKERNEL_TEST_WALK_MEMORY="0")
    other = None
    if sibling:  # not an ancestor of the walker: only the PID namespace can hide it
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", key],
                                 env=dict(os.environ, SIBLING_KEY=key))
    try:
        out = subprocess.run([sys.executable, "-c", HOLDER, str(PKG_ROOT), str(scratch),
                              str(cache), str(WALKER), key], env=env, capture_output=True, text=True,
                             timeout=900)
    finally:
        if other is not None:
            other.kill()
            other.wait()
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert "failed" not in result, result["failed"]
    return result


needs_bwrap = pytest.mark.skipif(not PROBE.ok, reason=f"bwrap cannot run here: {PROBE.reason}")


@needs_bwrap
def test_shared_pid_namespace_hides_the_ancestors_and_their_threads(tmp_path: Path) -> None:
    result = run_walk(tmp_path, "ipc,pid", sibling=False)
    assert "escape" not in result, result
    assert result["complete"] and result["named"] > 1, result  # it saw the host's processes


@needs_bwrap
def test_shared_pid_namespace_shows_other_processes(tmp_path: Path) -> None:
    result = run_walk(tmp_path, "ipc,pid", sibling=True)
    assert "found the API key in /proc/" in result.get("escape", ""), result


@needs_bwrap
def test_default_shares_no_pid_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(sandbox.GPU_SHARE_ENV, raising=False)
    assert sandbox.gpu_shared() == frozenset()
    result = run_walk(tmp_path, "", sibling=True)
    assert "escape" not in result, result
    assert result["complete"] and result["listed"] <= 3, result  # bwrap's init and the walker


def test_hidden_entries_cover_this_process_threads() -> None:
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait, daemon=True)
    t.start()
    try:
        hidden = set(sandbox._hidden_proc_entries())
        assert os.getpid() in hidden and os.getppid() in hidden
        assert threading.get_native_id() in hidden
        assert t.native_id in hidden
    finally:
        stop.set()
